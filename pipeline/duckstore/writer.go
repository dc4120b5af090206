package duckstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
)

var (
	//go:embed stage.sql
	stageSQL string
	//go:embed merge.sql
	mergeSQL string
	//go:embed clear.sql
	clearSQL string
	//go:embed prune.sql
	pruneSQL string
)

// writer is the one connection that writes, with its staging tables.
type writer struct {
	conn  *sql.Conn
	merge []string
	clear []string
}

func newWriter(ctx context.Context, db *sql.DB) (*writer, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("writer connection: %w", err)
	}
	for _, stmt := range statements(stageSQL) {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			conn.Close()
			return nil, fmt.Errorf("create staging tables: %w", err)
		}
	}
	return &writer{conn: conn, merge: statements(mergeSQL), clear: statements(clearSQL)}, nil
}

func (w *writer) close() error { return w.conn.Close() }

// Write stores a batch: appends it to the staging tables, then moves it
// into the tables in one transaction. It returns after the commit, which
// DuckDB makes durable in its write-ahead log. Rows already stored are
// skipped, so a retried batch is harmless.
func (s *Store) Write(ctx context.Context, b *pipeline.Batch) error {
	if s.readOnly {
		return fmt.Errorf("write to %q: store opened read-only", s.path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		w, err := newWriter(ctx, s.db)
		if err != nil {
			return err
		}
		s.w = w
	}
	err := s.w.write(ctx, b)
	if err != nil {
		// A failed connection is replaced on the next write.
		if cerr := s.w.close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		s.w = nil
		return fmt.Errorf("write batch of %d rows to %q: %w", b.Len(), s.path, err)
	}
	s.maybePrune(ctx)
	return nil
}

func (w *writer) write(ctx context.Context, b *pipeline.Batch) (err error) {
	defer func() {
		for _, stmt := range w.clear {
			if _, cerr := w.conn.ExecContext(context.WithoutCancel(ctx), stmt); cerr != nil && err == nil {
				err = fmt.Errorf("clear staging tables: %w", cerr)
			}
		}
	}()
	if err := w.stage(ctx, b); err != nil {
		return err
	}
	tx, err := w.conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	for _, stmt := range w.merge {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return errors.Join(fmt.Errorf("merge staged rows: %w", err), tx.Rollback())
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// stage appends the batch to the staging tables.
func (w *writer) stage(ctx context.Context, b *pipeline.Batch) error {
	return w.conn.Raw(func(dc any) error {
		conn, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		if len(b.Exchanges) > 0 {
			if err := appendRows(conn, "stage_exchanges", len(b.Exchanges), func(i int, row []driver.Value) { exchangeRow(&b.Exchanges[i], row) }, len(schema.ExchangeColumns)); err != nil {
				return err
			}
		}
		if len(b.Bodies) > 0 {
			if err := appendRows(conn, "stage_bodies", len(b.Bodies), func(i int, row []driver.Value) { bodyRow(&b.Bodies[i], row) }, len(schema.BodyColumns)); err != nil {
				return err
			}
		}
		if len(b.Annotations) > 0 {
			if err := appendRows(conn, "stage_annotations", len(b.Annotations), func(i int, row []driver.Value) { annotationRow(&b.Annotations[i], row) }, len(schema.AnnotationColumns)); err != nil {
				return err
			}
		}
		if len(b.Quarantine) > 0 {
			if err := appendRows(conn, "stage_quarantine", len(b.Quarantine), func(i int, row []driver.Value) { quarantineRow(&b.Quarantine[i], row) }, len(schema.QuarantineColumns)); err != nil {
				return err
			}
		}
		return ctx.Err()
	})
}

func appendRows(conn driver.Conn, table string, n int, fill func(i int, row []driver.Value), width int) error {
	a, err := duckdb.NewAppender(conn, "temp", "main", table)
	if err != nil {
		return fmt.Errorf("appender on %s: %w", table, err)
	}
	row := make([]driver.Value, width)
	for i := 0; i < n; i++ {
		fill(i, row)
		if err := a.AppendRow(row...); err != nil {
			return errors.Join(fmt.Errorf("append to %s: %w", table, err), a.Close())
		}
	}
	if err := a.Close(); err != nil {
		return fmt.Errorf("flush %s: %w", table, err)
	}
	return nil
}

// statements splits a .sql file at lines ending in ';', dropping comments.
func statements(sql string) []string {
	var out []string
	var cur []string
	for _, line := range strings.Split(sql, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur = append(cur, strings.TrimSuffix(t, ";"))
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.Join(cur, "\n"))
			cur = cur[:0]
		}
	}
	return out
}

// maybePrune deletes rows past the retention, at most once per
// PruneEvery. A failure is logged, not returned: the batch is stored.
func (s *Store) maybePrune(ctx context.Context) {
	if s.opts.Retention <= 0 && s.opts.BodyRetention <= 0 {
		return
	}
	if time.Since(s.lastPrune) < s.opts.PruneEvery {
		return
	}
	s.lastPrune = time.Now()
	if err := s.prune(ctx); err != nil {
		s.opts.Logger.Warn().Err(err).Str("path", s.path).Msg("prune failed")
	}
}

// prune deletes exchanges, quarantine rows and bodies past retention.
func (s *Store) prune(ctx context.Context) error {
	var newest sql.NullTime
	if err := s.w.conn.QueryRowContext(ctx, "SELECT max(ts) FROM exchanges").Scan(&newest); err != nil {
		return fmt.Errorf("newest exchange: %w", err)
	}
	if !newest.Valid {
		return nil
	}
	keep := func(d time.Duration) time.Time {
		if d <= 0 {
			return time.Unix(0, 0).UTC()
		}
		return newest.Time.Add(-d)
	}
	start := time.Now()
	for _, stmt := range statements(pruneSQL) {
		if _, err := s.w.conn.ExecContext(ctx, stmt,
			sql.Named("exchanges_before", keep(s.opts.Retention)), sql.Named("bodies_before", keep(s.opts.BodyRetention))); err != nil {
			return fmt.Errorf("prune: %w", err)
		}
	}
	s.opts.Logger.Info().Str("path", s.path).Dur("took", time.Since(start)).Msg("pruned rows past retention")
	return nil
}
