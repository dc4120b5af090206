// Package store opens the store a URL names: duckdb:PATH (the embedded
// default) or clickhouse://HOST:PORT/DB (production). It is the one place
// where ingest, api and bundle turn a --to or --store URL into a store, so
// they agree on what a URL means, where credentials come from and how a
// URL is logged (never with its password: secret.URL).
package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/secret"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore"
	"github.com/mcplens/mcplens/store/duckstore"
)

// Store is an open store: questions are asked of it (queries.Engine), the
// ingest pipeline writes batches to it, and a restarted ingester seeds its
// retry chains and tool annotations from it.
type Store interface {
	queries.Engine
	// Write stores a batch; nil means it is durable.
	Write(ctx context.Context, b *schema.Batch) error
	// Seed returns the exchanges of the last window and the known tool
	// annotations.
	Seed(ctx context.Context, window time.Duration) ([]schema.Exchange, []schema.ToolAnnotation, error)
	Close() error
}

// Options say how to open a store. The zero value opens read-write with
// default settings and no logging.
type Options struct {
	// ReadOnly opens for reading only, as api and bundle do. A DuckDB file
	// must then exist; opening waits up to ReadOnlyWait for a writer to let
	// go of it.
	ReadOnly bool
	// ReadOnlyWait bounds that wait. Default 30s.
	ReadOnlyWait time.Duration
	// Migrate applies the schema migrations. DuckDB opened read-write
	// always migrates; with ReadOnly and Migrate it is opened read-write
	// (creating an empty store if the file is missing).
	Migrate bool
	// Schema are the ClickHouse migration options (database, TTLs,
	// cluster); DB "" means the DSN's database.
	Schema schema.Options
	// ClickHouse is the ClickHouse connection and insert configuration.
	ClickHouse chstore.Config
	// DuckDB is the DuckDB configuration (threads, memory limit).
	DuckDB duckstore.Options

	Logger     zerolog.Logger
	Registerer prometheus.Registerer
}

// ErrScheme is wrapped by Open's error for a URL that names no store.
var ErrScheme = errors.New("want duckdb:PATH or clickhouse://[USER@]HOST:PORT/DB")

// Is reports whether raw names a store (rather than, for ingest, stdout
// or a file).
func Is(raw string) bool {
	return strings.HasPrefix(raw, "duckdb:") || strings.HasPrefix(raw, "clickhouse://")
}

// Open opens the store raw names.
func Open(ctx context.Context, raw secret.URL, opts Options) (Store, error) {
	if opts.ReadOnlyWait <= 0 {
		opts.ReadOnlyWait = 30 * time.Second
	}
	u := raw.Reveal()
	switch {
	case strings.HasPrefix(u, "duckdb:"):
		return openDuckDB(ctx, u, opts)
	case strings.HasPrefix(u, "clickhouse://"):
		return openClickHouse(ctx, u, opts)
	}
	return nil, fmt.Errorf("store %s: %w", raw, ErrScheme)
}

func openDuckDB(ctx context.Context, u string, opts Options) (Store, error) {
	path, err := duckstore.ParseURL(u)
	if err != nil {
		return nil, err
	}
	dopts := opts.DuckDB
	dopts.Logger = opts.Logger
	readWrite := !opts.ReadOnly || opts.Migrate
	mode := "read-write (migrations applied on open)"
	if !readWrite {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("duckdb file %q: %w (ingest into it first, or pass --migrate to create an empty store)", path, err)
		}
		mode = "read-only"
	}
	opts.Logger.Info().Str("path", path).Int("threads", dopts.Threads).Str("memory_limit", dopts.MemoryLimit).
		Msg("opening DuckDB " + mode + " (threads 0: one per core, memory_limit empty: 80% of the memory)")
	if readWrite {
		return duckstore.Open(ctx, path, dopts)
	}
	octx, cancel := context.WithTimeout(ctx, opts.ReadOnlyWait)
	defer cancel()
	return duckstore.OpenReadOnly(octx, path, dopts)
}

func openClickHouse(ctx context.Context, u string, opts Options) (Store, error) {
	s, err := chstore.Open(ctx, u, opts.ClickHouse, opts.Logger, opts.Registerer)
	if err != nil {
		return nil, err
	}
	if opts.Migrate {
		if err := s.Migrate(ctx, opts.Schema); err != nil {
			return nil, errors.Join(fmt.Errorf("migrate: %w", err), s.Close())
		}
	}
	return s, nil
}
