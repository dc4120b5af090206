// Command bundle writes a postmortem bundle (tar.gz) for a time range
// straight from a store: the CLI twin of GET /api/v1/incidents/bundle.
//
//	bundle --store duckdb:mcplens.duckdb --from -2h --server payments -o incident.tar.gz
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcplens/mcplens/incident"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/store/duckstore"
)

type config struct {
	Store, From, To, Server, Out string
	Max                          int
}

func main() {
	var cfg config
	fs := flag.NewFlagSet("bundle", flag.ContinueOnError)
	fs.StringVar(&cfg.Store, "store", "duckdb:mcplens.duckdb", "store to read: duckdb:PATH (opened read-only)")
	fs.StringVar(&cfg.From, "from", "-1h", "start of the range: RFC 3339 or relative to now (-2h, -30m, -7d)")
	fs.StringVar(&cfg.To, "to", "now", "end of the range: RFC 3339, relative, or now")
	fs.StringVar(&cfg.Server, "server", "", "only this server (default: all)")
	fs.StringVar(&cfg.Out, "o", "-", "output file (- for stdout)")
	fs.IntVar(&cfg.Max, "max-exchanges", incident.DefaultMaxExchanges, "most exchanges in the bundle")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config, stdout io.Writer) error {
	now := time.Now().UTC()
	from, err := parseTime(cfg.From, now)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	to, err := parseTime(cfg.To, now)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	if !from.Before(to) {
		return fmt.Errorf("--from %s is not before --to %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	path, err := duckstore.ParseURL(cfg.Store)
	if err != nil {
		return err
	}
	store, err := duckstore.OpenReadOnly(ctx, path, duckstore.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	out := stdout
	if cfg.Out != "-" {
		f, err := os.Create(cfg.Out)
		if err != nil {
			return fmt.Errorf("create %s: %w", cfg.Out, err)
		}
		defer f.Close()
		out = f
	}
	return incident.Write(ctx, queries.On(store), incident.Params{From: from, To: to, Server: cfg.Server, MaxExchanges: cfg.Max}, out)
}

// parseTime reads RFC 3339, "now", or a negative offset from now such as
// -90m, -2h or -7d.
func parseTime(s string, now time.Time) (time.Time, error) {
	switch {
	case s == "now":
		return now, nil
	case strings.HasPrefix(s, "-"):
		if d, ok := strings.CutSuffix(s, "d"); ok {
			var n int
			if _, err := fmt.Sscanf(d, "-%d", &n); err != nil || n <= 0 {
				return time.Time{}, fmt.Errorf("bad relative time %q", s)
			}
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return time.Time{}, fmt.Errorf("bad relative time %q: %w", s, err)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want RFC 3339, now or -DURATION: %w", err)
	}
	return t.UTC(), nil
}
