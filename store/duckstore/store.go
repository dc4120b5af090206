// Package duckstore is mcplens' embedded store: one DuckDB file that holds
// the same tables as the ClickHouse schema (schema/duckdb), written by the
// ingest pipeline through the Appender and queried with the questions of
// package queries rendered for DuckDB.
//
// Duplicates are ignored by key: exchange_id (exchanges, bodies), position
// (quarantine), and (server, tool) keeps the newest annotations, so
// writing a batch twice stores it once and answers do not change.
//
// # One file, two programs
//
// DuckDB lets one process write a file; other processes may open it only
// read-only and only while no process writes it. So:
//
//   - Single process (the recommended mode): the program that ingests also
//     serves the API from the same *Store. A Store is safe for concurrent
//     use: Write (one goroutine, the pipeline) runs beside any number of
//     queries, which read a consistent snapshot (DuckDB's MVCC).
//   - Separate processes: [OpenReadOnly] opens the file read-only, for an
//     API process over a file no ingester is writing (a finished batch
//     import, or an ingester that runs periodically with --from file:).
//     While a writer holds the file, OpenReadOnly retries until its
//     context ends and then returns an error wrapping ErrLocked.
package duckstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
)

// Options tune a store. The zero value is usable.
type Options struct {
	// Threads bounds DuckDB's worker threads; 0 lets DuckDB choose (one
	// per core).
	Threads int
	// MemoryLimit is DuckDB's memory_limit ("4GB"); "" keeps its default
	// (80% of RAM).
	MemoryLimit string
	// CheckpointThreshold is the write-ahead log size that makes DuckDB
	// checkpoint; default DefaultCheckpointThreshold (DuckDB's own is
	// 16MB). A checkpoint blocks the writer while it runs; a larger
	// threshold makes a restart replay more log.
	CheckpointThreshold string
	// RowGroupSize is the rows of a DuckDB row group in tables this store
	// writes, a multiple of 2048; default DefaultRowGroupSize (DuckDB's
	// own is 122,880). Every checkpoint rewrites each table's last, partly
	// filled row group, so its cost grows with the row group: at DuckDB's
	// size a checkpoint during a steady stream of 5,000-row batches took
	// up to 3 s and the write rate fell by half as the threshold shrank.
	// It applies to rows written from this open on; a file written with
	// another size stays readable.
	RowGroupSize int
	// Retention and BodyRetention, when positive, make Write delete
	// exchanges (and quarantine rows) and bodies older than that, relative
	// to the newest stored exchange, at most once per PruneEvery (default
	// 1h). ClickHouse does the same with TTLs.
	Retention, BodyRetention time.Duration
	PruneEvery               time.Duration
	// Logger receives write and prune events; the zero Logger discards.
	Logger zerolog.Logger
}

// Defaults of Options.
const (
	DefaultCheckpointThreshold = "256MB"
	DefaultRowGroupSize        = 16384
)

// WriterOptions are the settings of a store that a process only writes
// (ingest without --api-listen, and the write benchmarks): one thread and
// a memory limit of 512MB, where DuckDB's defaults are a thread per core
// and 80% of the machine's memory.
//
// A write is one transaction at a time on one connection. There, a pool
// of two threads spent 10-40% more CPU on the same writes than one
// thread, for the same wall time on two cores and 30-40% more on one.
// DuckDB's memory default is a cache that kept every block written: the
// writer's RSS grew with its file (2.2 GB after 1.1M exchanges, and on),
// where at 512MB it stayed near 1 GB at the same speed; a write larger
// than the limit still succeeded (a 350 MB batch under 256MB; README,
// "DuckDB's threads and memory").
func WriterOptions() Options {
	return Options{Threads: 1, MemoryLimit: "512MB"}
}

// ServingMemoryLimit is the memory limit of a store one process both
// writes and queries (ingest --api-listen): DuckDB's own default, 80% of
// the machine, let the cache grow with the file for as long as the
// process ran. The 16 questions of BenchmarkQuestions took the same time
// over a 4.5 GB file (1.15M exchanges with their bodies) with 512MB as
// without a limit; this is twice that, so that queries have the
// writer's room again beside it. DuckDB's threads stay at its default
// there, a thread per core, for the queries.
const ServingMemoryLimit = "1GB"

// memoryLimit is a size DuckDB's memory_limit takes: a number and a unit.
// The value goes into DuckDB's DSN as written, so nothing else passes.
var memoryLimit = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$`)

// CheckMemoryLimit reports whether s is a memory limit DuckDB takes ("" is
// its default): a number and a unit, as 512MB or 1.5GiB.
func CheckMemoryLimit(s string) error {
	if s != "" && !memoryLimit.MatchString(s) {
		return fmt.Errorf("memory limit %q: want a number and a unit, B, KB, MB, GB, TB, KiB, MiB, GiB or TiB (e.g. 512MB)", s)
	}
	return nil
}

// fileCatalog is the name the store's file is attached under.
const fileCatalog = "mcplens"

// sqlString quotes s as an SQL string literal (ATTACH takes no
// parameters).
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Store is one DuckDB file: an ingest sink and a queries.Store. It is
// safe for concurrent use; writes are serialized.
type Store struct {
	*queries.Questions

	db        *sql.DB
	connector *duckdb.Connector
	path      string
	readOnly  bool
	opts      Options

	mu        sync.Mutex // serializes writes; guards the fields below
	w         *writer
	lastPrune time.Time
}

// ErrLocked is wrapped by OpenReadOnly's error when another process holds
// the file for writing.
var ErrLocked = errors.New("duckdb file is locked by a writer")

// ParseURL returns the path of a "duckdb:PATH" sink URL.
func ParseURL(raw string) (string, error) {
	path, ok := strings.CutPrefix(raw, "duckdb:")
	if !ok || path == "" {
		return "", fmt.Errorf("duckdb sink %q: want duckdb:PATH", raw)
	}
	return path, nil
}

// Open opens (creating if needed) the DuckDB file at path for reading and
// writing, and brings its schema up to date.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	s, err := open(ctx, path, false, opts)
	if err != nil {
		return nil, err
	}
	if _, err := schema.ApplyDuckDB(ctx, s.db); err != nil {
		return nil, errors.Join(fmt.Errorf("migrate %q: %w", path, err), s.Close())
	}
	return s, nil
}

// OpenReadOnly opens an existing DuckDB file read-only, for queries only
// (Write fails). While another process writes the file, it retries every
// 500ms until ctx ends, then returns an error wrapping ErrLocked.
func OpenReadOnly(ctx context.Context, path string, opts Options) (*Store, error) {
	var locked error // the last attempt's lock error
	for {
		s, err := open(ctx, path, true, opts)
		if err == nil {
			return s, nil
		}
		if ctx.Err() != nil && locked != nil {
			// An attempt cut short by ctx after one found the lock: the
			// file is still taken, as far as anyone knows.
			return nil, fmt.Errorf("open %q read-only: %w: %w", path, ErrLocked, locked)
		}
		if !isLockError(err) {
			return nil, err
		}
		locked = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("open %q read-only: %w: %w", path, ErrLocked, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func isLockError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Could not set lock") || strings.Contains(msg, "Conflicting lock")
}

func open(ctx context.Context, path string, readOnly bool, opts Options) (*Store, error) {
	var params []string
	if opts.Threads > 0 {
		params = append(params, fmt.Sprintf("threads=%d", opts.Threads))
	}
	if err := CheckMemoryLimit(opts.MemoryLimit); err != nil {
		return nil, fmt.Errorf("open duckdb %q: %w", path, err)
	}
	if opts.MemoryLimit != "" {
		params = append(params, "memory_limit="+opts.MemoryLimit)
	}
	if !readOnly {
		if opts.CheckpointThreshold == "" {
			opts.CheckpointThreshold = DefaultCheckpointThreshold
		}
		params = append(params, "checkpoint_threshold="+opts.CheckpointThreshold)
	}
	if opts.RowGroupSize == 0 {
		opts.RowGroupSize = DefaultRowGroupSize
	}
	if opts.RowGroupSize < 2048 || opts.RowGroupSize%2048 != 0 {
		return nil, fmt.Errorf("open duckdb %q: row group size %d: want a positive multiple of 2048", path, opts.RowGroupSize)
	}
	// The file is attached to an in-memory database rather than opened as
	// the main one, because only ATTACH takes the row group size; every
	// connection of the pool attaches it (once) and makes it its default.
	option := fmt.Sprintf("ROW_GROUP_SIZE %d", opts.RowGroupSize)
	if readOnly {
		option = "READ_ONLY"
	}
	attach := fmt.Sprintf("ATTACH IF NOT EXISTS %s AS %s (%s)", sqlString(path), fileCatalog, option)
	dsn := ""
	if len(params) > 0 {
		dsn = "?" + strings.Join(params, "&")
	}
	// Connections are opened long after ctx (of the open) may have ended.
	initCtx := context.WithoutCancel(ctx)
	connector, err := duckdb.NewConnector(dsn, func(conn driver.ExecerContext) error {
		for _, stmt := range []string{attach, "USE " + fileCatalog} {
			if _, err := conn.ExecContext(initCtx, stmt, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("open duckdb %q: %w", path, err)
	}
	db := sql.OpenDB(connector)
	if err := db.PingContext(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("open duckdb %q: %w", path, err), db.Close(), connector.Close())
	}
	if opts.PruneEvery <= 0 {
		opts.PruneEvery = time.Hour
	}
	s := &Store{db: db, connector: connector, path: path, readOnly: readOnly, opts: opts}
	s.Questions = queries.On(s)
	return s, nil
}

var (
	_ queries.Store  = (*Store)(nil)
	_ queries.Engine = (*Store)(nil)
)

// DB returns the underlying database, for tests and tools.
func (s *Store) DB() *sql.DB { return s.db }

// Close releases the writer connection and closes the file.
// CopiesBatches marks Store a [pipeline.Copier]: the Appender copies
// every value into DuckDB before Write returns.
func (s *Store) CopiesBatches() {}

func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.w != nil {
		errs = append(errs, s.w.close())
		s.w = nil
	}
	errs = append(errs, s.db.Close(), s.connector.Close())
	return errors.Join(errs...)
}

// Seed returns the exchanges stored within window of the newest one and
// the latest tool annotations, for the ingest engine to seed after a restart.
func (s *Store) Seed(ctx context.Context, window time.Duration) ([]schema.Exchange, []schema.ToolAnnotation, error) {
	return s.ChainWindow(ctx, window)
}
