package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/schema"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/ from the current output")

// sliceSource serves lines from memory and records commits.
type sliceSource struct {
	mu        sync.Mutex
	msgs      []Message
	i         int
	committed map[string]int64
	block     bool // at the end, block until ctx ends instead of io.EOF
}

func newSliceSource(stream string, lines [][]byte) *sliceSource {
	s := &sliceSource{committed: map[string]int64{}}
	for i, l := range lines {
		s.msgs = append(s.msgs, Message{Value: l, Pos: Position{Stream: stream, Offset: int64(i + 1)}})
	}
	return s
}

func (s *sliceSource) Fetch(ctx context.Context) (Message, error) {
	s.mu.Lock()
	if s.i < len(s.msgs) {
		m := s.msgs[s.i]
		s.i++
		s.mu.Unlock()
		return m, nil
	}
	s.mu.Unlock()
	if s.block {
		<-ctx.Done()
		return Message{}, ctx.Err()
	}
	return Message{}, io.EOF
}

func (s *sliceSource) Commit(_ context.Context, next []Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range next {
		s.committed[p.Stream] = p.Offset
	}
	return nil
}

func (s *sliceSource) Close() error { return nil }

// memSink keeps what it acknowledged; it fails the first failures writes.
type memSink struct {
	mu        sync.Mutex
	failures  int
	writes    int
	exchanges []schema.Exchange
	bodies    []schema.Body
	quar      []schema.Quarantined
	anns      []schema.ToolAnnotation
	tokens    []string
}

func (s *memSink) Write(_ context.Context, b *schema.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if s.failures > 0 {
		s.failures--
		return errors.New("store unavailable")
	}
	s.exchanges = append(s.exchanges, b.Exchanges...)
	s.bodies = append(s.bodies, b.Bodies...)
	s.quar = append(s.quar, b.Quarantine...)
	s.anns = append(s.anns, b.Annotations...)
	s.tokens = append(s.tokens, b.Token)
	return nil
}

func (s *memSink) Close() error { return nil }

func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			out = append(out, append([]byte(nil), sc.Bytes()...))
		}
	}
	return out
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.RetryMin, cfg.RetryMax = time.Millisecond, 5*time.Millisecond
	cfg.FlushInterval = 10 * time.Millisecond
	return cfg
}

// runMetered runs the engine with d until the end of input and returns
// the metrics it registered.
func runMetered(t testing.TB, cfg Config, d Deps) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	d.Registerer, d.Logger = reg, zerolog.Nop()
	e, err := New(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// runFile runs the engine over lines until the end of input.
func runFile(t testing.TB, cfg Config, lines [][]byte) (*memSink, *sliceSource) {
	t.Helper()
	src := newSliceSource("test.ndjson", lines)
	sink := &memSink{}
	e, err := New(cfg, Deps{Source: src, Sink: sink, Logger: zerolog.Nop(), Now: func() time.Time { return time.Unix(0, 0).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sink, src
}

// TestCorrelateGolden runs each testdata/correlate/*.ndjson through the
// whole pipeline and compares the exchange records with NAME.golden.
func TestCorrelateGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/correlate/*.ndjson")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".ndjson")
		t.Run(name, func(t *testing.T) {
			sink, _ := runFile(t, testConfig(), readLines(t, f))
			var buf bytes.Buffer
			for _, rec := range sink.exchanges {
				b, err := json.Marshal(rec)
				if err != nil {
					t.Fatal(err)
				}
				buf.Write(b)
				buf.WriteByte('\n')
			}
			golden := strings.TrimSuffix(f, ".ndjson") + ".golden"
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden: %v (run `go test ./pipeline -run TestCorrelateGolden -update`)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("correlated output of %s changed:\n%s\nIf intended, run `go test ./pipeline -run TestCorrelateGolden -update` and review the diff.", f, diffLines(string(want), buf.String()))
			}
		})
	}
}

func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			out.WriteString("line " + strconv.Itoa(i+1) + ":\n- " + a + "\n+ " + b + "\n")
		}
	}
	return out.String()
}
