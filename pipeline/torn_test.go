package pipeline

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/pipeline/pipelinetest"
	"github.com/mcplens/mcplens/schema"
)

// tornSink is a store without transactions across tables, as ClickHouse
// is: each write first records its intents (the marks it will reach),
// then its rows, then its state, and the dieAt-th write with rows stops
// after them, like an ingester SIGKILLed between two inserts; every later write
// of that run fails. A write drops the rows of its Unsure lists that the
// sink holds, as the stores do.
type tornSink struct {
	*memStateSink
	mu      sync.Mutex
	dieAt   int
	writes  int // with rows
	dead    bool
	died    func()
	intents map[string]schema.StreamMark
	held    map[string]bool // exchange ids and quarantine positions stored
	skipped int
}

func (s *tornSink) Write(ctx context.Context, b *schema.Batch) error {
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return errors.New("the ingester is gone")
	}
	hasRows := len(b.Exchanges)+len(b.Quarantine) > 0
	if hasRows {
		s.writes++
		for _, m := range b.State.Streams {
			if m.Next > s.intents[m.Stream].Next {
				s.intents[m.Stream] = m
			}
		}
	}
	rows := s.withoutHeld(b)
	for _, x := range rows.Exchanges {
		s.held[x.ExchangeID] = true
	}
	for _, q := range rows.Quarantine {
		s.held[q.Position] = true
	}
	if hasRows && s.writes == s.dieAt {
		s.dead = true
		s.mu.Unlock()
		rows.State = schema.State{}
		if err := s.memSink.Write(ctx, rows); err != nil {
			return err
		}
		s.died()
		return errors.New("killed between the rows and the state")
	}
	s.mu.Unlock()
	return s.memStateSink.Write(ctx, rows)
}

// withoutHeld is b less the unsure rows the sink holds.
func (s *tornSink) withoutHeld(b *schema.Batch) *schema.Batch {
	unsure := map[string]bool{}
	for _, k := range append(append([]string(nil), b.Unsure.Exchanges...), b.Unsure.Quarantine...) {
		unsure[k] = s.held[k]
	}
	out := *b
	out.Exchanges, out.Bodies, out.Quarantine = nil, nil, nil
	for i, x := range b.Exchanges {
		if unsure[x.ExchangeID] {
			s.skipped++
			continue
		}
		out.Exchanges, out.Bodies = append(out.Exchanges, x), append(out.Bodies, b.Bodies[i])
	}
	for _, q := range b.Quarantine {
		if unsure[q.Position] {
			s.skipped++
			continue
		}
		out.Quarantine = append(out.Quarantine, q)
	}
	return &out
}

func (s *tornSink) LoadState(ctx context.Context, streams []string) ([]schema.StreamState, error) {
	states, err := s.memStateSink.LoadState(ctx, streams)
	s.mu.Lock()
	defer s.mu.Unlock()
	marked := map[string]bool{}
	for i := range states {
		marked[states[i].Mark.Stream] = true
		if in := s.intents[states[i].Mark.Stream]; in.Next > states[i].Mark.Next {
			states[i].Unsure = in.Next
		}
	}
	for name, in := range s.intents { // a first batch cut off: no mark yet
		if !marked[name] && (streams == nil || slices.Contains(streams, name)) {
			states = append(states, schema.StreamState{Mark: schema.StreamMark{Stream: name, Topic: in.Topic, Partition: in.Partition}, Unsure: in.Next})
		}
	}
	return states, err
}

// An ingester killed between a batch's rows and its state leaves
// exchanges and quarantined lines stored past its streams' marks; the
// next run re-reads those events and forms the same rows in batches of
// its own. With the intents it knows which rows may be stored (only those
// of the unfinished batch's range), and the store leaves out the ones it
// holds: every exchange once with the outcome of an uninterrupted run,
// every poison line quarantined once, wherever the kill falls.
func TestTornBatchStoredOnce(t *testing.T) {
	c, _ := pipelinetest.Production(pipelinetest.Shape{Exchanges: 2000, Span: 3 * time.Minute})
	var streams [2][]Message
	add := func(p int, line []byte) {
		name := fmt.Sprintf("t/%d", p)
		streams[p] = append(streams[p], Message{Value: line, Pos: Position{Stream: name, Topic: "t", Partition: p, Offset: int64(len(streams[p]))}})
	}
	for i, line := range c.Lines {
		h := fnv.New32a()
		_, _ = h.Write(c.Keys[i])
		p := int(h.Sum32() % 2)
		add(p, line)
		if i%97 == 0 {
			add(p, []byte(`{"poison": true`))
		}
	}
	assign := &Assignment{Streams: []Position{{Stream: "t/0", Topic: "t"}, {Stream: "t/1", Topic: "t", Partition: 1}}}
	script := func(from map[string]int64) []Message {
		out := []Message{{Assignment: assign}}
		i0, i1 := from["t/0"], from["t/1"]
		for i0 < int64(len(streams[0])) || i1 < int64(len(streams[1])) {
			if i0 < int64(len(streams[0])) {
				out = append(out, streams[0][i0])
				i0++
			}
			if i1 < int64(len(streams[1])) {
				out = append(out, streams[1][i1])
				i1++
			}
		}
		return out
	}

	// With StateHold the marks hold the events that wait unsaved, and the
	// next run reads them again: some of the kills must fall where it
	// does, or the held path is not what this proves.
	for _, hold := range []int{0, 2, 6} {
		reread := int64(0)
		for _, dieAt := range []int{1, 3, 11, 25} {
			reread += tornRun(t, hold, dieAt, c.Lines, streams, script)
		}
		if hold > 0 && reread == 0 {
			t.Errorf("state-hold %d: no held event was read again after a kill", hold)
		}
		if hold == 0 && reread != 0 {
			t.Errorf("state-hold 0: %d events read again, want none (every waiting event is saved)", reread)
		}
	}
}

// tornRun is one kill of TestTornBatchStoredOnce; it returns how many held
// events the second run read again.
func tornRun(t *testing.T, hold, dieAt int, lines [][]byte, streams [2][]Message, script func(map[string]int64) []Message) (reread int64) {
	t.Run(fmt.Sprintf("hold %d killed in write %d", hold, dieAt), func(t *testing.T) {
		cfg := testConfig()
		cfg.BatchSize, cfg.ShutdownTimeout, cfg.StateHold = 150, 50*time.Millisecond, hold
		cfg.BatchMaxSize = cfg.BatchSize // batches that do not grow: the kill points are counted in writes
		sink := &tornSink{memStateSink: newMemStateSink(), dieAt: dieAt, intents: map[string]schema.StreamMark{}, held: map[string]bool{}}
		ctx, cancel := context.WithCancel(context.Background())
		sink.died = cancel
		src := &assignSource{script: script(nil), committed: map[string]int64{}}
		e, err := New(cfg, Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		_ = e.Run(ctx) // fails: its last flush finds the store gone
		if !sink.dead {
			t.Fatalf("the run ended after %d writes, before write %d", sink.writes, dieAt)
		}

		sink.mu.Lock()
		sink.dead, sink.dieAt = false, 0
		sink.mu.Unlock()
		again := &assignSource{script: script(src.committed), committed: map[string]int64{}}
		// The first run's short shutdown timeout ends it soon after the
		// store died; the second must finish whatever the machine's load.
		cfg.ShutdownTimeout = 30 * time.Second
		e, err = New(cfg, Deps{Source: again, Sink: sink, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		reread = e.Stats().Reread

		if sink.skipped == 0 {
			t.Error("no row of the unfinished batch was formed again: the kill fell where it proves nothing")
		}
		storedOnceAsUninterrupted(t, lines, sink.exchanges)
		quarantined := map[string]int{}
		for _, q := range sink.quar {
			quarantined[q.Position]++
		}
		if n := len(streams[0]) + len(streams[1]) - len(lines); len(quarantined) != n {
			t.Errorf("%d poison lines quarantined, want %d", len(quarantined), n)
		}
		for pos, n := range quarantined {
			if n != 1 {
				t.Errorf("%s quarantined %d times", pos, n)
			}
		}
	})
	return reread
}
