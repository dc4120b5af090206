package flagenv

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

// TestErrorsNameTheForm: a bad value names the flag and the form it wants,
// and prints no usage text; --help still prints it.
func TestErrorsNameTheForm(t *testing.T) {
	newFS := func(out *bytes.Buffer) *flag.FlagSet {
		fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
		fs.SetOutput(out)
		fs.Usage = func() { out.WriteString("Usage: ingest [flags]\n") }
		fs.Duration("pair-window", time.Minute, "")
		fs.Int("batch-size", 1, "")
		fs.Float64("share", 0.5, "")
		fs.Bool("migrate", false, "")
		fs.Func("redact-pattern", "", func(s string) error { return errors.New("bad pattern " + s) })
		return fs
	}
	f := func(args []string, want string) {
		t.Helper()
		var out bytes.Buffer
		err := Parse(newFS(&out), args)
		if err == nil || err.Error() != want {
			t.Errorf("Parse(%q) = %v, want %q", args, err, want)
		}
		if out.Len() > 0 {
			t.Errorf("Parse(%q) printed %q: a bad flag prints no usage", args, out.String())
		}
	}
	f([]string{"--pair-window", "5"}, `--pair-window "5": want a duration with a unit, such as 500ms, 30s, 5m or 1h`)
	f([]string{"--pair-window=1 minute"}, `--pair-window "1 minute": want a duration with a unit, such as 500ms, 30s, 5m or 1h`)
	f([]string{"--batch-size", "1e3"}, `--batch-size "1e3": want a whole number, such as 100`)
	f([]string{"--share", "half"}, `--share "half": want a number, such as 0.5`)
	f([]string{"--migrate=yes"}, `--migrate "yes": want true or false`)
	f([]string{"--redact-pattern", "x"}, `--redact-pattern "x": bad pattern x`)
	f([]string{"--nope"}, `unknown flag --nope (--help lists every flag)`)
	f([]string{"--batch-size"}, `--batch-size needs a value (--help says which)`)

	t.Setenv("MCPLENS_PAIR_WINDOW", "30")
	f(nil, `MCPLENS_PAIR_WINDOW "30": want a duration with a unit, such as 500ms, 30s, 5m or 1h`)

	t.Setenv("MCPLENS_PAIR_WINDOW", "30s")
	var out bytes.Buffer
	if err := Parse(newFS(&out), []string{"--help"}); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "Usage: ingest") {
		t.Errorf("--help: %v, printed %q", err, out.String())
	}
}
