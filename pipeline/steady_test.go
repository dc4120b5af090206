package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/mcplens/mcplens/internal/memlimit"
	"github.com/mcplens/mcplens/schema"
)

// BenchmarkSteadyState runs `ingest --from file:... --to stdout` in process
// (every stage, the stdout sink's JSON encoding to io.Discard, default
// settings) over production-shaped traffic from internal/loadgen that is
// longer than every window: MCPLENS_BENCH_MINUTES (default 31) minutes of
// event time at 1,000 calls/s, three times the 10-minute chain and dedupe
// windows (MCPLENS_BENCH_LOAD gives another shape, see
// loadgen.BenchConfig). It reports the throughput of each third of the run (events per
// second of CPU time, which other processes on the machine do not skew,
// and of wall time), the last third against the first, the resident set
// at the end of each third and its peak, and the ratio to the yardstick in
// the same run: a plain encoding/json decode of the same lines into
// map[string]any. The yardstick is measured twice: interleaved, on every
// naiveEvery-th line as the engine reads it (its CPU taken off the
// engine's), so that both see the machine at the same moments; and, as
// before, over the whole file after the run (x-naive-after). On this
// shared virtual machine the speed of both moved by up to 40% within a
// few minutes, so only the interleaved ratio is steady. The collector
// runs at ingest's GOGC (memlimit.DefaultGCPercent) unless GOGC is set.
// Run it with -benchtime=1x -cpu=1.
func BenchmarkSteadyState(b *testing.B) {
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(memlimit.DefaultGCPercent))
	}
	load, err := loadgen.WriteBench(b.TempDir(), 1)
	if err != nil {
		b.Fatal(err)
	}
	path, cfg, truth, minutes := load.Path, load.Config, load.Truth, load.Minutes
	lines := truth.Lines
	var probe *thirds
	var apart int
	for b.Loop() {
		src, err := NewFileSource(path, FileSourceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		probe = newThirds(src, lines)
		sink := &countingSink{Sink: NewStdoutSink(io.Discard, io.Discard)}
		engCfg := DefaultConfig() // with a pair window that covers the shape's delays
		engCfg.Correlator.PairWindow = cfg.PairWindow(engCfg.Correlator.PairWindow)
		e, err := New(engCfg, Deps{Source: probe, Sink: sink, Logger: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		probe.mark() // the end: everything written
		src.Close()
		if apart, err = truth.CheckRecords(sink.rows); err != nil {
			b.Fatal(err)
		}
	}
	peak := vmKB("VmHWM")
	naiveCPU, naiveWall := naiveDecodeFile(b, path)

	cpu, wall := probe.rates()
	naiveInter := float64(probe.naiveLines) / probe.naive[3].Seconds()
	b.ReportMetric(cpu[0], "events/cpu-s-1st")
	b.ReportMetric(cpu[1], "events/cpu-s-2nd")
	b.ReportMetric(cpu[2], "events/cpu-s-3rd")
	b.ReportMetric(cpu[2]/cpu[0], "3rd/1st")
	// The yardstick's own last third over its first: how much the
	// machine's speed moved between them, for the engine's ratio.
	nv := probe.naiveRates()
	b.ReportMetric(nv[2]/nv[0], "naive-3rd/1st")
	// The engine's over the yardstick's: its own change from the first
	// third to the last, with the machine's drift between them taken out.
	b.ReportMetric((cpu[2]/cpu[0])/(nv[2]/nv[0]), "3rd/1st-vs-naive")
	b.ReportMetric(wall[0], "events/s-1st")
	b.ReportMetric(wall[1], "events/s-2nd")
	b.ReportMetric(wall[2], "events/s-3rd")
	all := float64(lines) / probe.cpuTotal().Seconds()
	b.ReportMetric(all, "events/cpu-s")
	b.ReportMetric(naiveInter, "naive-events/cpu-s")
	b.ReportMetric(all/naiveInter, "x-naive")
	b.ReportMetric(float64(lines)/naiveCPU.Seconds(), "naive-after-events/cpu-s")
	b.ReportMetric(all/(float64(lines)/naiveCPU.Seconds()), "x-naive-after")
	b.ReportMetric(float64(lines)/naiveWall.Seconds(), "naive-events/s")
	for i, kb := range probe.rss {
		b.ReportMetric(float64(kb)/1024, "rss-MB-"+[]string{"1st", "2nd", "3rd"}[i])
	}
	b.ReportMetric(float64(peak)/1024, "peak-rss-MB")
	b.ReportMetric(float64(lines), "events")
	b.ReportMetric(minutes, "event-minutes")
	b.ReportMetric(float64(apart), "records-apart")
	b.ReportMetric(cfg.Rate, "calls/s")
}

// naiveEvery is how often thirds decodes a line for the yardstick.
const naiveEvery = 8

// thirds is a Source that notes the CPU time, wall time and resident set
// when the first, second and third third of the lines have been fetched,
// and decodes every naiveEvery-th line with encoding/json into a map, on
// the side: the yardstick, measured at the same moments as the engine.
type thirds struct {
	Source
	total, n int
	mu       sync.Mutex
	cpu      []time.Duration
	wall     []time.Time
	rss      []int64
	// naive is the yardstick's CPU time so far, noted at each mark and,
	// at naive[3], in all; naiveLines the lines it decoded, naiveAt
	// their count at each mark.
	naive      []time.Duration
	naiveSum   time.Duration
	naiveLines int
	naiveAt    []int
}

func newThirds(src Source, total int) *thirds {
	t := &thirds{Source: src, total: total}
	t.mark()
	return t
}

func (t *thirds) Fetch(ctx context.Context) (Message, error) {
	m, err := t.Source.Fetch(ctx)
	if err == nil {
		t.n++
		if t.n%naiveEvery == 0 && m.Value != nil {
			t.naiveDecode(m.Value)
		}
		if t.n == t.total/3 || t.n == 2*t.total/3 {
			t.mark()
		}
		if t.n == 2*t.total/3 {
			writeHeapProfile()
		}
	}
	return m, err
}

// naiveDecode is the yardstick on one line. The goroutine keeps its thread
// meanwhile, so the thread's CPU time is the decode's alone (with the
// garbage collection it assists), not the engine's too.
func (t *thirds) naiveDecode(line []byte) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0 := threadCPU()
	var m map[string]any
	_ = json.Unmarshal(line, &m) // poison lines fail, as they should
	t.naiveSum += threadCPU() - c0
	t.naiveLines++
}

// threadCPU is the calling thread's user and system CPU time
// (RUSAGE_THREAD, Linux; 0 elsewhere).
func threadCPU() time.Duration {
	const rusageThread = 1
	return rusageCPU(rusageThread)
}

func (t *thirds) mark() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.naive = append(t.naive, t.naiveSum)
	t.naiveAt = append(t.naiveAt, t.naiveLines)
	t.cpu = append(t.cpu, cpuTime())
	t.wall = append(t.wall, time.Now())
	if len(t.cpu) > 1 {
		t.rss = append(t.rss, vmKB("VmRSS"))
	}
}

// rates returns events per CPU second and per wall second of each third.
func (t *thirds) rates() (cpu, wall [3]float64) {
	per := float64(t.total) / 3
	for i := range 3 {
		cpu[i] = per / (t.cpu[i+1] - t.cpu[i] - (t.naive[i+1] - t.naive[i])).Seconds()
		wall[i] = per / t.wall[i+1].Sub(t.wall[i]).Seconds()
	}
	return cpu, wall
}

// naiveRates returns the yardstick's lines per CPU second in each third.
func (t *thirds) naiveRates() (r [3]float64) {
	for i := range 3 {
		r[i] = float64(t.naiveAt[i+1]-t.naiveAt[i]) / (t.naive[i+1] - t.naive[i]).Seconds()
	}
	return r
}

// cpuTotal is the engine's CPU time in the run, the yardstick's taken off.
func (t *thirds) cpuTotal() time.Duration { return t.cpu[3] - t.cpu[0] - t.naive[3] }

// writeHeapProfile writes the live heap to MCPLENS_BENCH_HEAPPROFILE, if
// set: what the engine holds two thirds into the run.
func writeHeapProfile() {
	path := os.Getenv("MCPLENS_BENCH_HEAPPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path) //nolint:gosec // G304: the benchmark's caller names it
	if err != nil {
		return
	}
	defer f.Close()
	runtime.GC()
	_ = pprof.WriteHeapProfile(f)
}

// countingSink counts the exchange records it passes on.
type countingSink struct {
	Sink
	rows int
}

// CopiesBatches: countingSink keeps nothing of a batch, and the sink it
// wraps here is a StdoutSink, a Copier.
func (s *countingSink) CopiesBatches() {}

func (s *countingSink) Write(ctx context.Context, b *schema.Batch) error {
	if err := s.Sink.Write(ctx, b); err != nil {
		return err
	}
	s.rows += len(b.Exchanges)
	return nil
}

// naiveDecodeFile is the yardstick: read the file line by line and decode
// each line with encoding/json into map[string]any, nothing else.
func naiveDecodeFile(b *testing.B, path string) (cpu, wall time.Duration) {
	f, err := os.Open(path) //nolint:gosec // G304: the benchmark's own file
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	c0, w0 := cpuTime(), time.Now()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m map[string]any
		_ = json.Unmarshal(sc.Bytes(), &m) // poison lines fail, as they should
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return cpuTime() - c0, time.Since(w0)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration { return rusageCPU(syscall.RUSAGE_SELF) }

// rusageCPU is the user and system CPU time getrusage reports for who.
func rusageCPU(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// vmKB reads a kB field (VmRSS, VmHWM) of /proc/self/status; 0 elsewhere.
func vmKB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(l, []byte(field+":")); ok {
			n, _ := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			return n
		}
	}
	return 0
}
