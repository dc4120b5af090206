// Package enginetest runs lines through the whole ingest pipeline in
// memory, for tests of the packages that feed it (log-shipper mappings,
// agentgateway and OTLP formats): what they produce is judged by what the
// pipeline makes of it, exchange records and quarantine rows.
package enginetest

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
)

// Result is what the pipeline stored.
type Result struct {
	Exchanges  []schema.Exchange
	Quarantine []schema.Quarantined
}

// Run feeds messages (one per line or Kafka message, at positions
// "test:1", "test:2", ...) through a pipeline with the default
// configuration and format (nil: contract-v1 lines), to the end of input.
func Run(t testing.TB, format pipeline.Format, messages ...[]byte) Result {
	t.Helper()
	src := &source{msgs: messages}
	sink := &sink{}
	e, err := pipeline.New(pipeline.DefaultConfig(), pipeline.Deps{Source: src, Sink: sink, Logger: zerolog.Nop(), Format: format,
		Now: func() time.Time { return time.Unix(0, 0).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	return sink.res
}

type source struct {
	msgs [][]byte
	next int
}

func (s *source) Fetch(ctx context.Context) (pipeline.Message, error) {
	if err := ctx.Err(); err != nil {
		return pipeline.Message{}, err
	}
	if s.next == len(s.msgs) {
		return pipeline.Message{}, io.EOF
	}
	s.next++
	return pipeline.Message{Value: s.msgs[s.next-1], Pos: pipeline.Position{Stream: "test", Offset: int64(s.next)}}, nil
}

func (s *source) Commit(context.Context, []pipeline.Position) error { return nil }
func (s *source) Close() error                                      { return nil }

type sink struct {
	mu  sync.Mutex
	res Result
}

func (s *sink) Write(_ context.Context, b *schema.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res.Exchanges = append(s.res.Exchanges, b.Exchanges...)
	s.res.Quarantine = append(s.res.Quarantine, b.Quarantine...)
	return nil
}

func (s *sink) Close() error { return nil }

// TimeFile runs the pipeline with the default configuration from the
// contract-v1 file at path into sink, to the end of the file, with b's
// timer running only while the engine runs.
func TimeFile(b *testing.B, path string, sink pipeline.Sink) {
	b.Helper()
	src, err := pipeline.NewFileSource(path, pipeline.FileSourceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	eng, err := pipeline.New(pipeline.DefaultConfig(), pipeline.Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	err = eng.Run(context.Background())
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
}
