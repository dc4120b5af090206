package pipeline

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/schema"
)

var errNoTable = errors.New("table mcplens.exchanges does not exist")

// refusingSink fails every write with errNoTable from its first write on,
// or, with transient set, with an outage error until heal writes have
// failed; it calls errNoTable permanent.
type refusingSink struct {
	memSink
	mu        sync.Mutex
	transient bool
	heal      int
	failures  int
}

func (s *refusingSink) Write(ctx context.Context, b *schema.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.transient {
		s.failures++
		return errNoTable
	}
	if s.failures < s.heal {
		s.failures++
		return errors.New("connection refused")
	}
	return s.memSink.Write(ctx, b)
}

func (s *refusingSink) Permanent(err error) bool { return errors.Is(err, errNoTable) }

// A store that refuses every write with an error no retry can pass (a
// missing table, a user without the right) stops the engine after
// --give-up-after with that error and nothing committed; an outage of the
// same length is retried until it ends.
func TestGiveUpOnPermanentErrors(t *testing.T) {
	lines := [][]byte{
		[]byte(`{"v":1,"kind":"exchange","event_id":"e1","source":"gateway","observer":"gw","server":"srv","ts":"2026-03-01T12:00:00Z","http.method":"POST","request_body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}","http.status":200,"response_body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}"}`),
	}
	// Each reading of the clock moves it a second on, so the give-up
	// comes after a handful of attempts whatever the machine's speed.
	var clock atomic.Int64
	clock.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Add(int64(time.Second))).UTC() }
	run := func(sink *refusingSink) (*sliceSource, error) {
		src := newSliceSource("f", lines)
		cfg := testConfig()
		cfg.RetryMin, cfg.RetryMax, cfg.GiveUp = time.Millisecond, time.Millisecond, 10*time.Second
		e, err := New(cfg, Deps{Source: src, Sink: sink, Logger: zerolog.Nop(), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		return src, e.Run(ctx)
	}

	refusing := &refusingSink{}
	src, err := run(refusing)
	if !errors.Is(err, errNoTable) || !errors.Is(err, errGaveUp) {
		t.Fatalf("Run = %v, want it to give up with the store's error", err)
	}
	if refusing.failures < 2 {
		t.Errorf("gave up after %d attempts, want retries first", refusing.failures)
	}
	src.mu.Lock()
	if next := src.committed["f"]; next > 1 { // next to read: line 1 is the first
		t.Errorf("committed up to line %d, want nothing: nothing was stored", next-1)
	}
	src.mu.Unlock()

	down := &refusingSink{transient: true, heal: 30} // 30 failed attempts: 30 s on that clock, past the give-up
	if _, err := run(down); err != nil {
		t.Fatalf("an outage stopped the engine: %v", err)
	}
	if len(down.exchanges) != 1 {
		t.Errorf("stored %d exchanges after the outage, want 1", len(down.exchanges))
	}
}
