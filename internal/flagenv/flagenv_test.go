package flagenv

import (
	"flag"
	"testing"
)

func TestParse(t *testing.T) {
	t.Setenv("MCPLENS_PAIR_WINDOW", "7")
	t.Setenv("MCPLENS_TAP_SERVER", "env-server")
	t.Setenv("MCPLENS_LISTEN", "env")
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	pw := fs.Int("pair-window", 1, "")
	srv := fs.String("tap.server", "", "")
	listen := fs.String("listen", "", "")
	if err := Parse(fs, []string{"--listen", "flag"}); err != nil {
		t.Fatal(err)
	}
	if *pw != 7 || *srv != "env-server" || *listen != "flag" {
		t.Errorf("pair-window %d, tap.server %q, listen %q", *pw, *srv, *listen)
	}
	t.Setenv("MCPLENS_PAIR_WINDOW", "seven")
	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Int("pair-window", 1, "")
	if err := Parse(fs, nil); err == nil {
		t.Error("bad environment value accepted")
	}
}
