package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/schema"
)

// gatedSource serves its slice's lines up to gate, then blocks (as a
// Kafka fetch does when nothing new comes) until open is closed. Source
// serves the lines: the slice itself, or a source over it.
type gatedSource struct {
	Source
	slice *sliceSource
	gate  int
	open  chan struct{}
}

func newGatedSource(slice *sliceSource, src Source, gate int) *gatedSource {
	return &gatedSource{Source: src, slice: slice, gate: gate, open: make(chan struct{})}
}

func (s *gatedSource) Fetch(ctx context.Context) (Message, error) {
	s.slice.mu.Lock()
	at := s.slice.i
	s.slice.mu.Unlock()
	if at == s.gate {
		select {
		case <-s.open:
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
	return s.Source.Fetch(ctx)
}

// outageSink is a store that is down for a long while (on the fake wall
// clock) at the write of the first quarantine row, the line just before
// the source's gate, so the engine has handled everything read so far;
// the retry succeeds.
type outageSink struct {
	memSink
	src    *gatedSource
	clock  *atomic.Int64 // unix nanoseconds
	outage time.Duration
	done   bool
}

func (s *outageSink) Write(ctx context.Context, b *schema.Batch) error {
	if len(b.Quarantine) > 0 && !s.done {
		s.done = true
		s.clock.Add(int64(s.outage))
		// The loop's ticker fires while the source has nothing new;
		// then the rest of the input comes.
		time.AfterFunc(100*time.Millisecond, func() { close(s.src.open) })
		return errors.New("store down")
	}
	return s.memSink.Write(ctx, b)
}

// A store outage longer than --idle-advance is not the source being idle:
// requests read before it still meet their responses read after it, and
// no exchange is handed to the store twice. (Counted as idle, the outage
// jumped event time ahead, expired the waiting requests alone and made
// each response a second record of its exchange: TestServerFaults saw
// 12,380 rows for 12,000 exchanges on a loaded machine.)
func TestStoreOutageIsNotIdleness(t *testing.T) {
	const n = 400
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var lines [][]byte
	line := func(kind string, i int, ts time.Time) {
		body := fmt.Sprintf(`"request_body":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}"`, i)
		if kind == "response" {
			body = fmt.Sprintf(`"http.status":200,"response_body":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[]}}"`, i)
		}
		lines = append(lines, fmt.Appendf(nil, `{"v":1,"kind":%q,"event_id":"%s-%d","source":"gateway","observer":"gw","server":"srv","session_id":"s","exchange_id":"x-%d","ts":%q,"http.method":"POST",%s}`,
			kind, kind[:3], i, i, ts.Format(time.RFC3339Nano), body))
	}
	gate := 0
	for i := range n {
		ts := base.Add(time.Duration(i) * 50 * time.Millisecond)
		if i == n/2 {
			lines = append(lines, []byte(`{"v":1,"kind":"request"`)) // quarantined: the outage's cue
			gate = len(lines)
		}
		line("request", i, ts)
		if i >= 3 { // each response a few requests later, 150-300 ms after its request
			line("response", i-3, ts.Add(time.Duration(i%4)*50*time.Millisecond))
		}
	}
	for i := n - 3; i < n; i++ {
		line("response", i, base.Add(time.Duration(i)*50*time.Millisecond+300*time.Millisecond))
	}

	var clock atomic.Int64
	clock.Store(base.UnixNano())
	slice := newSliceSource("f", lines)
	src := newGatedSource(slice, slice, gate)
	sink := &outageSink{src: src, clock: &clock, outage: 30 * time.Second}
	cfg := testConfig()
	cfg.IdleAdvance = 5 * time.Second
	cfg.Correlator.PairWindow, cfg.Correlator.Lateness, cfg.Correlator.MergeWindow = 3*time.Second, 100*time.Millisecond, 100*time.Millisecond
	e, err := New(cfg, Deps{Source: src, Sink: sink, Logger: zerolog.Nop(), Now: func() time.Time { return time.Unix(0, clock.Load()).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !sink.done {
		t.Fatal("the outage never happened")
	}
	seen := map[string]int{}
	for _, x := range sink.exchanges {
		seen[x.ExchangeID]++
		if x.Outcome != "TOOL_SUCCESS" {
			t.Errorf("%s: outcome %s (%s), want TOOL_SUCCESS: its request was expired alone", x.ExchangeID, x.Outcome, x.NoResponseReason)
		}
	}
	for i := range n {
		if id := fmt.Sprintf("x-%d", i); seen[id] != 1 {
			t.Errorf("%s handed to the store %d times, want once", id, seen[id])
		}
	}
}
