package pipeline

import (
	"context"
	"hash/fnv"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/pipeline/pipelinetest"
	"github.com/mcplens/mcplens/schema"
)

// memStateSink is a memSink that keeps the ingest state as the stores do:
// marks at their largest offset, waiting events until released.
type memStateSink struct {
	memSink
	smu      sync.Mutex
	marks    map[string]schema.StreamMark
	waiting  map[schema.EventRef]schema.SavedEvent
	released map[schema.EventRef]bool
}

func newMemStateSink() *memStateSink {
	return &memStateSink{marks: map[string]schema.StreamMark{}, waiting: map[schema.EventRef]schema.SavedEvent{}, released: map[schema.EventRef]bool{}}
}

func (s *memStateSink) Write(ctx context.Context, b *schema.Batch) error {
	if err := s.memSink.Write(ctx, b); err != nil {
		return err
	}
	s.smu.Lock()
	defer s.smu.Unlock()
	for _, sv := range b.State.Saved {
		s.waiting[sv.EventRef] = sv
	}
	for _, r := range b.State.Released {
		s.released[r] = true
	}
	for _, m := range b.State.Streams {
		if m.Next >= s.marks[m.Stream].Next {
			s.marks[m.Stream] = m
		}
	}
	return nil
}

func (s *memStateSink) LoadState(_ context.Context, streams []string) ([]schema.StreamState, error) {
	s.smu.Lock()
	defer s.smu.Unlock()
	var out []schema.StreamState
	for name, m := range s.marks {
		if streams != nil && !slices.Contains(streams, name) {
			continue
		}
		st := schema.StreamState{Mark: m}
		for ref, sv := range s.waiting {
			if ref.Stream == name && !s.released[ref] {
				st.Saved = append(st.Saved, sv)
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// assignSource plays a consumer group member: a script of assignments and
// messages, commits kept only for the streams it is assigned (as
// kafkasource does), then the end of input.
type assignSource struct {
	mu        sync.Mutex
	script    []Message
	i         int
	assigned  map[string]bool
	committed map[string]int64
}

func (s *assignSource) Fetch(context.Context) (Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.i == len(s.script) {
		return Message{}, io.EOF
	}
	m := s.script[s.i]
	s.i++
	if m.Assignment != nil {
		s.assigned = map[string]bool{}
		for _, p := range m.Assignment.Streams {
			s.assigned[p.Stream] = true
		}
	}
	return m, nil
}

func (s *assignSource) Commit(_ context.Context, next []Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range next {
		if s.assigned[p.Stream] {
			s.committed[p.Stream] = max(s.committed[p.Stream], p.Offset)
		}
	}
	return nil
}

func (s *assignSource) Close() error    { return nil }
func (s *assignSource) AssignsStreams() {}

// Issue 12, scale-out: member A reads two partitions, loses one half way
// (it stores what it holds, forgets the partition and keeps the other);
// member B is assigned the lost one, resumes its state and reads it from
// its committed offset. Together they store exactly the records one
// uninterrupted run stores: every exchange once, with the same outcome.
func TestReassignHandsOver(t *testing.T) {
	c, _ := pipelinetest.Production(pipelinetest.Shape{Exchanges: 3000})
	streams := [2][]Message{}
	for i, line := range c.Lines {
		h := fnv.New32a()
		_, _ = h.Write(c.Keys[i])
		p := int(h.Sum32() % 2)
		name := []string{"t/0", "t/1"}[p]
		streams[p] = append(streams[p], Message{Value: line, Pos: Position{Stream: name, Topic: "t", Partition: p, Offset: int64(len(streams[p]))}})
	}
	assign := func(parts ...int) Message {
		a := &Assignment{}
		for _, p := range parts {
			a.Streams = append(a.Streams, Position{Stream: []string{"t/0", "t/1"}[p], Topic: "t", Partition: p})
		}
		return Message{Assignment: a}
	}
	// A: both partitions interleaved up to the middle of partition 1, the
	// same assignment again (a rebalance that keeps them), then partition
	// 0 alone.
	half := len(streams[1]) / 2
	scriptA := []Message{assign(0, 1)}
	i0 := 0
	for i1 := 0; i1 < half; i1++ {
		scriptA = append(scriptA, streams[1][i1])
		if i0 < len(streams[0]) && i1%2 == 0 {
			scriptA, i0 = append(scriptA, streams[0][i0]), i0+1
		}
		if i1 == half/2 {
			scriptA = append(scriptA, assign(0, 1))
		}
	}
	scriptA = append(scriptA, assign(0))
	scriptA = append(scriptA, streams[0][i0:]...)

	cfg := testConfig()
	cfg.BatchSize = 200
	sink := newMemStateSink()
	run := func(src *assignSource) {
		t.Helper()
		e, err := New(cfg, Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	a := &assignSource{script: scriptA, committed: map[string]int64{}}
	run(a)
	// B: partition 1 from where the group committed it.
	from := a.committed["t/1"]
	if from <= 0 || from > int64(half) {
		t.Fatalf("partition 1 committed at %d, want within the %d messages A read", from, half)
	}
	b := &assignSource{script: append([]Message{assign(1)}, streams[1][from:]...), committed: map[string]int64{}}
	run(b)

	storedOnceAsUninterrupted(t, c.Lines, sink.exchanges)
}

// storedOnceAsUninterrupted checks that stored holds each exchange of an
// uninterrupted run over lines once, with the same outcome, and nothing
// else.
func storedOnceAsUninterrupted(t *testing.T, lines [][]byte, stored []schema.Exchange) {
	t.Helper()
	want, _ := runFile(t, testConfig(), lines)
	wantOutcome := map[string]string{}
	for _, x := range want.exchanges {
		wantOutcome[x.ExchangeID] = string(x.Outcome)
	}
	got := map[string][]string{}
	for _, x := range stored {
		got[x.ExchangeID] = append(got[x.ExchangeID], string(x.Outcome))
	}
	for id, o := range wantOutcome {
		if g := got[id]; len(g) != 1 || g[0] != o {
			t.Errorf("%s stored as %v, want once as %s", id, g, o)
		}
	}
	for id := range got {
		if _, ok := wantOutcome[id]; !ok {
			t.Errorf("%s stored as %v; the uninterrupted run has no such exchange", id, got[id])
		}
	}
}
