package tap_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/tap"
)

// switchSink fails every attempt while down is set (after holding the
// attempt for a while, as an unreachable broker does) and otherwise keeps
// the events.
type switchSink struct {
	down    atomic.Bool
	hold    time.Duration
	mu      sync.Mutex
	ids     map[string]int
	batches int
}

func (s *switchSink) WriteEvents(ctx context.Context, evs []schema.Event) error {
	if s.down.Load() {
		select {
		case <-time.After(s.hold):
		case <-ctx.Done():
		}
		return errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[string]int{}
	}
	for _, ev := range evs {
		s.ids[ev.EventID]++
	}
	s.batches++
	return nil
}

func (s *switchSink) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}

func event(i int) schema.Event {
	return schema.Event{V: 1, EventID: fmt.Sprintf("ev-%06d", i), TS: time.Unix(1764600000, int64(i)).UTC(), Kind: schema.KindExchange,
		Source: schema.SourceGateway, HTTPMethod: "POST", HTTPStatus: 200, RequestBody: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		ResponseBody: `{"jsonrpc":"2.0","id":1,"result":{}}`}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestQueueSpillsWhileSinkIsDownAndDeliversAfter: with the sink down the
// memory queue fills, the rest goes to the spill files, nothing blocks the
// writers; once the sink is back every event arrives.
func TestQueueSpillsWhileSinkIsDownAndDeliversAfter(t *testing.T) {
	sink := &switchSink{hold: 50 * time.Millisecond}
	sink.down.Store(true)
	dir := t.TempDir()
	q, err := tap.NewQueue(tap.QueueConfig{Size: 100, Batch: 32, SpillDir: dir, RetryMin: time.Millisecond, RetryMax: 20 * time.Millisecond},
		tap.QueueDeps{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	var slowest time.Duration
	for i := range n {
		start := time.Now()
		if err := q.WriteEvent(t.Context(), event(i)); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		slowest = max(slowest, time.Since(start))
	}
	st := q.Stats()
	if st.Spilled < n-200 || st.Dropped != 0 {
		t.Errorf("stats while down %+v: want most spilled, none dropped", st)
	}
	t.Logf("slowest WriteEvent with the sink down: %v", slowest)
	sink.down.Store(false)
	waitFor(t, "every event delivered", func() bool { return sink.distinct() == n })
	if err := q.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("spill files left after delivery: %v", left)
	}
	if st := q.Stats(); st.Delivered < n || st.Dropped != 0 {
		t.Errorf("final stats %+v", st)
	}
}

// TestQueueDropsAndCountsWithoutSpill: no spill directory, a full memory
// queue drops, says so and counts it; nothing blocks.
func TestQueueDropsAndCountsWithoutSpill(t *testing.T) {
	sink := &switchSink{hold: time.Second}
	sink.down.Store(true)
	q, err := tap.NewQueue(tap.QueueConfig{Size: 10, Batch: 5, RetryMin: time.Millisecond}, tap.QueueDeps{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	var drops int
	for i := range 100 {
		if err := q.WriteEvent(t.Context(), event(i)); err != nil {
			drops++
		}
	}
	st := q.Stats()
	if drops == 0 || st.Dropped != int64(drops) || st.Dropped > 95 || st.Dropped < 80 {
		t.Errorf("%d WriteEvent errors, stats %+v: want every drop counted, at most the queue and one batch kept", drops, st)
	}
	sink.down.Store(false)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sink.distinct(); int64(got)+q.Stats().Dropped != 100 {
		t.Errorf("delivered %d + dropped %d != 100", got, q.Stats().Dropped)
	}
}

// TestQueueCloseSpillsAndNextRunDelivers: Close with the sink still down
// spills what waits in memory; a new Queue on the same directory delivers
// it, and a spill cap turns the excess into counted drops.
func TestQueueCloseSpillsAndNextRunDelivers(t *testing.T) {
	dir := t.TempDir()
	down := &switchSink{hold: 10 * time.Millisecond}
	down.down.Store(true)
	q, err := tap.NewQueue(tap.QueueConfig{Size: 1000, SpillDir: dir, RetryMin: time.Millisecond}, tap.QueueDeps{Sink: down})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if err := q.WriteEvent(t.Context(), event(i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := q.Stats(); st.Spilled != 300 || st.Dropped != 0 {
		t.Fatalf("after Close with the sink down: %+v, want all 300 spilled", st)
	}
	up := &switchSink{}
	q2, err := tap.NewQueue(tap.QueueConfig{SpillDir: dir}, tap.QueueDeps{Sink: up})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "spilled events delivered by the next run", func() bool { return up.distinct() == 300 })
	if err := q2.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Round trip: the spilled event is the event.
	up.mu.Lock()
	defer up.mu.Unlock()
	if up.ids["ev-000299"] != 1 {
		t.Errorf("ev-000299 delivered %d times", up.ids["ev-000299"])
	}

	capped, err := tap.NewQueue(tap.QueueConfig{Size: 1, Batch: 1, SpillDir: t.TempDir(), MaxSpillBytes: 2000, RetryMin: time.Millisecond},
		tap.QueueDeps{Sink: down})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		_ = capped.WriteEvent(t.Context(), event(i))
	}
	if st := capped.Stats(); st.Spilled == 0 || st.Dropped == 0 || st.Spilled+st.Dropped < 47 {
		t.Errorf("capped spill: %+v, want some spilled, the rest dropped and counted", st)
	}
	ctx2, cancel2 := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel2()
	_ = capped.Close(ctx2)
}

// TestSSEEndsWhileSinkIsDown is the first defect of issue 15: with the
// sink down, an SSE answer (chunked) must end as soon as the upstream ends
// it, not when the event is written.
func TestSSEEndsWhileSinkIsDown(t *testing.T) {
	sink := &switchSink{hold: time.Hour}
	sink.down.Store(true)
	q, err := tap.NewQueue(tap.QueueConfig{SpillDir: t.TempDir()}, tap.QueueDeps{Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_ = q.Close(ctx)
	}()
	rec, err := tap.New(tap.Config{}, tap.Deps{Writer: q, Next: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
		w.(http.Flusher).Flush()
	})})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	for i := range 20 {
		start := time.Now()
		resp := post(t, srv.URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, nil)
		_ = resp.Body.Close()
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("call %d took %v with the sink down", i, d)
		}
	}
	if st := q.Stats(); st.Delivered != 0 || st.Dropped != 0 {
		t.Errorf("stats %+v: want every event waiting, none delivered or dropped", st)
	}
}
