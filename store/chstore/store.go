// Package chstore is mcplens' production store: a ClickHouse sink for the
// ingest pipeline (native protocol, LZ4, columnar inserts with a
// deduplication token per batch, retries on transient errors) and a
// queries.Engine that runs the questions of package queries as written,
// with server-side parameters.
//
// Batching by size and time is the pipeline's (--batch-size, default
// 10,000 rows; --flush-interval, default 1s): the sink sends each batch it
// is handed at once, split into INSERTs of at most MaxInsertRows, and keeps
// no rows between writes. So its memory is bounded by one batch, and Write
// returning nil always means committed, which is what lets the pipeline
// commit its source offsets.
//
// The tables are created by schema.Apply (`--migrate`). Reads deduplicate
// with LIMIT 1 BY exchange_id (the queries do), never FINAL.
package chstore

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/secret"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
)

// Store is a ClickHouse database: an ingest sink and a queries.Store.
// Safe for concurrent use (the driver pools connections); Write is called
// by one goroutine, the pipeline.
type Store struct {
	*queries.Questions

	conn   driver.Conn
	cfg    Config
	db     string
	log    zerolog.Logger
	m      *metrics
	sleep  func(context.Context, time.Duration) error
	insert func(ctx context.Context, table string, cols []string, data []any, token string) error
}

// ParseURL checks a clickhouse:// sink URL and returns the driver options
// it describes (address, database, user, TLS with secure=true, and any
// other setting of clickhouse.ParseDSN).
func ParseURL(dsn string) (*clickhouse.Options, error) {
	if !strings.HasPrefix(dsn, "clickhouse://") {
		return nil, fmt.Errorf("clickhouse sink %q: want clickhouse://[user:pass@]host:9000/db?secure=true", secret.MaskURL(dsn))
	}
	o, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("clickhouse sink %q: %w", secret.MaskURL(dsn), err)
	}
	return o, nil
}

// options applies the config to the DSN's options: credentials, TLS, LZ4.
func (c *Config) options(dsn string) (*clickhouse.Options, error) {
	o, err := ParseURL(dsn)
	if err != nil {
		return nil, err
	}
	if user := cmp.Or(c.User, os.Getenv("CLICKHOUSE_USER")); user != "" {
		o.Auth.Username = user
	}
	if pw := cmp.Or(c.Password.Reveal(), os.Getenv("CLICKHOUSE_PASSWORD")); pw != "" {
		o.Auth.Password = pw
	}
	if o.Auth.Database == "" {
		o.Auth.Database = "mcplens"
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read clickhouse CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("clickhouse CA file %q: no certificate", c.CAFile)
		}
		if o.TLS == nil {
			o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		o.TLS.RootCAs = pool
	}
	o.Compression = &clickhouse.Compression{Method: clickhouse.CompressionLZ4}
	o.DialTimeout = c.DialTimeout
	return o, nil
}

// Open connects to the ClickHouse server of a clickhouse:// DSN and checks
// it answers. It does not create tables: run schema.Apply (--migrate).
func Open(ctx context.Context, dsn string, cfg Config, logger zerolog.Logger, reg prometheus.Registerer) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o, err := cfg.options(dsn)
	if err != nil {
		return nil, err
	}
	conn, err := clickhouse.Open(o)
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", o.Addr, err)
	}
	if err := conn.Ping(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("ping clickhouse %s: %w", o.Addr, err), conn.Close())
	}
	s := newStore(cfg, o.Auth.Database, logger, reg)
	s.conn = conn
	s.insert = s.nativeInsert
	logger.Info().Strs("addr", o.Addr).Str("database", s.db).Bool("tls", o.TLS != nil).Msg("connected to clickhouse")
	return s, nil
}

func newStore(cfg Config, db string, logger zerolog.Logger, reg prometheus.Registerer) *Store {
	s := &Store{cfg: cfg, db: db, log: logger, m: newMetrics(reg), sleep: sleepCtx}
	s.Questions = queries.On(s)
	return s
}

// Migrate brings the database up to the newest schema (schema.Apply) and
// logs the migrations it ran. opts.DB defaults to the DSN's database.
func (s *Store) Migrate(ctx context.Context, opts schema.Options) error {
	if opts.DB == "" {
		opts.DB = s.db
	}
	ran, err := schema.Apply(ctx, s.conn, opts)
	for _, m := range ran {
		s.log.Info().Int("version", m.Version).Str("name", m.Name).Msg("applied migration")
	}
	return err
}

var (
	_ queries.Store  = (*Store)(nil)
	_ queries.Engine = (*Store)(nil)
)

// Close closes the connection pool.
func (s *Store) Close() error { return s.conn.Close() }

// Run implements queries.Engine: the query's ClickHouse SQL with its
// arguments as server-side parameters.
func (s *Store) Run(ctx context.Context, q *queries.Query, args queries.Args) (*queries.Table, error) {
	params, err := q.ClickHouseParams(args)
	if err != nil {
		return nil, err
	}
	rows, err := s.conn.Query(clickhouse.Context(ctx, clickhouse.WithParameters(params)), q.SQL)
	if err != nil {
		return nil, fmt.Errorf("run %s on clickhouse: %w", q.Name, err)
	}
	defer rows.Close()
	types := rows.ColumnTypes()
	t := &queries.Table{Columns: rows.Columns()}
	for rows.Next() {
		ptrs := make([]any, len(types))
		for i, ct := range types {
			ptrs[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("scan %s: %w", q.Name, err)
		}
		vals := make([]any, len(ptrs))
		for i, p := range ptrs {
			if vals[i], err = queries.Normalize(reflect.ValueOf(p).Elem().Interface()); err != nil {
				return nil, fmt.Errorf("%s column %s: %w", q.Name, t.Columns[i], err)
			}
		}
		t.Rows = append(t.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", q.Name, err)
	}
	return t, nil
}

// Seed returns the exchanges stored within window of the newest one and
// the latest tool annotations, for the ingest engine to seed after a restart.
func (s *Store) Seed(ctx context.Context, window time.Duration) ([]schema.Exchange, []schema.ToolAnnotation, error) {
	return s.ChainWindow(ctx, window)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
