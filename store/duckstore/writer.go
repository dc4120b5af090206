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

	"github.com/mcplens/mcplens/schema"
)

var (
	//go:embed stage.sql
	stageSQL string
	//go:embed stored.sql
	storedSQL string
	//go:embed merge.sql
	mergeSQL string
	//go:embed clear.sql
	clearSQL string
	//go:embed prune.sql
	pruneSQL string
	//go:embed state.sql
	stateSQL string
	//go:embed mark.sql
	markSQL string
)

// halfSpan is how far apart in event time the two halves of one exchange
// can be stored: the lookup of a re-read orphan response's stored pair
// (stored.sql) searches that far before the batch's orphans. It covers any pair window up
// to 10 minutes plus lateness.
const halfSpan = 15 * time.Minute

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
	for _, stmt := range schema.SplitStatements(stageSQL) {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return nil, errors.Join(fmt.Errorf("create staging tables: %w", err), conn.Close())
		}
	}
	return &writer{conn: conn, merge: schema.SplitStatements(mergeSQL), clear: schema.SplitStatements(clearSQL)}, nil
}

func (w *writer) close() error { return w.conn.Close() }

// Write stores a batch in one transaction and returns after the commit,
// which DuckDB makes durable in its write-ahead log. Rows already stored
// (or repeated within the batch) are skipped, so a retried or replayed
// batch is harmless.
func (s *Store) Write(ctx context.Context, b *schema.Batch) error {
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

// write looks up which exchanges are stored, then appends the new
// exchanges and bodies straight into their tables with the Appender and
// merges the staged annotations and quarantine rows, all in one
// transaction of the writer connection.
func (w *writer) write(ctx context.Context, b *schema.Batch) (err error) {
	defer func() {
		for _, stmt := range w.clear {
			if _, cerr := w.conn.ExecContext(context.WithoutCancel(ctx), stmt); cerr != nil && err == nil {
				err = fmt.Errorf("clear staging tables: %w", cerr)
			}
		}
	}()
	storedX, storedB, err := w.stored(ctx, b)
	if err != nil {
		return err
	}
	if _, err := w.conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := w.appendBatch(ctx, b, storedX, storedB); err != nil {
		return errors.Join(err, w.rollback())
	}
	for _, stmt := range w.merge {
		if _, err := w.conn.ExecContext(ctx, stmt); err != nil {
			return errors.Join(fmt.Errorf("merge staged rows: %w", err), w.rollback())
		}
	}
	if err := w.writeState(ctx, &b.State); err != nil {
		return errors.Join(err, w.rollback())
	}
	if _, err := w.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return errors.Join(fmt.Errorf("commit: %w", err), w.rollback())
	}
	return nil
}

func (w *writer) rollback() error {
	if _, err := w.conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		return fmt.Errorf("rollback: %w", err)
	}
	return nil
}

// stored returns the ids of the batch's exchanges that are already in
// exchanges and in exchange_bodies.
func (w *writer) stored(ctx context.Context, b *schema.Batch) (x, bodies map[string]bool, err error) {
	x, bodies = map[string]bool{}, map[string]bool{}
	if len(b.Exchanges) == 0 && len(b.Bodies) == 0 {
		return x, bodies, nil
	}
	err = w.conn.Raw(func(dc any) error {
		conn, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		a, err := duckdb.NewAppender(conn, "temp", "main", "stage_ids")
		if err != nil {
			return fmt.Errorf("appender on stage_ids: %w", err)
		}
		for i := range b.Exchanges {
			e := &b.Exchanges[i]
			half, _ := e.HalfEvent()
			if err := a.AppendRow(e.ExchangeID, stamp(e.TS), half); err != nil {
				return errors.Join(err, a.Close())
			}
		}
		for i := range b.Bodies {
			if err := a.AppendRow(b.Bodies[i].ExchangeID, stamp(b.Bodies[i].TS), ""); err != nil {
				return errors.Join(err, a.Close())
			}
		}
		return a.Close()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("stage ids: %w", err)
	}
	lo, hi := tsRange(b)
	query, args := storedQuery(b, lo, hi)
	rows, err := w.conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("look up stored exchanges: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind, id string
		if err := rows.Scan(&kind, &id); err != nil {
			return nil, nil, err
		}
		switch kind {
		case "x":
			x[id] = true
		case "b":
			bodies[id] = true
		case "h": // its pair is stored: neither row is new
			x[id], bodies[id] = true, true
		}
	}
	return x, bodies, rows.Err()
}

// storedLookup is stored.sql's four queries: exchanges, bodies, request
// halves, response halves.
var storedLookup = schema.SplitStatements(storedSQL)

// halfSlack widens the range searched for a request half's stored pair,
// which has the request's own ts, and the range after an orphan
// response, whose pair is older.
const halfSlack = time.Minute

// storedQuery is the lookup of the stored rows b can match, with its
// arguments: the exchanges' query if b has exchanges, the bodies' if it
// has bodies, and a halves' query for each kind of half b has: requests
// within their own range, orphan responses within theirs widened by
// halfSpan into the past.
func storedQuery(b *schema.Batch, lo, hi time.Time) (string, []any) {
	var parts []string
	var args []any
	if len(b.Exchanges) > 0 {
		parts = append(parts, storedLookup[0])
	}
	if len(b.Bodies) > 0 {
		parts = append(parts, storedLookup[1])
	}
	if len(parts) > 0 {
		args = append(args, sql.Named("lo", lo), sql.Named("hi", hi))
	}
	var req, resp span
	for i := range b.Exchanges {
		x := &b.Exchanges[i]
		switch id, isResp := x.HalfEvent(); {
		case id == "":
		case isResp:
			resp.see(stamp(x.TS))
		default:
			req.see(stamp(x.TS))
		}
	}
	if req.set {
		parts = append(parts, storedLookup[2])
		args = append(args, sql.Named("qlo", req.lo.Add(-halfSlack)), sql.Named("qhi", req.hi.Add(halfSlack)))
	}
	if resp.set {
		parts = append(parts, storedLookup[3])
		args = append(args, sql.Named("plo", resp.lo.Add(-halfSpan)), sql.Named("phi", resp.hi.Add(halfSlack)))
	}
	return strings.Join(parts, "\nUNION ALL\n"), args
}

// span is the range of the times it has seen.
type span struct {
	lo, hi time.Time
	set    bool
}

func (s *span) see(t time.Time) {
	if !s.set || t.Before(s.lo) {
		s.lo = t
	}
	if !s.set || t.After(s.hi) {
		s.hi = t
	}
	s.set = true
}

// writeState applies a batch's state change in its transaction: the new
// waiting events appended, the released ones deleted, the streams' marks
// recorded.
func (w *writer) writeState(ctx context.Context, st *schema.State) error {
	if st.Empty() {
		return nil
	}
	err := w.conn.Raw(func(dc any) error {
		conn, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		if err := appendRows(conn, fileCatalog, "ingest_waiting", len(st.Saved), func(i int, row []driver.Value) bool {
			sv := &st.Saved[i]
			row[0], row[1], row[2], row[3], row[4] = sv.Stream, sv.Offset, sv.EventID, stamp(sv.TS), sv.Data
			return true
		}, 5); err != nil {
			return err
		}
		return appendRows(conn, "temp", "stage_released", len(st.Released), func(i int, row []driver.Value) bool {
			r := &st.Released[i]
			row[0], row[1], row[2] = r.Stream, r.Offset, r.EventID
			return true
		}, 3)
	})
	if err != nil {
		return fmt.Errorf("stage ingest state: %w", err)
	}
	if len(st.Released) > 0 {
		if _, err := w.conn.ExecContext(ctx, stateSQL); err != nil {
			return fmt.Errorf("release waiting events: %w", err)
		}
	}
	for _, m := range st.Streams {
		if _, err := w.conn.ExecContext(ctx, markSQL, sql.Named("stream", m.Stream), sql.Named("topic", m.Topic),
			sql.Named("part", int32(m.Partition)), sql.Named("next", m.Next), sql.Named("max_ts_ns", schema.UnixNano(m.MaxTS)), sql.Named("held", heldOf(m)),
			sql.Named("merge_lag_ns", int64(m.MergeLag)), sql.Named("merge_lag_at_ns", schema.UnixNano(m.MergeLagAt))); err != nil {
			return fmt.Errorf("record mark of stream %q: %w", m.Stream, err)
		}
	}
	return nil
}

// tsRange is the span of the stored ts of a batch's exchanges and bodies.
func tsRange(b *schema.Batch) (lo, hi time.Time) {
	var s span
	for i := range b.Exchanges {
		s.see(stamp(b.Exchanges[i].TS))
	}
	for i := range b.Bodies {
		s.see(stamp(b.Bodies[i].TS))
	}
	if !s.set {
		return stamp(time.Time{}), stamp(time.Time{})
	}
	return s.lo, s.hi
}

// appendBatch appends the new exchanges and bodies to their tables and
// the annotations and quarantine rows to the staging tables.
func (w *writer) appendBatch(ctx context.Context, b *schema.Batch, storedX, storedB map[string]bool) error {
	return w.conn.Raw(func(dc any) error {
		conn, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("unexpected driver connection %T", dc)
		}
		if len(b.Exchanges) > 0 {
			if err := appendRows(conn, fileCatalog, "exchanges", len(b.Exchanges), func(i int, row []driver.Value) bool {
				e := &b.Exchanges[i]
				if storedX[e.ExchangeID] {
					return false
				}
				storedX[e.ExchangeID] = true // a repeat within the batch is skipped too
				exchangeRow(e, row)
				return true
			}, len(schema.ExchangeColumns)); err != nil {
				return err
			}
		}
		if len(b.Bodies) > 0 {
			if err := appendRows(conn, fileCatalog, "exchange_bodies", len(b.Bodies), func(i int, row []driver.Value) bool {
				x := &b.Bodies[i]
				if storedB[x.ExchangeID] {
					return false
				}
				storedB[x.ExchangeID] = true
				bodyRow(x, row)
				return true
			}, len(schema.BodyColumns)); err != nil {
				return err
			}
		}
		if len(b.Annotations) > 0 {
			if err := appendRows(conn, "temp", "stage_annotations", len(b.Annotations), func(i int, row []driver.Value) bool {
				annotationRow(&b.Annotations[i], row)
				return true
			}, len(schema.AnnotationColumns)); err != nil {
				return err
			}
		}
		if len(b.Quarantine) > 0 {
			if err := appendRows(conn, "temp", "stage_quarantine", len(b.Quarantine), func(i int, row []driver.Value) bool {
				quarantineRow(&b.Quarantine[i], row)
				return true
			}, len(schema.QuarantineColumns)); err != nil {
				return err
			}
		}
		return ctx.Err()
	})
}

// appendRows appends the rows fill accepts to catalog.main.table
// (fileCatalog is the database file, "temp" the connection's temporary
// tables).
func appendRows(conn driver.Conn, catalog, table string, n int, fill func(i int, row []driver.Value) bool, width int) error {
	a, err := duckdb.NewAppender(conn, catalog, "main", table)
	if err != nil {
		return fmt.Errorf("appender on %s: %w", table, err)
	}
	row := make([]driver.Value, width)
	for i := 0; i < n; i++ {
		if !fill(i, row) {
			continue
		}
		if err := a.AppendRow(row...); err != nil {
			return errors.Join(fmt.Errorf("append to %s: %w", table, err), a.Close())
		}
	}
	if err := a.Close(); err != nil {
		return fmt.Errorf("flush %s: %w", table, err)
	}
	return nil
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
	for _, stmt := range schema.SplitStatements(pruneSQL) {
		if _, err := s.w.conn.ExecContext(ctx, stmt,
			sql.Named("exchanges_before", keep(s.opts.Retention)), sql.Named("bodies_before", keep(s.opts.BodyRetention))); err != nil {
			return fmt.Errorf("prune: %w", err)
		}
	}
	s.opts.Logger.Info().Str("path", s.path).Int64("took_ms", time.Since(start).Milliseconds()).Msg("pruned rows past retention")
	return nil
}

// heldOf is a mark's held offsets as the list column takes them (never
// NULL).
func heldOf(m schema.StreamMark) []int64 {
	if m.Held == nil {
		return []int64{}
	}
	return m.Held
}
