package chstore

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcplens/mcplens/schema"
)

var (
	//go:embed load_marks.sql
	loadMarksSQL string
	//go:embed load_waiting.sql
	loadWaitingSQL string
	//go:embed stored_halves.sql
	storedHalvesSQL string
	//go:embed load_intents.sql
	loadIntentsSQL string
	//go:embed unsure_rows.sql
	unsureRowsSQL string

	// storedHalvesBy holds stored_halves.sql's two selects: by request
	// ids, then by response ids.
	storedHalvesBy = schema.SplitStatements(storedHalvesSQL)
)

// halfSpan is how far apart in event time the two halves of one exchange
// can be stored: the check of a batch's halves against stored exchanges
// searches their range widened by it. It covers any pair window up to 10
// minutes plus lateness.
const halfSpan = 15 * time.Minute

// State columns, in the order of the inserts (defaults fill written_at).
var (
	streamColumns   = []string{"stream", "topic", "part", "next_offset", "low_offset", "max_ts_ns", "held", "merge_lag_ns", "merge_lag_at_ns"}
	intentColumns   = []string{"stream", "topic", "part", "next_offset"}
	waitingColumns  = []string{"stream", "stream_offset", "event_id", "ts", "event"}
	releasedColumns = []string{"stream", "stream_offset", "event_id"}
)

// LoadState returns the ingest state the batches stored (pipeline.StateSink)
// for streams (nil: every stream): each stream's mark and its waiting
// events in offset order. Several ingesters of one consumer group share
// the tables; each loads the streams it is assigned.
func (s *Store) LoadState(ctx context.Context, streams []string) ([]schema.StreamState, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	if streams == nil {
		streams = []string{}
	} else if len(streams) == 0 {
		return nil, nil
	}
	rows, err := s.conn.Query(ctx, loadMarksSQL, clickhouse.Named("all", streamsAll(streams)), clickhouse.Named("streams", streams))
	if err != nil {
		return nil, fmt.Errorf("load ingest marks: %w", err)
	}
	defer rows.Close()
	var out []schema.StreamState
	for rows.Next() {
		var m schema.StreamMark
		var part int32
		var maxNS, lagNS, lagAtNS int64
		if err := rows.Scan(&m.Stream, &m.Topic, &part, &m.Next, &m.Low, &maxNS, &m.Held, &lagNS, &lagAtNS); err != nil {
			return nil, fmt.Errorf("load ingest marks: %w", err)
		}
		if len(m.Held) == 0 {
			m.Held = nil
		}
		m.Partition = int(part)
		m.MaxTS = schema.FromUnixNano(maxNS)
		m.MergeLag, m.MergeLagAt = schema.MergeLagOf(lagNS, lagAtNS)
		out = append(out, schema.StreamState{Mark: m})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load ingest marks: %w", err)
	}
	intents, err := s.loadIntents(ctx, streams)
	if err != nil {
		return nil, err
	}
	// A stream whose first batch was cut off has an intent and no mark:
	// it resumes from its start (Next 0), with its unsure range.
	marked := make(map[string]bool, len(out))
	for _, st := range out {
		marked[st.Mark.Stream] = true
	}
	for _, in := range intents {
		if !marked[in.Stream] {
			out = append(out, schema.StreamState{Mark: schema.StreamMark{Stream: in.Stream, Topic: in.Topic, Partition: in.Partition}})
		}
	}
	slices.SortFunc(out, func(a, b schema.StreamState) int { return strings.Compare(a.Mark.Stream, b.Mark.Stream) })
	for i := range out {
		if out[i].Saved, err = s.loadWaiting(ctx, out[i].Mark); err != nil {
			return nil, err
		}
		if in, ok := intents[out[i].Mark.Stream]; ok && in.Next > out[i].Mark.Next {
			out[i].Unsure = in.Next
		}
	}
	return out, nil
}

// loadIntents returns each stream's newest intent (writeIntents), as a
// mark: its stream, topic, partition and next offset.
func (s *Store) loadIntents(ctx context.Context, streams []string) (map[string]schema.StreamMark, error) {
	rows, err := s.conn.Query(ctx, loadIntentsSQL, clickhouse.Named("all", streamsAll(streams)), clickhouse.Named("streams", streams))
	if err != nil {
		return nil, fmt.Errorf("load ingest intents: %w", err)
	}
	defer rows.Close()
	out := map[string]schema.StreamMark{}
	for rows.Next() {
		var m schema.StreamMark
		var part int32
		if err := rows.Scan(&m.Stream, &m.Topic, &part, &m.Next); err != nil {
			return nil, fmt.Errorf("load ingest intents: %w", err)
		}
		m.Partition = int(part)
		out[m.Stream] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load ingest intents: %w", err)
	}
	return out, nil
}

// writeIntents stores, before a batch's rows, the marks it will write
// after them (schema/clickhouse/0013_ingest_intents.sql): should the
// batch stop half way, the stream's next owner knows up to where the rows
// it forms again may be stored already. A batch without rows needs none:
// its parts are all state, and any prefix of them is a valid state.
func (s *Store) writeIntents(ctx context.Context, b *schema.Batch) error {
	if len(b.State.Streams) == 0 || len(b.Exchanges)+len(b.Quarantine) == 0 {
		return nil
	}
	return s.writeTable(ctx, b.Token, "ingest_intents", intentColumns, len(b.State.Streams), func(lo, hi int) []any {
		cols := streamColumnsOf(b.State.Streams[lo:hi])
		return []any{cols[0], cols[1], cols[2], cols[3]} // stream, topic, part, next_offset
	})
}

// withoutUnsure returns b less its unsure rows (schema.Batch.Unsure) that
// are stored already: exchanges and quarantined lines a previous owner of
// their stream stored in a batch whose marks it did not write. b itself
// is not changed.
func (s *Store) withoutUnsure(ctx context.Context, b *schema.Batch) (*schema.Batch, error) {
	if b.Unsure.Empty() || s.storedUnsure == nil {
		return b, nil
	}
	unsure := make(map[string]bool, len(b.Unsure.Exchanges))
	for _, id := range b.Unsure.Exchanges {
		unsure[id] = true
	}
	var lo, hi time.Time
	for i := range b.Exchanges {
		if x := &b.Exchanges[i]; unsure[x.ExchangeID] {
			lo, hi = widen(lo, hi, x.TS)
		}
	}
	// With none of them left in b (stored halves, a split batch) the range
	// is empty, and stamp makes it the epoch.
	xs, qs, err := s.storedUnsure(ctx, stamp(lo), stamp(hi), b.Unsure.Exchanges, b.Unsure.Quarantine)
	if err != nil {
		return nil, err
	}
	if len(xs)+len(qs) == 0 {
		return b, nil
	}
	out := leaveOut(b, xs, qs)
	s.log.Info().Int("exchanges", len(b.Exchanges)-len(out.Exchanges)).Int("quarantined", len(b.Quarantine)-len(out.Quarantine)).
		Msg("rows a previous owner stored without its marks left out")
	s.m.unsureSkipped.Add(float64(len(b.Exchanges) - len(out.Exchanges) + len(b.Quarantine) - len(out.Quarantine)))
	return out, nil
}

// queryStoredUnsure returns which of the exchange ids (within [lo, hi])
// and quarantine positions are stored.
func (s *Store) queryStoredUnsure(ctx context.Context, lo, hi time.Time, exchanges, positions []string) (xs, qs map[string]bool, err error) {
	rows, err := s.conn.Query(ctx, unsureRowsSQL, clickhouse.DateNamed("lo", lo, clickhouse.MilliSeconds), clickhouse.DateNamed("hi", hi, clickhouse.MilliSeconds),
		clickhouse.Named("exchanges", nonEmpty(exchanges)), clickhouse.Named("positions", nonEmpty(positions)))
	if err != nil {
		return nil, nil, fmt.Errorf("look up unsure rows: %w", err)
	}
	defer rows.Close()
	xs, qs = map[string]bool{}, map[string]bool{}
	for rows.Next() {
		var kind, key string
		if err := rows.Scan(&kind, &key); err != nil {
			return nil, nil, fmt.Errorf("look up unsure rows: %w", err)
		}
		if kind == "x" {
			xs[key] = true
		} else {
			qs[key] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("look up unsure rows: %w", err)
	}
	return xs, qs, nil
}

// streamsAll says whether a LoadState call asks for every stream: nil
// became an empty list.
func streamsAll(streams []string) bool { return len(streams) == 0 }

// loadWaiting reads one stream's waiting events from its mark's Low on.
func (s *Store) loadWaiting(ctx context.Context, m schema.StreamMark) ([]schema.SavedEvent, error) {
	rows, err := s.conn.Query(ctx, loadWaitingSQL, clickhouse.Named("stream", m.Stream), clickhouse.Named("low", m.Low))
	if err != nil {
		return nil, fmt.Errorf("load waiting events of stream %q: %w", m.Stream, err)
	}
	defer rows.Close()
	var out []schema.SavedEvent
	for rows.Next() {
		sv := schema.SavedEvent{EventRef: schema.EventRef{Stream: m.Stream}}
		var data string
		if err := rows.Scan(&sv.Offset, &sv.EventID, &sv.TS, &data); err != nil {
			return nil, fmt.Errorf("load waiting events of stream %q: %w", m.Stream, err)
		}
		sv.Data = []byte(data)
		out = append(out, sv)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load waiting events of stream %q: %w", m.Stream, err)
	}
	return out, nil
}

// writeMarks stores the rest of a batch's state change after its rows and
// newly waiting events (Write): the released events, then the marks, so
// that a mark is never stored before what it counts as handled.
func (s *Store) writeMarks(ctx context.Context, token string, st *schema.State) error {
	if len(st.Released) > 0 {
		if err := s.writeTable(ctx, token, "ingest_released", releasedColumns, len(st.Released), func(lo, hi int) []any {
			return releasedColumnsOf(st.Released[lo:hi])
		}); err != nil {
			return err
		}
	}
	if len(st.Streams) > 0 {
		return s.writeTable(ctx, token, "ingest_streams", streamColumns, len(st.Streams), func(lo, hi int) []any {
			return streamColumnsOf(st.Streams[lo:hi])
		})
	}
	return nil
}

func waitingColumnsOf(rows []schema.SavedEvent) []any {
	n := len(rows)
	stream, off, id, ts, data := make([]string, n), make([]int64, n), make([]string, n), make([]time.Time, n), make([]string, n)
	for i, sv := range rows {
		stream[i], off[i], id[i], ts[i], data[i] = sv.Stream, sv.Offset, sv.EventID, stamp(sv.TS), string(sv.Data)
	}
	return []any{stream, off, id, ts, data}
}

func releasedColumnsOf(rows []schema.EventRef) []any {
	n := len(rows)
	stream, off, id := make([]string, n), make([]int64, n), make([]string, n)
	for i, r := range rows {
		stream[i], off[i], id[i] = r.Stream, r.Offset, r.EventID
	}
	return []any{stream, off, id}
}

func streamColumnsOf(rows []schema.StreamMark) []any {
	n := len(rows)
	stream, topic, part := make([]string, n), make([]string, n), make([]int32, n)
	next, low, maxTS := make([]int64, n), make([]int64, n), make([]int64, n)
	held := make([][]int64, n)
	lag, lagAt := make([]int64, n), make([]int64, n)
	for i, m := range rows {
		lag[i], lagAt[i], maxTS[i] = int64(m.MergeLag), schema.UnixNano(m.MergeLagAt), schema.UnixNano(m.MaxTS)
		stream[i], topic[i], part[i], next[i], low[i] = m.Stream, m.Topic, int32(m.Partition), m.Next, m.Low //nolint:gosec // G115: Kafka partitions are int32
		held[i] = m.Held
		if held[i] == nil {
			held[i] = []int64{}
		}
	}
	return []any{stream, topic, part, next, low, maxTS, held, lag, lagAt}
}

// withoutStoredHalves returns b less its halves (an orphan response, a
// request without response) whose event is already stored in an exchange
// paired with its other half: a re-read or re-sent half after its pair
// was stored, which would otherwise be a second exchange of one call (an
// orphan's exchange id differs), or replace the complete row (a
// NO_RESPONSE has its request's id). b itself is not changed.
func (s *Store) withoutStoredHalves(ctx context.Context, b *schema.Batch) (*schema.Batch, error) {
	var reqs, resps []string
	var lo, hi time.Time
	for i := range b.Exchanges {
		x := &b.Exchanges[i]
		id, isResp := x.HalfEvent()
		switch {
		case id == "":
			continue
		case isResp:
			resps = append(resps, id)
		default:
			reqs = append(reqs, id)
		}
		lo, hi = widen(lo, hi, x.TS)
	}
	if len(reqs)+len(resps) == 0 {
		return b, nil
	}
	if s.storedHalves == nil { // a store without a server (unit tests)
		return b, nil
	}
	paired, err := s.storedHalves(ctx, stamp(lo.Add(-halfSpan)), stamp(hi.Add(halfSpan)), reqs, resps)
	if err != nil {
		return nil, err
	}
	if len(paired) == 0 {
		return b, nil
	}
	skipped := map[string]bool{}
	for i := range b.Exchanges {
		if id, _ := b.Exchanges[i].HalfEvent(); id != "" && paired[id] {
			skipped[b.Exchanges[i].ExchangeID] = true
			s.log.Debug().Str("exchange_id", b.Exchanges[i].ExchangeID).Str("event_id", id).Msg("half already stored with its pair; skipped")
		}
	}
	return leaveOut(b, skipped, nil), nil
}

// leaveOut returns a copy of b without the exchanges (and their bodies)
// whose id is in exchanges and the quarantine rows whose position is in
// quarantine. b itself is not changed: a table with nothing left out is
// shared, the others are copied once into arrays of their final length
// (a stored batch's records are large: growing a copy by append cost 3%
// of ingest's CPU into ClickHouse while the stored-halves lookup still
// answered for rows it was not asked about).
func leaveOut(b *schema.Batch, exchanges, quarantine map[string]bool) *schema.Batch {
	out := *b
	out.Exchanges = keep(b.Exchanges, func(x *schema.Exchange) bool { return !exchanges[x.ExchangeID] })
	out.Bodies = keep(b.Bodies, func(x *schema.Body) bool { return !exchanges[x.ExchangeID] })
	out.Quarantine = keep(b.Quarantine, func(q *schema.Quarantined) bool { return !quarantine[q.Position] })
	return &out
}

// keep returns the rows ok keeps: rows itself when it keeps all of them,
// else a new array holding just those.
func keep[T any](rows []T, ok func(*T) bool) []T {
	n := 0
	for i := range rows {
		if ok(&rows[i]) {
			n++
		}
	}
	if n == len(rows) {
		return rows
	}
	out := make([]T, 0, n)
	for i := range rows {
		if ok(&rows[i]) {
			out = append(out, rows[i])
		}
	}
	return out
}

// widen returns [lo, hi] widened to hold t; a zero lo is an empty range.
func widen(lo, hi, t time.Time) (time.Time, time.Time) {
	if lo.IsZero() || t.Before(lo) {
		lo = t
	}
	if t.After(hi) {
		hi = t
	}
	return lo, hi
}

// queryStoredHalves returns which of the half event ids (requests, then
// responses) are stored in an exchange with their other half, within
// [lo, hi].
func (s *Store) queryStoredHalves(ctx context.Context, lo, hi time.Time, reqs, resps []string) (map[string]bool, error) {
	var selects []string
	args := []any{clickhouse.Named("lo", lo), clickhouse.Named("hi", hi)}
	if len(reqs) > 0 {
		selects = append(selects, storedHalvesBy[0])
		args = append(args, clickhouse.Named("requests", reqs))
	}
	if len(resps) > 0 {
		selects = append(selects, storedHalvesBy[1])
		args = append(args, clickhouse.Named("responses", resps))
	}
	paired := map[string]bool{}
	if len(selects) == 0 {
		return paired, nil
	}
	rows, err := s.conn.Query(ctx, strings.Join(selects, "\nUNION ALL\n"), args...)
	if err != nil {
		return nil, fmt.Errorf("look up stored halves: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var req, resp string
		if err := rows.Scan(&req, &resp); err != nil {
			return nil, fmt.Errorf("look up stored halves: %w", err)
		}
		paired[req], paired[resp] = true, true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up stored halves: %w", err)
	}
	return paired, nil
}

// nonEmpty keeps an empty id list from binding as an empty array literal
// of unknown type; "" never matches (halves have an id).
func nonEmpty(ids []string) []string {
	if len(ids) == 0 {
		return []string{""}
	}
	return ids
}
