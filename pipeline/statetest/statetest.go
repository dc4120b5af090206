// Package statetest checks a pipeline.StateSink the way the ingest engine
// uses it, on the real store: the same sequences of runs, restarts and
// lost commits on every store that keeps the ingest state.
package statetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
)

// Store opens the store under test; Open is called once per run (a
// restart), and Rows returns the exchanges it holds as its readers see
// them, one row per distinct stored content of an exchange id.
type Store struct {
	Open func(t *testing.T) pipeline.StateSink
	Rows func(t *testing.T, s pipeline.StateSink) []schema.Exchange
}

// Source serves one partition's messages from a given offset, like a
// consumer group resuming at its committed offset, then blocks.
type Source struct {
	mu        sync.Mutex
	msgs      [][]byte
	next      int64
	committed int64
}

// Fetch implements pipeline.Source.
func (s *Source) Fetch(ctx context.Context) (pipeline.Message, error) {
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

// Commit implements pipeline.Source.
func (s *Source) Commit(_ context.Context, next []pipeline.Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range next {
		s.committed = max(s.committed, p.Offset)
	}
	return nil
}

// Close implements pipeline.Source.
func (s *Source) Close() error { return nil }

// NewSource serves msgs as partition mcp/0 from offset 0.
func NewSource(msgs ...[]byte) *Source { return &Source{msgs: msgs} }

// Committed returns the offset committed so far.
func (s *Source) Committed() int64 {
	_, c := s.state()
	return c
}

func (s *Source) state() (next, committed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next, s.committed
}

// RunUntil runs the engine over src into sink until pred holds, then
// stops it gracefully (SIGTERM).
func RunUntil(t *testing.T, sink pipeline.Sink, src *Source, pred func() bool) {
	t.Helper()
	cfg := pipeline.DefaultConfig()
	cfg.FlushInterval, cfg.RetryMin, cfg.RetryMax = 10*time.Millisecond, time.Millisecond, 10*time.Millisecond
	e, err := pipeline.New(cfg, pipeline.Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	deadline := time.Now().Add(60 * time.Second)
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

// RestartsResumeFromState is issue 12's case 2: two clean restarts while a
// request waits. The waiting request is kept in the state, so the offset
// is committed past it and the re-read tail (here also the whole
// partition again, as after a crash between the store's commit and
// Kafka's) is neither paired again nor stored twice: x-A once, x-L
// paired, no orphan, and the newest exchange (not yet past the watermark)
// waits in the state.
func RestartsResumeFromState(t *testing.T, st Store) {
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
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
	ctx := context.Background()
	store := st.Open(t)
	src := &Source{msgs: [][]byte{req("q-A", "x-A", 0), req("q-L", "x-L", 10*time.Millisecond), resp("r-A", "x-A", 60*time.Millisecond), ex("e-1", 8*time.Second)}}
	RunUntil(t, store, src, func() bool { _, c := src.state(); return c == 4 })
	if _, c := src.state(); c != 4 {
		t.Fatalf("committed %d after the first run, want 4: the waiting q-L is in the state", c)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	for run, from := range []int64{4, 0} { // resume at the commit; then as if the commit was lost
		store = st.Open(t)
		src.mu.Lock()
		src.next = from
		if run == 0 {
			src.msgs = append(src.msgs, resp("r-L", "x-L", 9*time.Second), ex("e-2", 70*time.Second))
		}
		n := int64(len(src.msgs))
		src.mu.Unlock()
		RunUntil(t, store, src, func() bool { _, c := src.state(); return c == n })
		got := map[string][]schema.Exchange{}
		for _, x := range st.Rows(t, store) {
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
		state, err := store.LoadState(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(state) != 1 || len(state[0].Saved) != 1 || state[0].Saved[0].Offset != n-1 || state[0].Mark.Next != n {
			t.Errorf("run %d: state %+v, want partition 0 handled up to %d with e-2 (offset %d) waiting", run+2, state, n, n-1)
		}
		if only, err := store.LoadState(ctx, []string{"other/0"}); err != nil || len(only) != 0 {
			t.Errorf("run %d: state of another stream %+v (%v), want none", run+2, only, err)
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// ReleasesOneEventOfAMessage: a message may hold several events; releasing
// one of them keeps the others of the same offset waiting.
func ReleasesOneEventOfAMessage(t *testing.T, st Store) {
	ctx := context.Background()
	store := st.Open(t)
	defer store.Close()
	ts := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	mark := schema.StreamMark{Stream: "otel/0", Topic: "otel", Next: 6, Low: 5, MaxTS: ts}
	saved := func(id string) schema.SavedEvent {
		return schema.SavedEvent{EventRef: schema.EventRef{Stream: "otel/0", Offset: 5, EventID: id}, TS: ts, Data: []byte(id + "\x00\xff")}
	}
	write := func(b *schema.Batch) {
		t.Helper()
		if err := store.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	write(&schema.Batch{Token: "t1", State: schema.State{Streams: []schema.StreamMark{mark}, Saved: []schema.SavedEvent{saved("a"), saved("b")}}})
	mark.Next = 7
	write(&schema.Batch{Token: "t2", State: schema.State{Streams: []schema.StreamMark{mark}, Released: []schema.EventRef{{Stream: "otel/0", Offset: 5, EventID: "a"}}}})
	state, err := store.LoadState(ctx, []string{"otel/0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(state) != 1 || state[0].Mark.Next != 7 || !state[0].Mark.MaxTS.Equal(ts) || len(state[0].Saved) != 1 ||
		state[0].Saved[0].EventID != "b" || string(state[0].Saved[0].Data) != "b\x00\xff" {
		t.Errorf("state %+v, want otel/0 at 7 with b waiting, its bytes as saved", state)
	}
}

// KeepsHeldOffsets: a mark's held offsets come back as written, those of
// the newest mark of a stream when its offset did not move, and none once
// a mark holds none; the merges' extra wait comes back as the newest mark
// learned it.
func KeepsHeldOffsets(t *testing.T, st Store) {
	ctx := context.Background()
	store := st.Open(t)
	defer store.Close()
	ts := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	load := func(want schema.StreamMark) {
		t.Helper()
		state, err := store.LoadState(ctx, []string{want.Stream})
		if err != nil {
			t.Fatal(err)
		}
		if len(state) != 1 || state[0].Mark.Next != want.Next || !slices.Equal(state[0].Mark.Held, want.Held) {
			t.Errorf("state %+v, want %s at %d holding %v", state, want.Stream, want.Next, want.Held)
		}
		if len(state) == 1 && (state[0].Mark.MergeLag != want.MergeLag || !state[0].Mark.MergeLagAt.Equal(want.MergeLagAt)) {
			t.Errorf("merge lag %v at %v, want %v at %v", state[0].Mark.MergeLag, state[0].Mark.MergeLagAt, want.MergeLag, want.MergeLagAt)
		}
	}
	lagAt := ts.Add(-time.Minute).Add(123 * time.Nanosecond)
	mark := schema.StreamMark{Stream: "mcp/3", Topic: "mcp", Partition: 3, Next: 10, Low: 10, MaxTS: ts, Held: []int64{3, 8, 1 << 40},
		MergeLag: 1500 * time.Millisecond, MergeLagAt: lagAt}
	for i, m := range []schema.StreamMark{mark, {Stream: "mcp/3", Topic: "mcp", Partition: 3, Next: 10, Low: 10, MaxTS: ts, Held: []int64{8},
		MergeLag: 700 * time.Millisecond, MergeLagAt: lagAt.Add(time.Second)},
		{Stream: "mcp/3", Topic: "mcp", Partition: 3, Next: 12, Low: 12, MaxTS: ts, MergeLag: 700 * time.Millisecond, MergeLagAt: lagAt.Add(time.Second)}} {
		// Apart in time: a store that keeps every mark orders those of
		// one offset by when they were written (to the millisecond).
		time.Sleep(5 * time.Millisecond)
		if err := store.Write(ctx, &schema.Batch{Token: fmt.Sprintf("held-%d", i), State: schema.State{Streams: []schema.StreamMark{m}}}); err != nil {
			t.Fatal(err)
		}
		load(m)
	}
}
