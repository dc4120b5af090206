package chstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/statetest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

var _ pipeline.StateSink = (*Store)(nil)

// stateStore opens one fresh database on the real server again for every
// run, as a restarted ingester does.
func stateStore(t *testing.T) statetest.Store {
	s, _ := openFresh(t, clickhousetest.DSN(t))
	dsn := clickhousetest.WithDatabase(t, clickhousetest.DSN(t), s.db)
	return statetest.Store{
		Open: func(t *testing.T) pipeline.StateSink {
			s, err := Open(t.Context(), dsn, DefaultConfig(), zerolog.Nop(), nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Rows: func(t *testing.T, s pipeline.StateSink) []schema.Exchange { return distinctRows(t, s.(*Store)) },
	}
}

// distinctRows are the stored exchanges, one row per distinct content of
// an exchange id: a replayed identical row is what readers collapse
// (LIMIT 1 BY exchange_id), two contents of one id are a double.
func distinctRows(t *testing.T, s *Store) []schema.Exchange {
	t.Helper()
	rows, err := s.conn.Query(context.Background(),
		`SELECT DISTINCT exchange_id, request_event_id, response_event_id, outcome FROM exchanges ORDER BY exchange_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []schema.Exchange
	for rows.Next() {
		var x schema.Exchange
		var outcome string
		if err := rows.Scan(&x.ExchangeID, &x.RequestEventID, &x.ResponseEventID, &outcome); err != nil {
			t.Fatal(err)
		}
		x.Outcome = classify.Outcome(outcome)
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRestartsResumeFromState(t *testing.T) { statetest.RestartsResumeFromState(t, stateStore(t)) }

func TestStateReleasesOneEventOfAMessage(t *testing.T) {
	statetest.ReleasesOneEventOfAMessage(t, stateStore(t))
}

func TestStateKeepsHeldOffsets(t *testing.T) { statetest.KeepsHeldOffsets(t, stateStore(t)) }

// ClickHouse has no transaction across the state tables: a batch written
// again (a retry after a lost acknowledgement) or a mark written late by a
// stream's previous owner must neither move the stream back nor bring a
// released event back, and a load reads from the smallest low offset of
// the recent marks, the previous owner's included.
func TestStateLateAndRepeatedWrites(t *testing.T) {
	s, _ := openFresh(t, clickhousetest.DSN(t))
	ctx := t.Context()
	ts := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	saved := func(off int64, id string) schema.SavedEvent {
		return schema.SavedEvent{EventRef: schema.EventRef{Stream: "mcp/3", Offset: off, EventID: id}, TS: ts, Data: []byte(id)}
	}
	mark := func(next, low int64) []schema.StreamMark {
		return []schema.StreamMark{{Stream: "mcp/3", Topic: "mcp", Partition: 3, Next: next, Low: low, MaxTS: ts.Add(time.Duration(next) * time.Second)}}
	}
	for _, b := range []schema.Batch{
		{Token: "a", State: schema.State{Streams: mark(10, 4), Saved: []schema.SavedEvent{saved(4, "q4"), saved(9, "q9")}}},
		// The new owner: q4 answered and released, q12 waits.
		{Token: "b", State: schema.State{Streams: mark(20, 9), Saved: []schema.SavedEvent{saved(12, "q12")}, Released: []schema.EventRef{saved(4, "q4").EventRef}}},
		// The previous owner's batch "a" again, late.
		{Token: "a", State: schema.State{Streams: mark(10, 4), Saved: []schema.SavedEvent{saved(4, "q4"), saved(9, "q9")}}},
		// A previous owner's late mark, under another token.
		{Token: "c", State: schema.State{Streams: mark(15, 2), Saved: []schema.SavedEvent{saved(2, "q2")}}},
	} {
		if err := s.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
	}
	state, err := s.LoadState(ctx, []string{"mcp/3", "mcp/4"})
	if err != nil {
		t.Fatal(err)
	}
	if len(state) != 1 {
		t.Fatalf("state of %d streams, want 1: %+v", len(state), state)
	}
	m := state[0].Mark
	if m.Next != 20 || m.Low != 2 || m.Partition != 3 || m.Topic != "mcp" || !m.MaxTS.Equal(ts.Add(20*time.Second)) {
		t.Errorf("mark %+v, want next 20 (the largest), low 2 (the smallest recent), partition 3, newest event time", m)
	}
	var ids []string
	for _, sv := range state[0].Saved {
		ids = append(ids, sv.EventID)
	}
	if want := []string{"q2", "q9", "q12"}; !equalStrings(ids, want) {
		t.Errorf("waiting %v, want %v (q4 released, each once, in offset order)", ids, want)
	}
	if all, err := s.LoadState(ctx, nil); err != nil || len(all) != 1 || len(all[0].Saved) != 3 {
		t.Errorf("every stream's state %+v (%v), want the one stream", all, err)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A half whose event is already stored with its other half (the response
// re-read after a restart without its request, the request whose
// response was stored with it) is not stored again: neither as an orphan
// of its own nor as a NO_RESPONSE replacing the complete row. A half of
// another call is stored.
func TestStoredHalvesSkipped(t *testing.T) {
	s, _ := openFresh(t, clickhousetest.DSN(t))
	ctx := t.Context()
	ts := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	x := func(id, req, resp string, outcome classify.Outcome, at time.Time) schema.Exchange {
		e := schema.Exchange{ExchangeID: id, RequestEventID: req, ResponseEventID: resp, TS: at, EndTS: at, Server: "kv"}
		e.Outcome = outcome
		return e
	}
	body := func(id string, at time.Time) schema.Body { return schema.Body{ExchangeID: id, TS: at} }
	first := schema.Batch{Token: "1", Exchanges: []schema.Exchange{x("x-1", "q-1", "r-1", classify.ToolSuccess, ts)}, Bodies: []schema.Body{body("x-1", ts)}}
	if err := s.Write(ctx, &first); err != nil {
		t.Fatal(err)
	}
	late := ts.Add(40 * time.Second)
	again := schema.Batch{Token: "2",
		Exchanges: []schema.Exchange{
			x("o-r-1", "", "r-1", classify.Success, late),      // orphan of a stored pair
			x("x-1", "q-1", "", classify.NoResponse, ts),       // NO_RESPONSE of a stored pair
			x("o-r-9", "", "r-9", classify.Success, late),      // a true orphan
			x("x-2", "q-2", "r-2", classify.ToolSuccess, late), // a complete exchange
		},
		Bodies: []schema.Body{body("o-r-1", late), body("x-1", ts), body("o-r-9", late), body("x-2", late)},
	}
	if err := s.Write(ctx, &again); err != nil {
		t.Fatal(err)
	}
	got := map[string]classify.Outcome{}
	for _, r := range distinctRows(t, s) {
		if prev, ok := got[r.ExchangeID]; ok {
			t.Errorf("%s stored as %s and %s", r.ExchangeID, prev, r.Outcome)
		}
		got[r.ExchangeID] = r.Outcome
	}
	want := map[string]classify.Outcome{"x-1": classify.ToolSuccess, "o-r-9": classify.Success, "x-2": classify.ToolSuccess}
	if len(got) != len(want) {
		t.Errorf("stored %v, want %v", got, want)
	}
	for id, o := range want {
		if got[id] != o {
			t.Errorf("%s stored as %q, want %q", id, got[id], o)
		}
	}
	if n := count(t, s, `SELECT count() FROM exchange_bodies WHERE exchange_id = 'o-r-1'`); n != 0 {
		t.Errorf("%d bodies of the skipped orphan stored", n)
	}
	if len(again.Exchanges) != 4 {
		t.Errorf("the caller's batch changed: %d exchanges", len(again.Exchanges))
	}
}

// A batch cut off between its rows and its marks (the ingester killed,
// the server gone) leaves exchanges and a quarantined line stored past
// the stream's mark. Its intent tells the next load where the unsure
// range ends, and the batch that forms those rows again (another token)
// leaves out the ones stored: each row once, the new ones stored.
func TestTornBatchStoredOnce(t *testing.T) {
	s, _ := openFresh(t, clickhousetest.DSN(t))
	ctx := t.Context()
	ts := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	x := func(id string) schema.Exchange {
		e := schema.Exchange{ExchangeID: id, RequestEventID: "q-" + id, ResponseEventID: "r-" + id, TS: ts, EndTS: ts, Server: "kv"}
		e.Outcome = classify.ToolSuccess
		return e
	}
	body := func(id string) schema.Body { return schema.Body{ExchangeID: id, TS: ts} }
	q := func(pos string) schema.Quarantined {
		return schema.Quarantined{TS: time.Now().UTC().Truncate(time.Millisecond), Position: pos, Reason: "poison", Raw: []byte("{")}
	}
	mark := func(next int64) []schema.StreamMark {
		return []schema.StreamMark{{Stream: "t/0", Topic: "t", Next: next, Low: next, MaxTS: ts}}
	}
	first := schema.Batch{Token: "1", Exchanges: []schema.Exchange{x("x-1")}, Bodies: []schema.Body{body("x-1")}, State: schema.State{Streams: mark(2)}}
	if err := s.Write(ctx, &first); err != nil {
		t.Fatal(err)
	}

	insert := s.insert
	s.insert = func(ctx context.Context, table string, cols []string, data []any, token string) error {
		if table == "ingest_streams" {
			return errors.New("killed before the marks")
		}
		return insert(ctx, table, cols, data, token)
	}
	torn := schema.Batch{Token: "2", Exchanges: []schema.Exchange{x("x-2"), x("x-3")}, Bodies: []schema.Body{body("x-2"), body("x-3")},
		Quarantine: []schema.Quarantined{q("t/0/4")}, State: schema.State{Streams: mark(6)}}
	if err := s.Write(ctx, &torn); err == nil {
		t.Fatal("the torn write succeeded")
	}
	s.insert = insert

	state, err := s.LoadState(ctx, []string{"t/0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(state) != 1 || state[0].Mark.Next != 2 || state[0].Unsure != 6 {
		t.Fatalf("state %+v, want t/0 resumed at 2, unsure up to 6", state)
	}
	again := schema.Batch{Token: "3",
		Exchanges:  []schema.Exchange{x("x-2"), x("x-3"), x("x-4"), x("x-5")},
		Bodies:     []schema.Body{body("x-2"), body("x-3"), body("x-4"), body("x-5")},
		Quarantine: []schema.Quarantined{q("t/0/4"), q("t/0/7")},
		Unsure:     schema.Unsure{Exchanges: []string{"x-2", "x-3", "x-4"}, Quarantine: []string{"t/0/4"}},
		State:      schema.State{Streams: mark(9)},
	}
	if err := s.Write(ctx, &again); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"x-1", "x-2", "x-3", "x-4", "x-5"} {
		if n := count(t, s, "SELECT count() FROM exchanges WHERE exchange_id = '"+id+"'"); n != 1 {
			t.Errorf("%s stored %d times, want once", id, n)
		}
		if n := count(t, s, "SELECT count() FROM exchange_bodies WHERE exchange_id = '"+id+"'"); n != 1 {
			t.Errorf("the body of %s stored %d times, want once", id, n)
		}
	}
	for _, pos := range []string{"t/0/4", "t/0/7"} {
		if n := count(t, s, "SELECT count() FROM quarantine WHERE position = '"+pos+"'"); n != 1 {
			t.Errorf("%s quarantined %d times, want once", pos, n)
		}
	}
	if len(again.Exchanges) != 4 || len(again.Quarantine) != 2 {
		t.Errorf("the caller's batch changed: %d exchanges, %d quarantined", len(again.Exchanges), len(again.Quarantine))
	}
	if state, err = s.LoadState(ctx, []string{"t/0"}); err != nil || len(state) != 1 || state[0].Mark.Next != 9 || state[0].Unsure != 0 {
		t.Errorf("state %+v (%v), want t/0 at 9 with nothing unsure", state, err)
	}
}

// A stream whose very first batch is cut off before its marks has an
// intent and no mark: it loads as a stream resumed from its start, with
// the batch's range unsure.
func TestTornFirstBatchLoadsUnsure(t *testing.T) {
	s, _ := openFresh(t, clickhousetest.DSN(t))
	ctx := t.Context()
	ts := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	insert := s.insert
	s.insert = func(ctx context.Context, table string, cols []string, data []any, token string) error {
		if table == "ingest_streams" {
			return errors.New("killed before the marks")
		}
		return insert(ctx, table, cols, data, token)
	}
	x := schema.Exchange{ExchangeID: "x-1", TS: ts, EndTS: ts, Server: "kv"}
	torn := schema.Batch{Token: "1", Exchanges: []schema.Exchange{x}, Bodies: []schema.Body{{ExchangeID: "x-1", TS: ts}},
		State: schema.State{Streams: []schema.StreamMark{{Stream: "t/2", Topic: "t", Partition: 2, Next: 4, Low: 4, MaxTS: ts}}}}
	if err := s.Write(ctx, &torn); err == nil {
		t.Fatal("the torn write succeeded")
	}
	for _, streams := range [][]string{nil, {"t/2"}} {
		state, err := s.LoadState(ctx, streams)
		if err != nil {
			t.Fatal(err)
		}
		want := schema.StreamMark{Stream: "t/2", Topic: "t", Partition: 2}
		if len(state) != 1 || !reflect.DeepEqual(state[0].Mark, want) || state[0].Unsure != 4 {
			t.Errorf("LoadState(%v) = %+v, want t/2 from its start, unsure up to 4", streams, state)
		}
	}
	if state, err := s.LoadState(ctx, []string{"t/0"}); err != nil || len(state) != 0 {
		t.Errorf("LoadState(t/0) = %+v (%v), want nothing", state, err)
	}
}

// TestLeaveOut holds leaveOut to its contract: the rows named are gone
// from every table they are in, the rest stay in order, the batch given
// is unchanged, and a table with nothing to leave out is the same array.
func TestLeaveOut(t *testing.T) {
	b := &schema.Batch{Token: "t"}
	for i := range 7 {
		id := fmt.Sprintf("x%d", i)
		b.Exchanges = append(b.Exchanges, schema.Exchange{ExchangeID: id})
		if i%2 == 0 {
			b.Bodies = append(b.Bodies, schema.Body{ExchangeID: id})
		}
	}
	b.Quarantine = []schema.Quarantined{{Position: "p0"}, {Position: "p1"}}
	before := *b
	before.Exchanges = slices.Clone(b.Exchanges)
	before.Bodies = slices.Clone(b.Bodies)

	out := leaveOut(b, map[string]bool{"x0": true, "x3": true, "x6": true, "nope": true}, map[string]bool{"p9": true})
	ids := func(xs []schema.Exchange) (s []string) {
		for _, x := range xs {
			s = append(s, x.ExchangeID)
		}
		return s
	}
	bodyIDs := func(xs []schema.Body) (s []string) {
		for _, x := range xs {
			s = append(s, x.ExchangeID)
		}
		return s
	}
	if got, want := ids(out.Exchanges), []string{"x1", "x2", "x4", "x5"}; !slices.Equal(got, want) {
		t.Errorf("exchanges %v, want %v", got, want)
	}
	if got, want := bodyIDs(out.Bodies), []string{"x2", "x4"}; !slices.Equal(got, want) {
		t.Errorf("bodies %v, want %v", got, want)
	}
	if len(out.Quarantine) != 2 || &out.Quarantine[0] != &b.Quarantine[0] {
		t.Errorf("quarantine with nothing left out is not the same array: %v", out.Quarantine)
	}
	if out.Token != "t" {
		t.Errorf("token %q, want t", out.Token)
	}
	if !slices.Equal(ids(b.Exchanges), ids(before.Exchanges)) || !slices.Equal(bodyIDs(b.Bodies), bodyIDs(before.Bodies)) || len(b.Quarantine) != 2 {
		t.Errorf("the batch given was changed: %v %v", ids(b.Exchanges), bodyIDs(b.Bodies))
	}
	if cap(out.Exchanges) != len(out.Exchanges) {
		t.Errorf("exchanges copied into %d places for %d rows", cap(out.Exchanges), len(out.Exchanges))
	}

	out = leaveOut(b, nil, map[string]bool{"p0": true})
	if len(out.Exchanges) != 7 || &out.Exchanges[0] != &b.Exchanges[0] {
		t.Error("exchanges with nothing left out were copied")
	}
	if len(out.Quarantine) != 1 || out.Quarantine[0].Position != "p1" {
		t.Errorf("quarantine %v, want [p1]", out.Quarantine)
	}
}

// TestStoredHalvesLookupMatchesOnlyItsIDs: the stored-halves lookup
// answers for the ids it is given alone. Before, an empty list was bound
// as an array of the empty string, which matched every stored half of the
// other kind in the range (every NO_RESPONSE row for a batch without
// response halves), so each such batch was copied whole for nothing.
func TestStoredHalvesLookupMatchesOnlyItsIDs(t *testing.T) {
	s, _ := openFresh(t, clickhousetest.DSN(t))
	ctx := t.Context()
	ts := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	x := func(id, req, resp string, outcome classify.Outcome) schema.Exchange {
		e := schema.Exchange{ExchangeID: id, RequestEventID: req, ResponseEventID: resp, TS: ts, EndTS: ts, Server: "kv"}
		e.Outcome = outcome
		return e
	}
	b := schema.Batch{Token: "1", Exchanges: []schema.Exchange{
		x("x-7", "q-7", "", classify.NoResponse),
		x("o-8", "", "r-8", classify.Success),
		x("x-9", "q-9", "r-9", classify.ToolSuccess),
	}}
	if err := s.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	lo, hi := ts.Add(-time.Minute), ts.Add(time.Minute)
	for _, tc := range []struct {
		reqs, resps []string
		want        []string
	}{
		{reqs: []string{"q-new"}},
		{resps: []string{"r-new"}},
		{reqs: []string{"q-7"}, resps: []string{"r-8"}}, // halves stored alone are no pairs
		{reqs: []string{"q-9"}, want: []string{"q-9", "r-9"}},
		{resps: []string{"r-9"}, want: []string{"q-9", "r-9"}},
	} {
		got, err := s.queryStoredHalves(ctx, lo, hi, tc.reqs, tc.resps)
		if err != nil {
			t.Fatal(err)
		}
		if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, tc.want) {
			t.Errorf("requests %v, responses %v: paired %v, want %v", tc.reqs, tc.resps, keys, tc.want)
		}
	}
}

// TestStoredHalvesLookupReadsOnlyItsGranules: the lookup of a few halves
// reads the granules that may hold them, not the range. In the table,
// every granule holds complete exchanges, requests stored alone and
// responses stored alone (so every granule's bloom filters hold the
// empty string for one id or the other), as a long run's exchanges do.
// Before, the lookup tested both id columns in one OR, which no skip
// index can answer for, and bound an empty list as an array of the empty
// string, so it read every row of the range: a fifth of the server's CPU
// while it took the 12-minute topic.
func TestStoredHalvesLookupReadsOnlyItsGranules(t *testing.T) {
	s, _ := openFresh(t, clickhousetest.DSN(t))
	ctx := t.Context()
	const rows = 120_000 // 15 granules of 8,192 rows
	ts := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	b := schema.Batch{Token: "1", Exchanges: make([]schema.Exchange, rows)}
	for i := range b.Exchanges {
		x := &b.Exchanges[i]
		x.ExchangeID, x.Server = fmt.Sprintf("x-%d", i), "kv"
		x.TS = ts.Add(time.Duration(i) * time.Millisecond)
		x.EndTS = x.TS
		x.Outcome = classify.ToolSuccess
		switch i % 50 {
		case 7:
			x.RequestEventID, x.Outcome = fmt.Sprintf("q-%d", i), classify.NoResponse
		case 8:
			x.ResponseEventID, x.Outcome = fmt.Sprintf("r-%d", i), classify.Success
		default:
			x.RequestEventID, x.ResponseEventID = fmt.Sprintf("q-%d", i), fmt.Sprintf("r-%d", i)
		}
	}
	if err := s.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	lo, hi := ts.Add(-time.Minute), ts.Add(time.Duration(rows)*time.Millisecond+time.Minute)
	for _, tc := range []struct {
		reqs, resps []string
		want        []string
	}{
		{reqs: []string{"q-60001"}, want: []string{"q-60001", "r-60001"}},
		{resps: []string{"r-100003"}, want: []string{"q-100003", "r-100003"}},
		{reqs: []string{"q-60007", "q-new"}, resps: []string{"r-60008", "r-new"}}, // stored alone: no pairs
		{reqs: []string{"q-30001"}, resps: []string{"r-90001"}, want: []string{"q-30001", "q-90001", "r-30001", "r-90001"}},
	} {
		var read uint64
		pctx := clickhouse.Context(ctx, clickhouse.WithProgress(func(p *clickhouse.Progress) { read += p.Rows }))
		got, err := s.queryStoredHalves(pctx, lo, hi, tc.reqs, tc.resps)
		if err != nil {
			t.Fatal(err)
		}
		if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, tc.want) {
			t.Errorf("requests %v, responses %v: paired %v, want %v", tc.reqs, tc.resps, keys, tc.want)
		}
		// A granule or two per id and part; the range holds 120,000 rows.
		if limit := uint64(4 * 8192 * (len(tc.reqs) + len(tc.resps))); read > limit {
			t.Errorf("requests %v, responses %v: the lookup read %d rows of %d, want at most %d", tc.reqs, tc.resps, read, rows, limit)
		}
	}
}
