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

	"github.com/mcplens/mcplens/internal/loadgen"
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

// kafkaSource reads topic from the start as a new member of group.
func kafkaSource(t *testing.T, brokers, topic, group string) *kafkasource.Source {
	t.Helper()
	kc, err := kafkasource.ParseURL(fmt.Sprintf("kafka://%s/%s?group=%s", brokers, topic, group))
	if err != nil {
		t.Fatal(err)
	}
	src, err := kafkasource.New(kc, zerolog.Nop(), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// startEngine runs the engine over src into sink in the background; stop
// ends the run and fails the test if it returned an error.
func startEngine(t *testing.T, cfg pipeline.Config, src pipeline.Source, sink pipeline.Sink) (stop func()) {
	t.Helper()
	e, err := pipeline.New(cfg, pipeline.Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestKafkaSinkOutage consumes from a real broker while the sink is down
// for a while: consumption pauses, nothing is committed, and once the sink
// is back every exchange arrives exactly once.
func TestKafkaSinkOutage(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.NewTopic(t, brokers, 2)
	c := pipelinetest.Generate(1000, 200)
	kafkatest.ProduceRecords(t, brokers, topic, kafkatest.Keyed(c.Keys, c.Lines, 2)...)

	src := kafkaSource(t, brokers, topic, "outage-"+topic)
	sink := &flakySink{broken: true, received: map[string]int{}}
	cfg := pipeline.DefaultConfig()
	cfg.FlushInterval, cfg.RetryMin, cfg.RetryMax = 20*time.Millisecond, 10*time.Millisecond, 50*time.Millisecond
	cfg.Correlator.MergeWindow, cfg.Correlator.Lateness, cfg.IdleAdvance = 50*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond
	stop := startEngine(t, cfg, src, sink)

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
	stop()
	for _, id := range c.IDs {
		if sink.received[id] != 1 {
			t.Errorf("%s received %d times", id, sink.received[id])
		}
	}
}

// collectSink keeps every exchange its writes carried.
type collectSink struct {
	mu   sync.Mutex
	recs []schema.Exchange
}

func (s *collectSink) Write(_ context.Context, b *schema.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, b.Exchanges...)
	return nil
}

func (s *collectSink) Close() error { return nil }

// TestKafkaUnkeyedPartitionsMatchTruth: production-shaped traffic, 30% of
// it also logged by the client, on three partitions of the real broker
// with no key, in runs of 500 lines as a sticky producer writes them. One
// consumer catches up from the start. Views of one call on different
// partitions must merge: with kafka-go's partition readers feeding one
// queue, a partition fell behind and hundreds of client views came out
// apart on a topic twice this size (472 and 2,124 in two runs).
func TestKafkaUnkeyedPartitionsMatchTruth(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic, truth, _ := kafkatest.UnkeyedLoad(t, brokers, 3, loadgen.Config{Seed: 101, Calls: 15_000, ClientShare: 0.3})

	sink := &collectSink{}
	cfg := pipeline.DefaultConfig()
	cfg.IdleAdvance = time.Second
	cfg.Correlator.PairWindow = 40 * time.Second // responses come up to 30 s late
	stop := startEngine(t, cfg, kafkaSource(t, brokers, topic, "truth-"+topic), sink)
	// Every call has a record once the unanswered requests' pair window
	// passed; then nothing more may come.
	deadline := time.Now().Add(3 * time.Minute)
	for n, still := 0, 0; still < 20 && time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		sink.mu.Lock()
		m, lost := len(sink.recs), truth.Tally(sink.recs, loadgen.DefaultStart).Lost
		sink.mu.Unlock()
		if lost == 0 && m == n {
			still++
		} else {
			still = 0
		}
		n = m
	}
	stop()
	sink.mu.Lock()
	defer sink.mu.Unlock()
	r := truth.Tally(sink.recs, loadgen.DefaultStart)
	t.Logf("%d records for %d calls: %+v", len(sink.recs), truth.Exchanges, r)
	if r.Lost+r.Wrong > 0 || r.Extra > 0 {
		t.Errorf("%+v: want every call once, as in the truth", r)
	}
}
