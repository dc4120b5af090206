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
	"log/slog"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
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
	opts   *clickhouse.Options
	conns  conns // the connections conn dialed (deadline.go)
	noDBMu sync.Mutex
	noDB   error // set while the DSN's database does not exist
	cfg    Config
	db     string
	log    zerolog.Logger
	m      *metrics
	sleep  func(context.Context, time.Duration) error
	now    func() time.Time
	ttl    ttls
	insert func(ctx context.Context, table string, cols []string, data []any, token string) error
	// storedHalves looks up halves stored with their pair (state.go).
	storedHalves func(ctx context.Context, lo, hi time.Time, reqs, resps []string) (map[string]bool, error)
	// storedUnsure looks up a batch's unsure rows (state.go).
	storedUnsure func(ctx context.Context, lo, hi time.Time, exchanges, positions []string) (xs, qs map[string]bool, err error)
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

// options applies the config to the DSN's options: credentials, TLS, and
// LZ4 unless the DSN chooses how inserts are compressed.
func (c *Config) options(dsn string) (*clickhouse.Options, error) {
	o, err := ParseURL(dsn)
	if err != nil {
		return nil, err
	}
	if err := nativeCompression(dsn, o); err != nil {
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
	o.DialTimeout = c.DialTimeout
	return o, nil
}

// nativeCompression sets how blocks travel to the server: LZ4 by default,
// or the DSN's compress= (lz4, lz4hc, zstd, or none to send them as they
// are). On loopback or a fast link none saves the ingester the LZ4 pass
// over every body, about a tenth of its CPU into ClickHouse (README);
// across a slower network LZ4 sends bodies at a twentieth of their size.
func nativeCompression(dsn string, o *clickhouse.Options) error {
	u, err := url.Parse(dsn)
	if err != nil || !u.Query().Has("compress") {
		o.Compression = &clickhouse.Compression{Method: clickhouse.CompressionLZ4}
		return nil //nolint:nilerr // ParseURL has accepted the DSN already
	}
	methods := map[string]clickhouse.CompressionMethod{"lz4": clickhouse.CompressionLZ4, "true": clickhouse.CompressionLZ4,
		"1": clickhouse.CompressionLZ4, "lz4hc": clickhouse.CompressionLZ4HC, "zstd": clickhouse.CompressionZSTD}
	v := strings.ToLower(u.Query().Get("compress"))
	switch m, ok := methods[v]; {
	case v == "none" || v == "false" || v == "0":
		o.Compression = nil
	case ok:
		level := 3 // the driver's default, or compress_level
		if o.Compression != nil && u.Query().Has("compress_level") {
			level = o.Compression.Level
		}
		o.Compression = &clickhouse.Compression{Method: m, Level: level}
	default:
		return fmt.Errorf("clickhouse sink %q: compress=%s: want lz4, lz4hc, zstd or none (gzip, deflate and br are the HTTP interface's)", secret.MaskURL(dsn), v)
	}
	return nil
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
	if o.Debug { //nolint:staticcheck // set by debug=true in the DSN; Logger is how to redirect it
		// The driver's own debug logger prints to stdout, which carries
		// `ingest --to stdout` records: its lines go to our log instead.
		o.Logger = slog.New(slog.NewTextHandler(logger.With().Str("component", "clickhouse-go").Logger(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	s := newStore(cfg, o.Auth.Database, logger, reg)
	o.DialContext = s.conns.dialer(o.DialTimeout, cfg.InsertTimeout, o.TLS)
	conn, err := clickhouse.Open(o)
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", o.Addr, err)
	}
	s.conn, s.opts = conn, o
	s.insert = s.nativeInsert
	s.storedHalves = s.queryStoredHalves
	s.storedUnsure = s.queryStoredUnsure
	if err := conn.Ping(ctx); err != nil {
		if !isCode(err, codeUnknownDatabase) {
			return nil, errors.Join(s.explain(fmt.Errorf("ping clickhouse %s: %w", o.Addr, err)), conn.Close())
		}
		// A fresh server: Migrate creates the database; until then
		// every read and write names the cause.
		s.noDB = fmt.Errorf("clickhouse database %s does not exist on %s: create it with --migrate: %w", s.db, strings.Join(o.Addr, ","), err)
		logger.Warn().Strs("addr", o.Addr).Str("database", s.db).Msg("clickhouse database does not exist yet; --migrate creates it")
		return s, nil
	}
	logger.Info().Strs("addr", o.Addr).Str("database", s.db).Bool("tls", o.TLS != nil).Msg("connected to clickhouse")
	return s, nil
}

// ClickHouse error codes the store branches on.
const (
	codeUnknownDatabase = 81  // UNKNOWN_DATABASE
	codeReadonly        = 164 // READONLY
	codeAuthFailed      = 516 // AUTHENTICATION_FAILED
	codeAccessDenied    = 497 // ACCESS_DENIED
)

func isCode(err error, code int32) bool {
	var ex *clickhouse.Exception
	return errors.As(err, &ex) && ex.Code == code
}

// explain prefixes the errors a user must fix (credentials, rights) with
// what to do about them; other errors pass unchanged.
func (s *Store) explain(err error) error {
	var user string
	if s.opts != nil {
		user = s.opts.Auth.Username
	}
	switch {
	case isCode(err, codeAuthFailed):
		return fmt.Errorf("clickhouse rejected user %q (wrong password or unknown user; set --clickhouse-user/--clickhouse-password or CLICKHOUSE_USER/CLICKHOUSE_PASSWORD): %w", user, err)
	case isCode(err, codeReadonly):
		return fmt.Errorf("clickhouse user %q is read-only and cannot write: %w", user, err)
	case isCode(err, codeAccessDenied):
		return fmt.Errorf("clickhouse user %q lacks a grant on database %s: %w", user, s.db, err)
	}
	return err
}

// ready returns the error of a missing database, checking again whether
// it was created meanwhile.
func (s *Store) ready(ctx context.Context) error {
	s.noDBMu.Lock()
	defer s.noDBMu.Unlock()
	if s.noDB == nil {
		return nil
	}
	if err := s.conn.Ping(ctx); err != nil {
		return s.noDB
	}
	s.noDB = nil
	return nil
}

func newStore(cfg Config, db string, logger zerolog.Logger, reg prometheus.Registerer) *Store {
	s := &Store{cfg: cfg, db: db, log: logger, m: newMetrics(reg), sleep: sleepCtx, now: time.Now}
	s.Questions = queries.On(s)
	return s
}

// Migrate brings the database up to the newest schema (schema.Apply) and
// logs the migrations it ran. opts.DB defaults to the DSN's database.
func (s *Store) Migrate(ctx context.Context, opts schema.Options) error {
	if opts.DB == "" {
		opts.DB = s.db
	}
	conn := s.conn
	if err := s.ready(ctx); err != nil {
		if !opts.CreateDatabase {
			return err
		}
		// The pool's connections name the missing database in their
		// handshake; create it over one that names none.
		o := *s.opts
		o.Auth.Database = ""
		c, err := clickhouse.Open(&o)
		if err != nil {
			return fmt.Errorf("open clickhouse %s: %w", o.Addr, err)
		}
		defer c.Close()
		conn = c
	}
	defer s.ttl.reset()
	ran, err := schema.Apply(ctx, conn, opts)
	for _, m := range ran {
		s.log.Info().Int("version", m.Version).Str("name", m.Name).Msg("applied migration")
	}
	if err != nil {
		return s.explain(err)
	}
	return s.ready(ctx)
}

var (
	_ queries.Store  = (*Store)(nil)
	_ queries.Engine = (*Store)(nil)
)

// Close closes the connection pool.
// CopiesBatches marks Store a [pipeline.Copier]: Write encodes the
// batch's values into columns of its own before it returns.
func (s *Store) CopiesBatches() {}

func (s *Store) Close() error { return s.conn.Close() }

// Run implements queries.Engine: the query's ClickHouse SQL with its
// arguments as server-side parameters.
func (s *Store) Run(ctx context.Context, q *queries.Query, args queries.Args) (*queries.Table, error) {
	params, err := q.ClickHouseParams(args)
	if err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
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
