package duckstore

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
)

// logSource serves one partition's messages from a given offset, like a
// consumer group resuming at its committed offset, then blocks.
type logSource struct {
	mu        sync.Mutex
	msgs      [][]byte
	next      int64
	committed int64
}

func (s *logSource) Fetch(ctx context.Context) (pipeline.Message, error) {
	s.mu.Lock()
	if int(s.next) < len(s.msgs) {
		m := pipeline.Message{Value: s.msgs[s.next], Pos: pipeline.Position{Stream: "mcp/0", Topic: "mcp", Offset: s.next}}
		s.next++
		s.mu.Unlock()
		return m, nil
	}
	s.mu.Unlock()
	<-ctx.Done()
	return pipeline.Message{}, ctx.Err()
}

func (s *logSource) Commit(_ context.Context, next []pipeline.Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range next {
		s.committed = max(s.committed, p.Offset)
	}
	return nil
}

func (s *logSource) Close() error { return nil }

func (s *logSource) state() (next, committed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next, s.committed
}

// runUntil runs the engine over src into store until pred holds, then
// stops it gracefully (SIGTERM).
func runUntil(t *testing.T, store *Store, src *logSource, pred func() bool) {
	t.Helper()
	cfg := pipeline.DefaultConfig()
	cfg.FlushInterval, cfg.RetryMin, cfg.RetryMax = 10*time.Millisecond, time.Millisecond, 10*time.Millisecond
	e, err := pipeline.New(cfg, pipeline.Deps{Source: src, Sink: store, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for !pred() {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func storedRows(t *testing.T, s *Store) []schema.Exchange {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(),
		`SELECT exchange_id, request_event_id, response_event_id, outcome FROM exchanges ORDER BY ts, exchange_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []schema.Exchange
	for rows.Next() {
		var x schema.Exchange
		if err := rows.Scan(&x.ExchangeID, &x.RequestEventID, &x.ResponseEventID, &x.Outcome); err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Issue 12, case 2: two clean restarts while a request waits. The waiting
// request is kept in the state, so the offset is committed past it and
// the re-read tail (here also the whole partition again, as after a crash
// between the store's commit and Kafka's) is neither paired again nor
// stored twice: x-A once, x-L paired, no orphan, and the newest exchange
// (not yet past the watermark) waits in the state.
func TestRestartsResumeFromState(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339Nano) }
	req := func(id, x string, d time.Duration) []byte {
		return fmt.Appendf(nil, `{"event_id":%q,"ts":%q,"kind":"request","source":"gateway","exchange_id":%q,"server":"kv","http.method":"POST","request_body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}"}`, id, at(d), x)
	}
	resp := func(id, x string, d time.Duration) []byte {
		return fmt.Appendf(nil, `{"event_id":%q,"ts":%q,"kind":"response","source":"gateway","exchange_id":%q,"server":"kv","http.status":200,"http.response_headers":{"content-type":"application/json"},"response_body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}"}`, id, at(d), x)
	}
	ex := func(id string, d time.Duration) []byte {
		return fmt.Appendf(nil, `{"event_id":%q,"ts":%q,"kind":"exchange","source":"gateway","server":"kv","http.method":"POST","http.status":202,"request_body":"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}","response_body":""}`, id, at(d))
	}
	path := filepath.Join(t.TempDir(), "state.duckdb")
	ctx := context.Background()
	store, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := &logSource{msgs: [][]byte{req("q-A", "x-A", 0), req("q-L", "x-L", 10*time.Millisecond), resp("r-A", "x-A", 60*time.Millisecond), ex("e-1", 8*time.Second)}}
	runUntil(t, store, src, func() bool { _, c := src.state(); return c == 4 })
	if _, c := src.state(); c != 4 {
		t.Fatalf("committed %d after the first run, want 4: the waiting q-L is in the state", c)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	for run, from := range []int64{4, 0} { // resume at the commit; then as if the commit was lost
		store, err = Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		src.mu.Lock()
		src.next = from
		if run == 0 {
			src.msgs = append(src.msgs, resp("r-L", "x-L", 9*time.Second), ex("e-2", 70*time.Second))
		}
		n := int64(len(src.msgs))
		src.mu.Unlock()
		runUntil(t, store, src, func() bool { _, c := src.state(); return c == n })
		got := map[string][]schema.Exchange{}
		for _, x := range storedRows(t, store) {
			got[x.ExchangeID] = append(got[x.ExchangeID], x)
			if x.RequestEventID == "" || x.Outcome == classify.NoResponse {
				t.Errorf("run %d: a half stored alone: %+v", run+2, x)
			}
		}
		if a := got["x-A"]; len(a) != 1 || a[0].Outcome != classify.ToolSuccess {
			t.Errorf("run %d: x-A stored as %+v, want once as TOOL_SUCCESS", run+2, a)
		}
		if l := got["x-L"]; len(l) != 1 || l[0].ResponseEventID != "r-L" {
			t.Errorf("run %d: x-L stored as %+v, want once, paired with r-L", run+2, l)
		}
		if len(got) != 3 {
			t.Errorf("run %d: %d exchanges stored, want 3 (e-2, the newest, waits for the watermark): %v", run+2, len(got), got)
		}
		st, err := store.LoadState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(st) != 1 || len(st[0].Saved) != 1 || st[0].Saved[0].Offset != n-1 || st[0].Mark.Next != n {
			t.Errorf("run %d: state %+v, want partition 0 handled up to %d with e-2 (offset %d) waiting", run+2, st, n, n-1)
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

var _ io.Closer = (*logSource)(nil)

// A message may hold several events: releasing one of them keeps the
// others of the same offset waiting.
func TestStateReleasesOneEventOfAMessage(t *testing.T) {
	ctx := context.Background()
	store, err := Open(ctx, filepath.Join(t.TempDir(), "multi.duckdb"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ts := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	mark := schema.StreamMark{Stream: "otel/0", Topic: "otel", Next: 6, MaxTS: ts}
	saved := func(id string) schema.SavedEvent {
		return schema.SavedEvent{EventRef: schema.EventRef{Stream: "otel/0", Offset: 5, EventID: id}, TS: ts, Data: []byte(id)}
	}
	if err := store.Write(ctx, &schema.Batch{State: schema.State{Streams: []schema.StreamMark{mark}, Saved: []schema.SavedEvent{saved("a"), saved("b")}}}); err != nil {
		t.Fatal(err)
	}
	mark.Next = 7
	if err := store.Write(ctx, &schema.Batch{State: schema.State{Streams: []schema.StreamMark{mark}, Released: []schema.EventRef{{Stream: "otel/0", Offset: 5, EventID: "a"}}}}); err != nil {
		t.Fatal(err)
	}
	st, err := store.LoadState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].Mark.Next != 7 || !st[0].Mark.MaxTS.Equal(ts) || len(st[0].Saved) != 1 || st[0].Saved[0].EventID != "b" || string(st[0].Saved[0].Data) != "b" {
		t.Errorf("state %+v, want otel/0 at 7 with b waiting", st)
	}
}
