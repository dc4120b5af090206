// Command demo shows mcplens end to end on real MCP traffic, in one
// command: an official Go SDK MCP server behind cmd/tap, a real SDK client
// driven through normal calls and faults, ingest into DuckDB (through a
// Kafka broker of the demo's own, on a free port, else from the tap's
// file), cmd/api on top, and the answers to the headline questions. With
// --store clickhouse the store is a ClickHouse server of the demo's own.
//
//	make demo                   # builds bin/ and runs bin/demo
//	make demo STORE=clickhouse  # the same into a ClickHouse server
//	bin/demo --keep             # leave the API running afterwards
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mcplens/mcplens/internal/cli"
	"github.com/mcplens/mcplens/internal/demo"
	"github.com/mcplens/mcplens/internal/secret"
)

type config struct {
	Bin      string
	Workdir  string
	Kafka    string
	Script   string
	Store    string
	CHScript string
	Keep     bool
	Listen   string
}

func main() {
	var cfg config
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.StringVar(&cfg.Bin, "bin", "bin", "directory holding the tap, ingest and api binaries (make build)")
	fs.StringVar(&cfg.Workdir, "workdir", "", "directory for the recorded events and the DuckDB file (default: a new temporary directory)")
	fs.StringVar(&cfg.Kafka, "kafka", "own", "Kafka for the tap and ingest: own (start a broker of the demo's own on a free port with --kafka-script, stopped at the end; a file if it cannot start), off (a file, no Kafka), or HOST:PORT of a broker to use")
	fs.StringVar(&cfg.Script, "kafka-script", filepath.Join("deploy", "kafka", "kafka.sh"), "the script that runs the demo's own broker (--kafka own)")
	fs.StringVar(&cfg.Store, "store", "duckdb", "store to ingest into: duckdb (a file in the workdir) or clickhouse (a ClickHouse server of the demo's own on free ports, started with --clickhouse-script and stopped at the end)")
	fs.StringVar(&cfg.CHScript, "clickhouse-script", filepath.Join("deploy", "clickhouse", "clickhouse.sh"), "the script that runs the demo's own ClickHouse server (--store clickhouse)")
	fs.BoolVar(&cfg.Keep, "keep", false, "leave the API running (until Ctrl-C) instead of exiting after the answers")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "address for the API")
	cli.ParseFlags(fs, os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	fmt.Printf("\ndemo finished in %s\n", time.Since(start).Round(100*time.Millisecond))
}

// firstLine is an error's first line, for a one-line notice.
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

func say(format string, args ...any) { fmt.Printf(format+"\n", args...) }

func run(ctx context.Context, cfg config) error {
	if cfg.Store != "duckdb" && cfg.Store != "clickhouse" {
		return fmt.Errorf("--store %q: want duckdb or clickhouse", cfg.Store)
	}
	if cfg.Workdir == "" {
		dir, err := os.MkdirTemp("", "mcplens-demo-")
		if err != nil {
			return fmt.Errorf("make workdir: %w", err)
		}
		cfg.Workdir = dir
	}
	if err := os.MkdirAll(cfg.Workdir, 0o755); err != nil {
		return fmt.Errorf("make workdir: %w", err)
	}
	procs := &processes{bin: cfg.Bin, logDir: cfg.Workdir}
	defer procs.stopAll()

	mcpURL, stopMCP, err := demo.StartMCPServer()
	if err != nil {
		return err
	}
	defer stopMCP()
	say("1. official Go SDK MCP server (lookup, delete_item, always_fails, count_slowly, approve) on %s", mcpURL)

	brokers := ""
	switch cfg.Kafka {
	case "off":
	case "own":
		say("   starting a Kafka broker of the demo's own (the first run fetches Kafka with Maven: a minute or two)")
		b, err := startBroker(ctx, cfg.Script, cfg.Workdir)
		if err != nil {
			say("   no broker of its own (%s); the tap writes a file instead", firstLine(err))
			break
		}
		defer func() {
			if err := b.stop(); err != nil {
				say("demo: %v", err)
			}
		}()
		brokers = b.addr
	default:
		brokers = cfg.Kafka
	}
	db := filepath.Join(cfg.Workdir, "mcplens.duckdb")
	store, shown := "duckdb:"+db, "duckdb:"+db
	if cfg.Store == "clickhouse" {
		say("   starting a ClickHouse server of the demo's own (the first run pip-installs chdb-core: a minute or two)")
		ch, err := startClickHouse(ctx, cfg.CHScript, cfg.Workdir)
		if err != nil {
			return err
		}
		defer func() {
			if err := ch.stop(); err != nil {
				say("demo: %v", err)
			}
		}()
		store, shown = ch.dsn, secret.MaskURL(ch.dsn)
	}
	events := filepath.Join(cfg.Workdir, "events.ndjson")
	to, from := "file:"+events, "file:"+events
	if brokers != "" {
		topic := fmt.Sprintf("mcplens-demo-%d", time.Now().Unix())
		to = "kafka://" + brokers + "/" + topic
		from = to + "?group=mcplens-demo&start=first"
		say("2. tap records every exchange to Kafka %s, topic %s", brokers, topic)
	} else {
		say("2. tap records every exchange to %s (no Kafka broker answered)", events)
	}
	tapAddr, err := freeAddr()
	if err != nil {
		return err
	}
	tap, err := procs.start(ctx, "tap", "--upstream", mcpURL, "--listen", tapAddr, "--to", to, "--tap.server", "demo-tools", "--tap.observer", "demo-tap")
	if err != nil {
		return err
	}
	if err := waitTCP(ctx, tapAddr, 10*time.Second); err != nil {
		return fmt.Errorf("tap did not start: %w (log: %s)", err, tap.logPath)
	}

	say("3. a real SDK client (protocol 2026-07-28) calls the tools through the tap:")
	if err := demo.Drive(ctx, "http://"+tapAddr, say); err != nil {
		return err
	}
	if err := tap.stop(); err != nil {
		return fmt.Errorf("stop tap: %w", err)
	}

	say("4. ingest '%s' -> %s", from, shown)
	if err := ingest(ctx, procs, from, store, brokers != ""); err != nil {
		return err
	}

	say("5. api on http://%s (--dev: no token needed for this local demo)", cfg.Listen)
	api, err := procs.start(ctx, "api", "--store", store, "--listen", cfg.Listen, "--dev")
	if err != nil {
		return err
	}
	base := "http://" + cfg.Listen
	if err := waitHTTP(ctx, base+"/readyz", 20*time.Second); err != nil {
		return fmt.Errorf("api did not become ready: %w (log: %s)", err, api.logPath)
	}
	if err := answers(ctx, base, say); err != nil {
		return err
	}
	if !cfg.Keep {
		say("\nthe demo stops the API now; run `bin/demo --keep` to keep it up and explore it")
		return nil
	}
	explore(base, shown, say)
	say("\nthe web view: %s/ (the API keeps running; Ctrl-C stops it)", base)
	<-ctx.Done()
	return nil
}
