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
	"syscall"
	"time"

	"github.com/mcplens/mcplens/incident"
	"github.com/mcplens/mcplens/internal/cli"
	"github.com/mcplens/mcplens/internal/flagenv"
	"github.com/mcplens/mcplens/internal/secret"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/store"
	"github.com/mcplens/mcplens/store/chstore"
)

type config struct {
	Store                 secret.URL
	From, To, Server, Out string
	Max                   int
	ClickHouse            chstore.Config
}

func main() {
	var cfg config
	fs := flag.NewFlagSet("bundle", flag.ContinueOnError)
	cfg.Store = "duckdb:mcplens.duckdb"
	fs.Var(&cfg.Store, "store", "store to read: duckdb:PATH (opened read-only) or clickhouse://[USER@]HOST:PORT/DB (the password from --clickhouse-password or CLICKHOUSE_PASSWORD)")
	fs.StringVar(&cfg.From, "from", "-1h", "start of the range: RFC 3339 or relative to now (-2h, -30m, -7d)")
	fs.StringVar(&cfg.To, "to", "now", "end of the range: RFC 3339, relative, or now")
	fs.StringVar(&cfg.Server, "server", "", "only this server (default: all)")
	fs.StringVar(&cfg.Out, "o", "-", "output file (- for stdout)")
	fs.IntVar(&cfg.Max, "max-exchanges", incident.DefaultMaxExchanges, "most exchanges in the bundle")
	cfg.ClickHouse.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: bundle --store STORE [--from T] [--to T] [--server NAME] -o FILE.tar.gz\n\n"+
			"Writes a postmortem bundle (tar.gz) for a time range straight from a store: README.md (counts\n"+
			"per layer, outcome and error class, failures behind HTTP 200, unknown side-effect re-sends),\n"+
			"exchanges.ndjson with the evidence of each, the redacted bodies of the failed ones, their\n"+
			"retry chains and the affected sessions' timelines. The CLI twin of GET /api/v1/incidents/bundle.\n\n"+
			"  bundle --store duckdb:mcplens.duckdb --from -2h --server payments -o incident.tar.gz\n"+
			"  bundle --store clickhouse://mcplens@ch:9000/mcplens --from 2026-12-01T14:00:00Z --to 2026-12-01T15:00:00Z -o - > x.tar.gz\n\n"+
			flagenv.Usage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	cli.ParseFlags(fs, os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	now := time.Now().UTC()
	from, err := queries.ParseTime(cfg.From, now)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	to, err := queries.ParseTime(cfg.To, now)
	if err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	if !from.Before(to) {
		return fmt.Errorf("--from %s is not before --to %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	}
	st, err := store.Open(ctx, cfg.Store, store.Options{ReadOnly: true, ClickHouse: cfg.ClickHouse})
	if err != nil {
		return err
	}
	defer st.Close()
	out := stdout
	if cfg.Out == "-" && cli.IsTerminal(stdout) {
		return errors.New("refusing to write a gzip archive to a terminal: give -o incident.tar.gz, or redirect stdout")
	}
	if cfg.Out != "-" {
		f, err := os.Create(cfg.Out)
		if err != nil {
			return fmt.Errorf("create %s: %w", cfg.Out, err)
		}
		defer f.Close()
		out = f
	}
	sum, err := incident.WriteSummary(ctx, queries.On(st), incident.Params{From: from, To: to, Server: cfg.Server, MaxExchanges: cfg.Max}, out)
	if err != nil {
		return err
	}
	where := cfg.Out
	if where == "-" {
		where = "stdout"
	}
	span := from.Format(time.RFC3339) + " to " + to.Format(time.RFC3339)
	if cfg.Server != "" {
		span += " for server " + cfg.Server
	}
	fmt.Fprintf(stderr, "bundle: wrote %s: %d exchanges, %d sessions, %s\n", where, sum.Exchanges, sum.Sessions, span)
	if sum.Truncated {
		fmt.Fprintf(stderr, "bundle: the range holds more than %d exchanges; the bundle has the first (--max-exchanges)\n", cfg.Max)
	}
	if sum.Exchanges == 0 {
		fmt.Fprintln(stderr, "bundle: nothing matched: check the range (--from/--to are UTC; relative ones count back from now) and the server name (GET /api/v1/servers lists them)")
	}
	return nil
}
