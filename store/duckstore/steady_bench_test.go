package duckstore

import (
	"context"
	"path/filepath"
	"runtime"
	"syscall"
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
	var apart int
	for i := 0; b.Loop(); i++ {
		s, err := Open(context.Background(), filepath.Join(b.TempDir(), "l.duckdb"), WriterOptions())
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
		if apart, err = storedApart(s, truth); err != nil {
			b.Fatal(err)
		}
		src.Close()
		s.Close()
	}
	b.ReportMetric(float64(truth.Lines*b.N)/took.Seconds(), "events/s")
	b.ReportMetric(float64(truth.Exchanges*b.N)/took.Seconds(), "exchanges/s")
	b.ReportMetric(float64(apart), "records-apart")
}

// storedApart counts the exchanges s holds against the load's calls
// (loadgen.Truth.CheckRecords): the views left apart, or an error.
func storedApart(s *Store, truth *loadgen.Truth) (int, error) {
	var n int
	if err := s.DB().QueryRow("SELECT count(*) FROM exchanges").Scan(&n); err != nil {
		return 0, err
	}
	return truth.CheckRecords(n)
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

// BenchmarkLoadgenToDuckDBSteady is BenchmarkLoadgenToDuckDB over the long
// benchmarks' traffic (loadgen.BenchConfig: 31 minutes of event time at
// 1,000 calls/s unless MCPLENS_BENCH_MINUTES or MCPLENS_BENCH_LOAD say
// otherwise), three times the 10-minute windows, with events per wall and
// per CPU second (the process's, DuckDB's threads included) for each
// third of the input: a cost that grows with the stored rows (a lookup
// that searches them) shows as a last third slower than the first. The
// share of that CPU spent in the kernel is reported per third too
// (sys-share-*): writing the file into the page cache costs the kernel
// several times more per byte at some times than at others on the VMs
// this runs on (a plain dd of 1 GB took 0.19 to 2.5 s of system CPU), so
// a last third slower by its larger kernel share, for the same bytes
// written, is mostly the machine's. Run it with -benchtime=1x.
func BenchmarkLoadgenToDuckDBSteady(b *testing.B) {
	load, err := loadgen.WriteBench(b.TempDir(), 1)
	if err != nil {
		b.Fatal(err)
	}
	path, cfg, truth, minutes := load.Path, load.Config, load.Truth, load.Minutes
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var p *thirdsProbe
	var apart int
	for b.Loop() {
		s, err := Open(context.Background(), filepath.Join(b.TempDir(), "s.duckdb"), WriterOptions())
		if err != nil {
			b.Fatal(err)
		}
		src, err := pipeline.NewFileSource(path, pipeline.FileSourceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		p = &thirdsProbe{Source: src, total: truth.Lines}
		engCfg := pipeline.DefaultConfig()
		engCfg.Correlator.PairWindow = cfg.PairWindow(engCfg.Correlator.PairWindow)
		eng, err := pipeline.New(engCfg, pipeline.Deps{Source: p, Sink: s, Logger: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		p.mark()
		if err := eng.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		p.mark() // the end: every row committed
		if apart, err = storedApart(s, truth); err != nil {
			b.Fatal(err)
		}
		src.Close()
		s.Close()
	}
	third := float64(truth.Lines) / 3
	var cpu, wall [3]float64
	for i := range 3 {
		cpu[i] = third / (p.cpu[i+1] - p.cpu[i]).Seconds()
		wall[i] = third / p.wall[i+1].Sub(p.wall[i]).Seconds()
	}
	for i, name := range []string{"1st", "2nd", "3rd"} {
		b.ReportMetric(cpu[i], "events/cpu-s-"+name)
		b.ReportMetric(wall[i], "events/s-"+name)
		b.ReportMetric(float64(p.sys[i+1]-p.sys[i])/float64(p.cpu[i+1]-p.cpu[i]), "sys-share-"+name)
	}
	b.ReportMetric(wall[2]/wall[0], "3rd/1st")
	b.ReportMetric(float64(truth.Lines)/p.wall[3].Sub(p.wall[0]).Seconds(), "events/s")
	b.ReportMetric(float64(truth.Lines)/(p.cpu[3]-p.cpu[0]).Seconds(), "events/cpu-s")
	b.ReportMetric(float64(truth.Lines), "events")
	b.ReportMetric(minutes, "event-minutes")
	b.ReportMetric(float64(apart), "records-apart")
}

// thirdsProbe is a Source that notes the process's CPU time (and the
// kernel's part of it) and the wall clock at the start, when a third and
// two thirds of the lines have been fetched, and at the end (mark).
type thirdsProbe struct {
	pipeline.Source
	total, n int
	cpu, sys []time.Duration
	wall     []time.Time
}

func (p *thirdsProbe) Fetch(ctx context.Context) (pipeline.Message, error) {
	m, err := p.Source.Fetch(ctx)
	if err == nil {
		p.n++
		if p.n == p.total/3 || p.n == 2*p.total/3 {
			p.mark()
		}
	}
	return m, err
}

func (p *thirdsProbe) mark() {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // cannot fail for RUSAGE_SELF
	p.cpu = append(p.cpu, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
	p.sys = append(p.sys, time.Duration(ru.Stime.Nano()))
	p.wall = append(p.wall, time.Now())
}
