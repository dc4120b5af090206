package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/mcplens/mcplens/internal/loadgen"
)

// BenchmarkIngestRSS runs the ingest binary, one core, over 1,000,000
// events of production-shaped traffic (internal/loadgen, 1,000 calls/s of
// event time, so about 9 minutes: the chain and dedupe windows fill and
// nothing expires early), file -> stdout at the default bounds, and
// reports its peak RSS and events per CPU second: as it is, and with
// --memory-limit=256MiB. MCPLENS_BENCH_EVENTS changes the size.
func BenchmarkIngestRSS(b *testing.B) {
	calls := 545_000 // about 1,000,000 lines
	if s := os.Getenv("MCPLENS_BENCH_EVENTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("MCPLENS_BENCH_EVENTS=%q: want a positive number", s)
		}
		calls = max(1, n*545/1000)
	}
	path := filepath.Join(b.TempDir(), "load.ndjson")
	truth, err := loadgen.WriteFile(path, loadgen.Config{Seed: 11, Calls: calls})
	if err != nil {
		b.Fatal(err)
	}
	for _, limit := range []string{"", "256MiB"} {
		name := "default"
		if limit != "" {
			name = "memory-limit=" + limit
		}
		b.Run(name, func(b *testing.B) {
			var rss int64
			var cpu float64
			for b.Loop() {
				cmd := exec.Command(ingestBin, "--from", "file:"+path, "--to", "stdout", "--listen", "", "--progress", "never", "--memory-limit", limit)
				cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GOMEMLIMIT=")
				cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				if !ok {
					b.Fatal("no rusage")
				}
				rss = max(rss, ru.Maxrss) // KiB on Linux
				cpu = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
			}
			b.ReportMetric(float64(rss)/1024, "peak-rss-MB")
			b.ReportMetric(float64(truth.Lines)/cpu, "events/cpu-s")
			b.ReportMetric(float64(truth.Lines), "events")
		})
	}
}
