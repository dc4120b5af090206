// Command ingest reads contract-v1 MCP log events from a file or Kafka,
// correlates and classifies them, and writes exchange records to stdout, a
// file or a store.
//
//	ingest --from file:logs.ndjson --to stdout
//	ingest --from kafka://127.0.0.1:9092/mcp-logs?group=mcplens --to duckdb:mcplens.duckdb
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcplens/mcplens/internal/flagenv"
	"github.com/mcplens/mcplens/internal/logging"
)

func main() {
	var cfg config
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: ingest --from SOURCE --to SINK [flags]\n\n"+
			"Reads contract-v1 MCP log events, pairs requests with responses, classifies every\n"+
			"exchange and writes exchange records.\n\n"+flagenv.Usage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := flagenv.Parse(fs, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "ingest:", err)
		os.Exit(2)
	}
	logger := logging.New(os.Stderr, cfg.LogLevel, cfg.LogFormat, "ingest")
	if err := cfg.Validate(); err != nil {
		logger.Error().Err(err).Msg("invalid configuration")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, logger); err != nil {
		logger.Error().Err(err).Msg("ingest failed")
		os.Exit(1)
	}
}
