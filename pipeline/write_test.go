package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/pipeline/pipelinetest"
	"github.com/mcplens/mcplens/schema"
)

// pickySink refuses, the same way every time, any batch holding an
// exchange it does not like, while it answers Ping: a store that rejects
// data, not one that is down.
type pickySink struct {
	memSink
	dislike func(*schema.Exchange) bool
	down    bool
}

func (s *pickySink) Write(ctx context.Context, b *schema.Batch) error {
	for i := range b.Exchanges {
		if s.dislike(&b.Exchanges[i]) {
			s.mu.Lock()
			s.writes++
			s.mu.Unlock()
			return errors.New(`Invalid Input Error: invalid unicode in segment`)
		}
	}
	return s.memSink.Write(ctx, b)
}

func (s *pickySink) Ping(context.Context) error {
	if s.down {
		return errors.New("down")
	}
	return nil
}

// A row the store refuses is quarantined with the store's reason and the
// rest of the batch is stored: the write is not retried forever.
func TestRefusedRowIsolated(t *testing.T) {
	c := pipelinetest.Generate(200, 100)
	sink := &pickySink{dislike: func(x *schema.Exchange) bool { return x.ExchangeID == "x-0000077" }}
	src := newSliceSource("f", c.Lines)
	cfg := testConfig()
	cfg.BatchSize = 64
	e, err := New(cfg, Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	for _, x := range sink.exchanges {
		stored[x.ExchangeID]++
	}
	for _, id := range c.IDs {
		want := 1
		if id == "x-0000077" {
			want = 0
		}
		if stored[id] != want {
			t.Errorf("%s stored %d times, want %d", id, stored[id], want)
		}
	}
	if len(sink.quar) != 1 || sink.quar[0].Position != "store/x-0000077" ||
		!strings.Contains(sink.quar[0].Reason, "invalid unicode") || !strings.Contains(string(sink.quar[0].Raw), `"exchange_id":"x-0000077"`) {
		t.Fatalf("quarantine %+v, want the refused exchange with the store's reason", sink.quar)
	}
	if got := src.committed["f"]; got != int64(len(c.Lines)+1) {
		t.Errorf("committed %d, want %d", got, len(c.Lines)+1)
	}
	if sink.writes > 20 {
		t.Errorf("%d refused writes: isolation should need about log2(64)", sink.writes)
	}
}

// Without a StateSink nothing takes the halves and observations the state
// would save, so none are kept: keeping them held every body ever read
// (BenchmarkSteadyState's RSS grew from 326 MB to 1.25 GB).
func TestNoStateKeepsNoFreshEvents(t *testing.T) {
	c, _ := pipelinetest.Production(pipelinetest.Shape{Exchanges: 500})
	e, err := New(testConfig(), Deps{Source: newSliceSource("f", c.Lines), Sink: &memSink{}, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, m := len(e.corr.fresh), len(e.corr.freshObs); n != 0 || m != 0 {
		t.Fatalf("%d halves and %d observations kept for a state nobody stores", n, m)
	}
}
