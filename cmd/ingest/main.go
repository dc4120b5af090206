// Command ingest reads contract-v1 MCP log events from a file or Kafka,
// correlates and classifies them, and writes exchange records to stdout, a
// file or a store.
//
//	ingest --from file:logs.ndjson --to stdout
//	ingest --from kafka://127.0.0.1:9092/mcp-logs?group=mcplens --to duckdb:mcplens.duckdb
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/mcplens/mcplens/internal/cli"
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
	cli.ParseFlags(fs, os.Args[1:])
	logger := logging.New(os.Stderr, cfg.LogLevel, cfg.LogFormat, "ingest")
	logging.CaptureStdlib(logger)
	cli.Validate(logger, cfg.Validate())
	cli.Run(logger, "ingest", func(ctx context.Context) error { return run(ctx, cfg, logger) })
}
