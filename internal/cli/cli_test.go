package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestExitCodes(t *testing.T) {
	var code int
	exit = func(c int) { code = c }
	defer func() { exit = osExit }()
	newFS := func(out *bytes.Buffer) *flag.FlagSet {
		fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
		fs.SetOutput(out)
		fs.Int("batch-size", 1, "")
		return fs
	}
	var out bytes.Buffer
	code = -1
	ParseFlags(newFS(&out), []string{"--help"})
	if code != 0 {
		t.Errorf("--help exit %d, want 0", code)
	}
	code = -1
	out.Reset()
	ParseFlags(newFS(&out), []string{"--batch-size", "many"})
	if code != 2 || out.String() != "ingest: --batch-size \"many\": want a whole number, such as 100\n" {
		t.Errorf("bad flag: exit %d, output %q", code, out.String())
	}
	code = -1
	ParseFlags(newFS(&out), []string{"--batch-size", "3"})
	if code != -1 {
		t.Errorf("good flags exited %d", code)
	}
	var logs bytes.Buffer
	log := zerolog.New(&logs)
	code = -1
	Validate(log, errors.New("--to is required"))
	if code != 2 || !strings.Contains(logs.String(), "invalid configuration") {
		t.Errorf("Validate: exit %d, log %s", code, logs.String())
	}
	code = -1
	Run(log, "ingest", func(ctx context.Context) error { return errors.New("boom") })
	if code != 1 || !strings.Contains(logs.String(), "ingest failed") {
		t.Errorf("Run failure: exit %d, log %s", code, logs.String())
	}
	code = -1
	Run(log, "ingest", func(ctx context.Context) error { return ctx.Err() })
	if code != -1 {
		t.Errorf("Run success exited %d", code)
	}
}
