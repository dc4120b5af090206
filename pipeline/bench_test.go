package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/pipeline/pipelinetest"
)

// BenchmarkPipeline runs `ingest --from file:... --to stdout` in process:
// the file source and the whole engine (decode, dedupe, redact, correlate,
// classify, chain, encode to JSON) over a corpus with 2 KiB bodies and a
// 50/50 mix of exchange and split records. Compare events/s with
// BenchmarkNaiveLineDecode.
func BenchmarkPipeline(b *testing.B) {
	c := pipelinetest.Generate(20_000, 2048)
	path := filepath.Join(b.TempDir(), "corpus.ndjson")
	if err := os.WriteFile(path, append(bytes.Join(c.Lines, []byte("\n")), '\n'), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(totalBytes(c.Lines) / len(c.Lines)))
	events := 0
	start := time.Now()
	for b.Loop() {
		src, err := NewFileSource(path, FileSourceConfig{})
		if err != nil {
			b.Fatal(err)
		}
		e, err := New(DefaultConfig(), Deps{Source: src, Sink: NewStdoutSink(io.Discard, io.Discard), Logger: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		src.Close()
		events += len(c.Lines)
	}
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkNaiveLineDecode is the yardstick: a plain program that only
// decodes each line with encoding/json into map[string]any.
func BenchmarkNaiveLineDecode(b *testing.B) {
	c := pipelinetest.Generate(20_000, 2048)
	b.ReportAllocs()
	events := 0
	start := time.Now()
	for b.Loop() {
		for _, l := range c.Lines {
			var m map[string]any
			if err := json.Unmarshal(l, &m); err != nil {
				b.Fatal(err)
			}
		}
		events += len(c.Lines)
	}
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
}

func totalBytes(lines [][]byte) int {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	return n
}

// BenchmarkPendingMemory measures the heap held per request waiting for
// its response, beyond its bodies, at 100,000 pending requests.
func BenchmarkPendingMemory(b *testing.B) {
	const n = 100_000
	dec := NewDecoder()
	var lines [][]byte
	bodies := 0
	for i := range n {
		l := fmt.Appendf(nil, `{"event_id":"e-%d","ts":"2026-01-01T00:00:00.%03dZ","kind":"request","source":"gateway","observer":"gw-1","server":"kv","session_id":"sess-%d","exchange_id":"x-%d","http.method":"POST","http.request_headers":{"content-type":"application/json","accept":"application/json, text/event-stream","mcp-protocol-version":"2025-11-25","mcp-session-id":"sess-%d"},"request_body":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"lookup\",\"arguments\":{\"key\":\"k%d\"}}}"}`, i, i%1000, i%50, i, i%50, i, i)
		lines = append(lines, l)
	}
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := newCorrelator(CorrelatorConfig{MaxPending: 2 * n})
		bodies = 0
		for i, l := range lines {
			ev, err := dec.Decode(l, Position{Stream: "b", Offset: int64(i)})
			if err != nil {
				b.Fatal(err)
			}
			bodies += len(ev.RequestBody)
			c.Add(&ev, Position{Stream: "b", Offset: int64(i)})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		if p, _ := c.Pending(); p != n {
			b.Fatalf("%d pending", p)
		}
		// Everything the pending requests hold (event, headers, ids, map
		// and heap entries) minus their bodies.
		held := float64(after.HeapAlloc) - float64(before.HeapAlloc) - float64(bodies)
		b.ReportMetric(held/n, "bytes/pending")
		b.ReportMetric(float64(bodies)/n, "body-bytes/pending")
		runtime.KeepAlive(c)
	}
}
