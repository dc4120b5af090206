package chstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"golang.org/x/sync/errgroup"

	"github.com/mcplens/mcplens/schema"
)

// Write stores a batch: one columnar INSERT per table (several when a
// table has more than MaxInsertRows rows). The intents go first; then
// the exchanges, bodies, annotations, quarantine rows and the newly
// waiting events at once, each on a connection of its own, so that the
// server works on them side by side and the write takes about as long as
// its largest table instead of the sum of all; then the released events,
// then the marks (state.go), so that a mark is never stored before what
// it counts as handled, and an event is released only once the rows that
// released it are stored. A crash between two inserts leaves what a
// crash between two sequential inserts left: some tables of the batch
// stored, no mark, so the batch is re-read and its rows checked (unsure)
// or skipped by their tokens. A half whose event is already stored with
// its other half is left out. Each INSERT carries the deduplication
// token "<batch token>:<table>:<part>", so a batch the pipeline retries
// after a failure half way (or after an unacknowledged commit) is not
// stored twice. Write returns nil only after every INSERT was committed;
// the first failure cancels the inserts beside it.
// Rows older than their table's TTL are stored (and vanish at the next
// merges): Write warns with their count per table and counts them in
// mcplens_clickhouse_expired_rows_total.
func (s *Store) Write(ctx context.Context, b *schema.Batch) error {
	start := time.Now()
	if err := s.ready(ctx); err != nil {
		return err
	}
	b, err := s.withoutStoredHalves(ctx, b)
	if err != nil {
		return err
	}
	if b, err = s.withoutUnsure(ctx, b); err != nil {
		return err
	}
	if err := s.writeIntents(ctx, b); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	beside := func(table string, cols []string, n int, encode func(lo, hi int) []any) {
		if n > 0 {
			g.Go(func() error { return s.writeTable(gctx, b.Token, table, cols, n, encode) })
		}
	}
	beside("exchanges", schema.ExchangeColumns, len(b.Exchanges), func(lo, hi int) []any {
		cols, unknown := exchangeColumns(b.Exchanges[lo:hi])
		if unknown > 0 {
			s.log.Warn().Int("values", unknown).Msg("enum values unknown to the schema stored as ''; a newer classifier needs a migration")
		}
		return cols
	})
	beside("exchange_bodies", schema.BodyColumns, len(b.Bodies), func(lo, hi int) []any { return bodyColumns(b.Bodies[lo:hi]) })
	beside("tool_annotations", schema.AnnotationColumns, len(b.Annotations), func(lo, hi int) []any { return annotationColumns(b.Annotations[lo:hi]) })
	beside("quarantine", schema.QuarantineColumns, len(b.Quarantine), func(lo, hi int) []any { return quarantineColumns(b.Quarantine[lo:hi]) })
	beside("ingest_waiting", waitingColumns, len(b.State.Saved), func(lo, hi int) []any { return waitingColumnsOf(b.State.Saved[lo:hi]) })
	if err := g.Wait(); err != nil {
		return err
	}
	if err := s.writeMarks(ctx, b.Token, &b.State); err != nil {
		return err
	}
	s.warnExpired(ctx, "exchanges", func(i int) time.Time { return b.Exchanges[i].TS }, len(b.Exchanges))
	s.warnExpired(ctx, "exchange_bodies", func(i int) time.Time { return b.Bodies[i].TS }, len(b.Bodies))
	s.warnExpired(ctx, "quarantine", func(i int) time.Time { return b.Quarantine[i].TS }, len(b.Quarantine))
	s.log.Debug().Str("token", b.Token).Int("rows", b.Len()).Int("exchanges", len(b.Exchanges)).Int("released", len(b.State.Released)).Int64("took_ms", time.Since(start).Milliseconds()).Msg("batch stored in clickhouse")
	return nil
}

func (s *Store) writeTable(ctx context.Context, token, table string, cols []string, n int, encode func(lo, hi int) []any) error {
	for part, lo := 0, 0; lo < n; part, lo = part+1, lo+s.cfg.MaxInsertRows {
		hi := min(lo+s.cfg.MaxInsertRows, n)
		tok := ""
		if token != "" {
			tok = token + ":" + table + ":" + strconv.Itoa(part)
		}
		if err := s.insertWithRetry(ctx, table, cols, encode(lo, hi), tok); err != nil {
			return fmt.Errorf("insert %d rows into %s: %w", hi-lo, table, err)
		}
		s.m.rows.WithLabelValues(table).Add(float64(hi - lo))
	}
	return nil
}

// insertWithRetry repeats an insert that failed with a transient error,
// with exponential backoff and jitter, up to RetryAttempts times.
func (s *Store) insertWithRetry(ctx context.Context, table string, cols []string, data []any, token string) error {
	start := time.Now()
	defer func() { s.m.seconds.Observe(time.Since(start).Seconds()) }()
	backoff := s.cfg.RetryMin
	for attempt := 1; ; attempt++ {
		err := s.insertAttempt(ctx, table, cols, data, token)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errInsertTimeout) && !Transient(err) {
			s.m.failures.WithLabelValues("permanent").Inc()
			return s.explain(err)
		}
		if attempt >= s.cfg.RetryAttempts {
			s.m.failures.WithLabelValues("transient").Inc()
			return fmt.Errorf("after %d attempts: %w", attempt, err)
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		s.log.Warn().Err(err).Str("table", table).Int("attempt", attempt).Dur("retry_in", wait).Msg("clickhouse insert failed; retrying")
		s.m.retries.Inc()
		if err := s.sleep(ctx, wait); err != nil {
			return err
		}
		backoff = min(backoff*2, s.cfg.RetryMax)
	}
}

// errInsertTimeout marks an attempt that took longer than
// --clickhouse-insert-timeout: retried like a network error.
var errInsertTimeout = errors.New("insert attempt timed out")

// insertAttempt runs one attempt of an insert under the insert timeout.
// The driver stops on the context while it prepares the INSERT and while
// it sends the last block; the writes before it are interrupted by
// nativeInsert and, as a backstop, time out on their own (deadline.go).
func (s *Store) insertAttempt(ctx context.Context, table string, cols []string, data []any, token string) error {
	actx, cancel := context.WithTimeout(ctx, s.cfg.InsertTimeout)
	defer cancel()
	err := s.insert(actx, table, cols, data, token)
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		return fmt.Errorf("%w after --clickhouse-insert-timeout %s: %w", errInsertTimeout, s.cfg.InsertTimeout, err)
	}
	return err
}

// blockRows is the most rows nativeInsert appends to the driver's block
// before it sends them: one INSERT of a batch's table goes as blocks of
// this size, which the server squashes into one part (up to
// min_insert_block_size_rows, 1,048,449) as it would one block. The
// driver's String columns grow their one buffer by append, so a block of
// a whole batch reallocated and copied it over and over (Go grows a large
// slice by 1.25x): in BenchmarkKafkaToClickHouse that was 36% of all the
// bytes the ingester allocated, ~5 KB an event for 1 KiB bodies; Flush
// resets the block and keeps the buffers for the next block.
const blockRows = 256

// nativeInsert sends one columnar INSERT over the native protocol, in
// blocks of blockRows.
func (s *Store) nativeInsert(ctx context.Context, table string, cols []string, data []any, token string) error {
	settings := clickhouse.Settings{}
	if token != "" {
		settings["insert_deduplication_token"] = token
	}
	if s.cfg.Cluster != "" {
		// Acknowledge only when the shards have the rows.
		settings["insert_distributed_sync"] = 1
	}
	ctx = clickhouse.Context(ctx, clickhouse.WithSettings(settings))
	// A cancelled insert ends the write it is blocked in (deadline.go).
	defer context.AfterFunc(ctx, s.conns.interrupt)()
	batch, err := s.conn.PrepareBatch(ctx, "INSERT INTO "+table+" ("+strings.Join(cols, ", ")+")", driver.WithReleaseConnection())
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	n := 0
	if len(data) > 0 {
		n = reflect.ValueOf(data[0]).Len()
	}
	for lo := 0; lo < n; lo += blockRows {
		hi := min(lo+blockRows, n)
		for i, col := range data {
			if hi-lo < n {
				col = reflect.ValueOf(col).Slice(lo, hi).Interface()
			}
			if err := batch.Column(i).Append(col); err != nil {
				return errors.Join(fmt.Errorf("append column %s: %w", cols[i], err), batch.Abort())
			}
		}
		if hi == n {
			break
		}
		// Flush has no watchdog of the context as Send has: a stop is
		// seen here, between blocks, and ends a write in flight through
		// the AfterFunc above.
		if err := ctx.Err(); err != nil {
			return errors.Join(err, batch.Abort())
		}
		if err := batch.Flush(); err != nil {
			return errors.Join(fmt.Errorf("send block: %w", err), batch.Abort())
		}
	}
	if err := batch.Send(); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// transientCodes are ClickHouse error codes after which the same insert
// may succeed.
var transientCodes = map[int32]bool{
	3:   true, // UNEXPECTED_END_OF_FILE
	32:  true, // ATTEMPT_TO_READ_AFTER_EOF
	159: true, // TIMEOUT_EXCEEDED
	202: true, // TOO_MANY_SIMULTANEOUS_QUERIES
	203: true, // NO_FREE_CONNECTION
	209: true, // SOCKET_TIMEOUT
	210: true, // NETWORK_ERROR
	236: true, // ABORTED
	241: true, // MEMORY_LIMIT_EXCEEDED
	242: true, // TABLE_IS_READ_ONLY (replica lost Keeper for a while)
	252: true, // TOO_MANY_PARTS
	279: true, // ALL_CONNECTION_TRIES_FAILED
	285: true, // TOO_FEW_LIVE_REPLICAS
	319: true, // UNKNOWN_STATUS_OF_INSERT
	439: true, // CANNOT_SCHEDULE_TASK
	999: true, // KEEPER_EXCEPTION
}

// permanentCodes are ClickHouse error codes that say the store is set up
// so that no write can pass: the schema or database is missing, or the
// user may not write.
var permanentCodes = map[int32]bool{
	16:  true, // NO_SUCH_COLUMN_IN_TABLE (a schema older than the ingester: --migrate)
	60:  true, // UNKNOWN_TABLE
	81:  true, // UNKNOWN_DATABASE
	164: true, // READONLY
	192: true, // UNKNOWN_USER
	497: true, // ACCESS_DENIED
	516: true, // AUTHENTICATION_FAILED
}

// Permanent implements pipeline.Permanenter: the server refused the
// write because of how it is set up (a missing database, table or
// column, a user without the right), which no retry changes until an
// operator does; the pipeline gives up after --give-up-after.
func (s *Store) Permanent(err error) bool {
	var ex *clickhouse.Exception
	return errors.As(err, &ex) && permanentCodes[ex.Code]
}

// Transient reports whether an insert error may go away on its own
// (network trouble, server overload); other errors (bad SQL, types,
// permissions) are returned at once.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ex *clickhouse.Exception
	if errors.As(err, &ex) {
		return transientCodes[ex.Code]
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, clickhouse.ErrAcquireConnTimeout)
}
