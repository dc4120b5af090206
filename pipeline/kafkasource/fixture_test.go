package kafkasource

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
)

var discard = zerolog.Nop()

// fixture is one topic on the real broker and a group to read it with.
type fixture struct {
	brokers, topic, group string
	reg                   *prometheus.Registry
}

func newFixture(t *testing.T, partitions int) *fixture {
	t.Helper()
	brokers := kafkatest.Brokers(t)
	checkNoLeaks(t)
	return &fixture{
		brokers: brokers,
		topic:   kafkatest.NewTopic(t, brokers, partitions),
		group:   kafkatest.UniqueName(t, "mcplens-test-group"),
		reg:     prometheus.NewRegistry(),
	}
}

func (f *fixture) url(params ...string) string {
	return fmt.Sprintf("kafka://%s/%s?%s", f.brokers, f.topic, strings.Join(append([]string{"group=" + f.group}, params...), "&"))
}

func (f *fixture) open(t *testing.T, params ...string) *Source {
	t.Helper()
	cfg, err := ParseURL(f.url(params...))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel), f.reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (f *fixture) gauge(t *testing.T, name string, partition int) float64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["topic"] == f.topic && labels["partition"] == fmt.Sprint(partition) {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no %s{topic=%q,partition=%d}", name, f.topic, partition)
	return 0
}

func fetchN(t *testing.T, s *Source, n int) []pipeline.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	msgs := make([]pipeline.Message, 0, n)
	for len(msgs) < n {
		m, err := s.Fetch(ctx)
		if err != nil {
			t.Fatalf("fetch message %d of %d: %v", len(msgs)+1, n, err)
		}
		if m.Assignment == nil { // a generation's start: see TestRebalance
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// nextAssignment fetches until the next generation's assignment and
// returns its partitions, failing on a message that is not of one of them.
func nextAssignment(t *testing.T, s *Source, wait time.Duration) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	for {
		m, err := s.Fetch(ctx)
		if err != nil {
			t.Fatalf("fetch until the next assignment: %v", err)
		}
		if m.Assignment == nil {
			continue
		}
		var parts []int
		for _, p := range m.Assignment.Streams {
			parts = append(parts, p.Partition)
		}
		return parts
	}
}

func expectNothing(t *testing.T, s *Source, wait time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	for {
		m, err := s.Fetch(ctx)
		if err == nil && m.Assignment != nil {
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("fetch: got %s %q, %v; want nothing before the deadline", m.Pos, m.Value, err)
		}
		return
	}
}

func values(n int, format string) [][]byte {
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = fmt.Appendf(nil, format, i)
	}
	return vs
}

// checkNoLeaks fails the test if kafka-go goroutines outlive it. Registered
// first, it runs after every other cleanup (sources closed, topic deleted).
func checkNoLeaks(t *testing.T) {
	t.Cleanup(func() {
		deadline := time.Now().Add(15 * time.Second)
		for {
			buf := make([]byte, 1<<20)
			stacks := string(buf[:runtime.Stack(buf, true)])
			leaked := leakedGoroutines(stacks)
			if leaked == "" {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("goroutines still running after the test:\n%s", leaked)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

func leakedGoroutines(stacks string) string {
	var leaked []string
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "segmentio/kafka-go") || strings.Contains(g, "pipeline/kafkasource.(*Source)") {
			leaked = append(leaked, g)
		}
	}
	return strings.Join(leaked, "\n\n")
}
