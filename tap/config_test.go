package tap_test

import (
	"flag"
	"testing"

	"github.com/mcplens/mcplens/tap"
)

func TestConfigFlags(t *testing.T) {
	var cfg tap.Config
	fs := flag.NewFlagSet("tap", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse([]string{"-tap.observer=gw-2", "-tap.server=billing", "-tap.max-body-bytes=-3"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Observer != "gw-2" || cfg.Server != "billing" || cfg.MaxBodyBytes != -3 {
		t.Errorf("parsed %+v", cfg)
	}
	if err := cfg.Validate(); err == nil {
		t.Error("negative max-body-bytes accepted")
	}
}
