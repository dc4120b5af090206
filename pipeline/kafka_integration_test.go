package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/kafkasource"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
	"github.com/mcplens/mcplens/pipeline/pipelinetest"
	"github.com/mcplens/mcplens/schema"
)

// flakySink refuses writes until it is healed, then keeps what it gets.
type flakySink struct {
	mu       sync.Mutex
	broken   bool
	refused  int
	received map[string]int
}

func (s *flakySink) Write(_ context.Context, b *schema.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken {
		s.refused++
		return errors.New("store down")
	}
	for _, r := range b.Exchanges {
		s.received[r.ExchangeID]++
	}
	return nil
}

func (s *flakySink) Close() error { return nil }

func (s *flakySink) state() (refused, distinct int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused, len(s.received)
}

// TestKafkaSinkOutage consumes from a real broker while the sink is down
// for a while: consumption pauses, nothing is committed, and once the sink
// is back every exchange arrives exactly once.
func TestKafkaSinkOutage(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.NewTopic(t, brokers, 2)
	c := pipelinetest.Generate(1000, 200)
	kafkatest.ProduceRecords(t, brokers, topic, kafkatest.Keyed(c.Keys, c.Lines, 2)...)

	kc, err := kafkasource.ParseURL(fmt.Sprintf("kafka://%s/%s?group=outage-%s", brokers, topic, topic))
	if err != nil {
		t.Fatal(err)
	}
	src, err := kafkasource.New(kc, zerolog.Nop(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sink := &flakySink{broken: true, received: map[string]int{}}
	cfg := pipeline.DefaultConfig()
	cfg.FlushInterval, cfg.RetryMin, cfg.RetryMax = 20*time.Millisecond, 10*time.Millisecond, 50*time.Millisecond
	cfg.Correlator.MergeWindow, cfg.Correlator.Lateness, cfg.IdleAdvance = 50*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond
	e, err := pipeline.New(cfg, pipeline.Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()

	deadline := time.Now().Add(60 * time.Second)
	for refused, _ := sink.state(); refused < 10; refused, _ = sink.state() {
		if time.Now().After(deadline) {
			t.Fatal("the sink was never tried")
		}
		time.Sleep(20 * time.Millisecond)
	}
	sink.mu.Lock()
	sink.broken = false
	sink.mu.Unlock()
	for _, n := sink.state(); n < len(c.IDs); _, n = sink.state() {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d exchanges arrived after the outage", n, len(c.IDs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, id := range c.IDs {
		if sink.received[id] != 1 {
			t.Errorf("%s received %d times", id, sink.received[id])
		}
	}
}
