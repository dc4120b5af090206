package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/internal/flagenv"
	"github.com/mcplens/mcplens/internal/secret"
	"github.com/mcplens/mcplens/store"
	"github.com/mcplens/mcplens/store/chstore"
	"github.com/mcplens/mcplens/store/duckstore"
)

// config is everything api is told by flags or environment.
type config struct {
	Store           secret.URL
	Listen          string
	Migrate         bool
	TokensFile      string
	LogLevel        string
	LogFormat       string
	ShutdownTimeout time.Duration
	API             api.Config
	ClickHouse      chstore.Config
	// DuckDBThreads and DuckDBMemoryLimit are DuckDB's threads (0: its
	// default, one per core) and memory_limit for a duckdb: store.
	DuckDBThreads     int
	DuckDBMemoryLimit string
}

// RegisterFlags registers every flag with its default and help text.
func (c *config) RegisterFlags(fs *flag.FlagSet) {
	c.Store = "duckdb:mcplens.duckdb"
	fs.Var(&c.Store, "store", "store to read: duckdb:PATH or clickhouse://[USER@]HOST:PORT/DB (the password from --clickhouse-password or CLICKHOUSE_PASSWORD; one in the URL is never logged)")
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8080", "address to serve the API, /metrics, /healthz and /readyz on")
	fs.BoolVar(&c.Migrate, "migrate", false, "apply the store's schema migrations at start (DuckDB: open read-write, creating the file if needed)")
	fs.StringVar(&c.TokensFile, "tokens-file", "", "file of bearer tokens, one per line: 'sha256:HEX scopes=read[,bodies] name=NAME' or 'TOKEN scopes=... name=...'")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", "json", "log format: json or console")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "on SIGTERM, how long in-flight requests may take to finish")
	fs.IntVar(&c.DuckDBThreads, "duckdb-threads", 0, "DuckDB worker threads of a duckdb: store, which its queries use; 0: DuckDB's default, one per core")
	fs.StringVar(&c.DuckDBMemoryLimit, "duckdb-memory-limit", duckstore.ServingMemoryLimit, "DuckDB's memory limit of a duckdb: store (e.g. 512MB, 2GiB): past it DuckDB drops cached blocks of the file; empty: DuckDB's own default, 80% of the memory, where a long-running server's RSS grows with the file its queries read")
	c.API.RegisterFlags(fs)
	c.ClickHouse.RegisterFlags(fs)
}

// duckDBOptions are the DuckDB settings of a duckdb: store.
func (c *config) duckDBOptions() duckstore.Options {
	return duckstore.Options{Threads: c.DuckDBThreads, MemoryLimit: c.DuckDBMemoryLimit}
}

// Validate reports every invalid setting.
func (c *config) Validate() error {
	var errs []error
	if !store.Is(c.Store.Reveal()) {
		errs = append(errs, fmt.Errorf("--store %s: %w", c.Store, store.ErrScheme))
	}
	if c.Listen == "" {
		errs = append(errs, errors.New("--listen is required"))
	}
	if c.LogFormat != "json" && c.LogFormat != "console" {
		errs = append(errs, fmt.Errorf("--log-format %q: want json or console", c.LogFormat))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout %s: want > 0", c.ShutdownTimeout))
	}
	if c.DuckDBThreads < 0 {
		errs = append(errs, fmt.Errorf("--duckdb-threads %d: want 0 (automatic) or more", c.DuckDBThreads))
	}
	if err := duckstore.CheckMemoryLimit(c.DuckDBMemoryLimit); err != nil {
		errs = append(errs, fmt.Errorf("--duckdb-memory-limit: %w", err))
	}
	if err := c.API.Validate(); err != nil {
		errs = append(errs, err)
	}
	if strings.HasPrefix(c.Store.Reveal(), "clickhouse://") {
		if err := c.ClickHouse.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// parseFlags applies MCPLENS_* environment variables, then args.
func parseFlags(fs *flag.FlagSet, args []string) error { return flagenv.Parse(fs, args) }

// loadTokens reads the tokens file (if any) and the MCPLENS_TOKENS list.
func loadTokens(file, env string) (*api.Tokens, error) { return api.LoadTokens(file, env) }
