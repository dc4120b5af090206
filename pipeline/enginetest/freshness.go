package enginetest

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
)

// Freshness replays production-shaped traffic at its own pace (1,000
// calls/s of wall time, MCPLENS_FRESHNESS_SECONDS long, default 90)
// through the engine at the default settings into the sink open returns
// (one per iteration, closed by its close), and reports, for every
// exchange, the wall time from the arrival of the line that completed it
// (its response, or its exchange record) to the sink acknowledging the
// batch that holds it: p50, p99 and max. When the input stops the source
// stays open, as a Kafka topic does, and drain-s is the time until the
// last exchange is acknowledged.
func Freshness(b *testing.B, open func() (sink pipeline.Sink, close func())) {
	b.Helper()
	seconds := 90
	if s := os.Getenv("MCPLENS_FRESHNESS_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("MCPLENS_FRESHNESS_SECONDS=%q: want a positive number", s)
		}
		seconds = n
	}
	g, err := loadgen.New(loadgen.Config{Seed: 2, Calls: seconds * 1000})
	if err != nil {
		b.Fatal(err)
	}
	var lines []pacedLine
	for _, l := range g.Lines() {
		lines = append(lines, pacedLine{at: g.At(), line: slices.Clone(l), id: eventIDOf(l)})
	}
	want := g.Truth().Exchanges
	for b.Loop() {
		src := &pacedSource{lines: lines, arrived: map[string]time.Time{}, done: make(chan struct{})}
		store, closeStore := open()
		sink := &latencySink{Sink: store, src: src, want: want, all: make(chan struct{})}
		e, err := pipeline.New(pipeline.DefaultConfig(), pipeline.Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- e.Run(ctx) }()
		<-src.done
		stopped := time.Now()
		select {
		case <-sink.all:
		case <-time.After(5 * time.Minute):
			b.Errorf("%d of %d exchanges after five minutes", sink.rows, want)
		}
		drain := time.Since(stopped)
		cancel()
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
		closeStore()
		lat := sink.latencies
		slices.Sort(lat)
		q := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))].Seconds() }
		b.ReportMetric(q(0.50), "p50-s")
		b.ReportMetric(q(0.99), "p99-s")
		b.ReportMetric(lat[len(lat)-1].Seconds(), "max-s")
		b.ReportMetric(drain.Seconds(), "drain-s")
		b.ReportMetric(float64(len(lat)), "exchanges")
	}
}

type pacedLine struct {
	at   time.Time
	line []byte
	id   string
}

// eventIDOf returns the event_id of a generated line ("" for poison).
func eventIDOf(line []byte) string {
	const key = `"event_id":"`
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return ""
	}
	rest := line[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// pacedSource delivers each line at its observation time relative to the
// first, notes when it arrived, and then blocks as an idle topic does.
type pacedSource struct {
	lines   []pacedLine
	i       int
	start   time.Time
	mu      sync.Mutex
	arrived map[string]time.Time // event id -> wall time of delivery
	done    chan struct{}
}

func (s *pacedSource) Fetch(ctx context.Context) (pipeline.Message, error) {
	if s.i == 0 {
		s.start = time.Now()
	}
	if s.i == len(s.lines) {
		if s.i > 0 {
			s.i++ // once
			close(s.done)
		}
		<-ctx.Done()
		return pipeline.Message{}, ctx.Err()
	}
	if s.i > len(s.lines) {
		<-ctx.Done()
		return pipeline.Message{}, ctx.Err()
	}
	l := s.lines[s.i]
	if d := time.Until(s.start.Add(l.at.Sub(s.lines[0].at))); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return pipeline.Message{}, ctx.Err()
		}
	}
	s.mu.Lock()
	if _, ok := s.arrived[l.id]; !ok {
		s.arrived[l.id] = time.Now()
	}
	s.mu.Unlock()
	m := pipeline.Message{Value: l.line, Pos: pipeline.Position{Stream: "paced", Offset: int64(s.i)}}
	s.i++
	return m, nil
}

func (s *pacedSource) Commit(context.Context, []pipeline.Position) error { return nil }
func (s *pacedSource) Close() error                                      { return nil }

// latencySink notes, per exchange, the time from the arrival of the line
// that completed it to the acknowledgement of its batch.
type latencySink struct {
	pipeline.Sink
	src       *pacedSource
	want      int
	rows      int
	latencies []time.Duration
	all       chan struct{}
}

func (s *latencySink) Write(ctx context.Context, b *schema.Batch) error {
	if err := s.Sink.Write(ctx, b); err != nil {
		return err
	}
	now := time.Now()
	s.src.mu.Lock()
	for i := range b.Exchanges {
		x := &b.Exchanges[i]
		// A request that never got its response has no response to be
		// fresh after: it waits the pair window by design.
		if at, ok := s.src.arrived[x.ResponseEventID]; ok && x.ResponseEventID != "" {
			s.latencies = append(s.latencies, now.Sub(at))
		}
	}
	s.src.mu.Unlock()
	before := s.rows
	s.rows += len(b.Exchanges)
	if before < s.want && s.rows >= s.want {
		close(s.all)
	}
	return nil
}
