package duckstore

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/enginetest"
)

// BenchmarkLoadgenToDuckDB is `ingest --from file:... --to duckdb:...` on
// one core over production-shaped traffic from internal/loadgen (60,000
// calls, a minute of event time at 1,000 calls/s; bodies 0.2-16 KiB, SSE,
// split halves, client views, redeliveries): events/s of input lines and
// exchanges/s stored, from the first line read to the last row durable.
func BenchmarkLoadgenToDuckDB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "load.ndjson")
	truth, err := loadgen.WriteFile(path, loadgen.Config{Seed: 4, Calls: 60_000})
	if err != nil {
		b.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var took time.Duration
	for i := 0; b.Loop(); i++ {
		s, err := Open(context.Background(), filepath.Join(b.TempDir(), "l.duckdb"), Options{Threads: 1})
		if err != nil {
			b.Fatal(err)
		}
		src, err := pipeline.NewFileSource(path, pipeline.FileSourceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		eng, err := pipeline.New(pipeline.DefaultConfig(), pipeline.Deps{Source: src, Sink: s, Logger: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := eng.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		var n int
		if err := s.DB().QueryRow("SELECT count(*) FROM exchanges").Scan(&n); err != nil || n != truth.Exchanges {
			b.Fatalf("stored %d exchanges (%v), the load has %d calls", n, err, truth.Exchanges)
		}
		src.Close()
		s.Close()
	}
	b.ReportMetric(float64(truth.Lines*b.N)/took.Seconds(), "events/s")
	b.ReportMetric(float64(truth.Exchanges*b.N)/took.Seconds(), "exchanges/s")
}

// BenchmarkFreshnessDuckDB is [enginetest.Freshness] into a fresh DuckDB file:
// from a response's arrival to its exchange committed in the store.
func BenchmarkFreshnessDuckDB(b *testing.B) {
	enginetest.Freshness(b, func() (pipeline.Sink, func()) {
		s, err := Open(context.Background(), filepath.Join(b.TempDir(), "f.duckdb"), Options{})
		if err != nil {
			b.Fatal(err)
		}
		return s, func() { s.Close() }
	})
}
