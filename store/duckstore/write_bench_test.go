package duckstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/enginetest"
	"github.com/mcplens/mcplens/schema"
)

// batchesSink keeps the batches the engine writes, with their state
// changes, so that the store's share can be measured alone.
type batchesSink struct{ batches []*schema.Batch }

func (c *batchesSink) Write(_ context.Context, b *schema.Batch) error {
	c.batches = append(c.batches, b)
	return nil
}
func (c *batchesSink) Close() error { return nil }
func (c *batchesSink) LoadState(context.Context, []string) ([]schema.StreamState, error) {
	return nil, nil
}

// BenchmarkLoadgenWrite is the DuckDB share of BenchmarkLoadgenToDuckDB:
// the batches the engine made of the same production-shaped traffic,
// written into a fresh file and closed (its checkpoint included), with
// the process' CPU seconds per run beside the wall time, the bytes of
// bodies and of saved waiting events the batches carry, and the size of
// the closed file. save-at-once is
// the yardstick for the default --state-hold: every waiting event saved
// at the first flush, as before events were held.
func BenchmarkLoadgenWrite(b *testing.B) {
	path := filepath.Join(b.TempDir(), "load.ndjson")
	truth, err := loadgen.WriteFile(path, loadgen.Config{Seed: 4, Calls: 60_000})
	if err != nil {
		b.Fatal(err)
	}
	for _, hold := range []struct {
		name string
		n    int
	}{{"default", pipeline.DefaultConfig().StateHold}, {"save-at-once", 0}} {
		b.Run(hold.name, func(b *testing.B) { benchLoadgenWrite(b, path, truth.Lines, hold.n) })
	}
}

func benchLoadgenWrite(b *testing.B, path string, lines, hold int) {
	src, err := pipeline.NewFileSource(path, pipeline.FileSourceConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	var c batchesSink
	cfg := pipeline.DefaultConfig()
	cfg.StateHold = hold
	eng, err := pipeline.New(cfg, pipeline.Deps{Source: src, Sink: &c, Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	if err := eng.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	var bodyBytes, savedBytes int
	for _, batch := range c.batches {
		for i := range batch.Bodies {
			bodyBytes += len(batch.Bodies[i].RequestBody) + len(batch.Bodies[i].ResponseBody)
		}
		for i := range batch.State.Saved {
			savedBytes += len(batch.State.Saved[i].Data)
		}
	}
	var took, cpu time.Duration
	var fileBytes int64
	for b.Loop() {
		file := filepath.Join(b.TempDir(), "w.duckdb")
		s, err := Open(context.Background(), file, WriterOptions())
		if err != nil {
			b.Fatal(err)
		}
		start, cpu0 := time.Now(), enginetest.ProcessCPU()
		for _, batch := range c.batches {
			if err := s.Write(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		cpu += enginetest.ProcessCPU() - cpu0
		fi, err := os.Stat(file)
		if err != nil {
			b.Fatal(err)
		}
		fileBytes = fi.Size()
	}
	b.ReportMetric(float64(lines*b.N)/took.Seconds(), "events/s")
	b.ReportMetric(float64(lines*b.N)/cpu.Seconds(), "events/cpu-s")
	b.ReportMetric(float64(bodyBytes)/1e6, "body-MB")
	b.ReportMetric(float64(savedBytes)/1e6, "saved-MB")
	b.ReportMetric(float64(fileBytes)/1e6, "file-MB")
}
