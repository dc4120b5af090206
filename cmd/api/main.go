// Command api serves mcplens' REST API over a DuckDB file or ClickHouse:
// the headline questions, breakdowns, leaderboards, exchange search and
// detail, session timelines, /metrics, /healthz, /readyz and the OpenAPI
// document at /openapi.json.
//
//	api --store duckdb:mcplens.duckdb --tokens-file tokens.txt
//	api --store clickhouse://127.0.0.1:9000/mcplens --listen 0.0.0.0:8080
//	api --dev   # no authentication, for a local demo
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/mcplens/mcplens/internal/cli"
	"github.com/mcplens/mcplens/internal/logging"
)

func main() {
	var cfg config
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	fs.Usage = func() { usage(fs) }
	cli.ParseFlags(fs, os.Args[1:])
	logger := logging.New(os.Stderr, cfg.LogLevel, cfg.LogFormat, "api")
	logging.CaptureStdlib(logger)
	cli.Validate(logger, cfg.Validate())
	tokens, err := loadTokens(cfg.TokensFile, os.Getenv("MCPLENS_TOKENS"))
	if err != nil {
		logger.Error().Err(err).Msg("invalid tokens")
		os.Exit(2)
	}
	cli.Run(logger, "api", func(ctx context.Context) error { return run(ctx, cfg, deps{Logger: logger, Tokens: tokens}) })
}

func usage(fs *flag.FlagSet) {
	fmt.Fprintf(fs.Output(), `Usage: api [--store duckdb:PATH | --store clickhouse://HOST:PORT/DB] [flags]

Serves the mcplens REST API under /api/v1 (GET /openapi.json describes it),
plus /metrics, /healthz and /readyz.

Every /api/v1 request needs "Authorization: Bearer TOKEN". Tokens come from
--tokens-file and from the environment variable MCPLENS_TOKENS (entries
separated by ';'), one per line in either form:

  sha256:HEX scopes=read,bodies name=oncall   # the SHA-256 of the token (preferred)
  TOKEN scopes=read name=dashboard            # the token itself, >= 16 characters

Scope read answers every endpoint; bodies adds recorded headers and bodies
to /api/v1/exchanges/{id}. A name is at most 64 printable characters
without quotes or backslashes. Only hashes are kept in memory, and errors
about the file never show a token. --dev runs
without authentication, for a local demo only.

A DuckDB file is opened read-only (another process may not write it
meanwhile); --migrate opens it read-write, creating and migrating it.

Every flag can also be set by the environment variable MCPLENS_<FLAG>
(upper case, '-' as '_'), e.g. MCPLENS_STORE; a flag on the command line wins.

Flags:
`)
	fs.PrintDefaults()
}
