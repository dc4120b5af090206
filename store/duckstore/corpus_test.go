package duckstore

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/schema"
)

var update = flag.Bool("update", false, "rebuild testdata/conformance (corpus and expected answers) from the pipeline and DuckDB")

const conformanceDir = "../../testdata/conformance"

// corpusInputs are the recordings the corpus is built from: the pipeline's
// correlation fixtures (each moved to its own hour and given its own event
// ids, since they all start at the same instant with the same ids), the
// real Go SDK recording, and hand-made edge cases for each question.
func corpusInputs(t *testing.T) []struct {
	path      string
	namespace string
	shift     time.Duration
} {
	var out []struct {
		path      string
		namespace string
		shift     time.Duration
	}
	add := func(glob string, shift func(i int) time.Duration, ns bool) {
		files, err := filepath.Glob(glob)
		if err != nil || len(files) == 0 {
			t.Fatalf("corpus inputs %s: %v (none found)", glob, err)
		}
		sort.Strings(files)
		for i, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".ndjson")
			n := ""
			if ns {
				n = name + "/"
			}
			out = append(out, struct {
				path      string
				namespace string
				shift     time.Duration
			}{f, n, shift(i)})
		}
	}
	add("../../pipeline/testdata/correlate/*.ndjson", func(i int) time.Duration { return time.Duration(i) * time.Hour }, true)
	add("../../testdata/real/gosdk.ndjson", func(int) time.Duration { return 0 }, false)
	add(conformanceDir+"/input/*.ndjson", func(int) time.Duration { return 0 }, false)
	return out
}

// rewriteInput namespaces event and exchange ids and shifts ts of every
// JSON line; other lines stay as they are (they are quarantined).
func rewriteInput(src []byte, ns string, shift time.Duration) ([]byte, error) {
	var out bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimRight(src, "\n"), []byte("\n")) {
		var ev map[string]any
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		if d.Decode(&ev) != nil || (ns == "" && shift == 0) {
			out.Write(line)
			out.WriteByte('\n')
			continue
		}
		for _, k := range []string{"event_id", "exchange_id"} {
			if s, ok := ev[k].(string); ok && s != "" {
				ev[k] = ns + s
			}
		}
		if s, ok := ev["ts"].(string); ok {
			ts, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return nil, err
			}
			ev["ts"] = ts.Add(shift).UTC().Format(time.RFC3339Nano)
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

type captureSink struct{ b schema.Batch }

func (c *captureSink) Write(_ context.Context, b *schema.Batch) error {
	c.b.Exchanges = append(c.b.Exchanges, b.Exchanges...)
	c.b.Bodies = append(c.b.Bodies, b.Bodies...)
	c.b.Annotations = append(c.b.Annotations, b.Annotations...)
	c.b.Quarantine = append(c.b.Quarantine, b.Quarantine...)
	return nil
}
func (c *captureSink) Close() error { return nil }

// corpusLine is one row of corpus.ndjson.
type corpusLine struct {
	Table string          `json:"table"`
	Row   json.RawMessage `json:"row"`
}

// quarantineRow is how a quarantined line is written to the corpus: raw
// as text, so that both loaders read it alike.
type quarantineJSON struct {
	TS       time.Time `json:"ts"`
	Position string    `json:"position"`
	Reason   string    `json:"reason"`
	Raw      string    `json:"raw"`
}

// buildCorpus runs every input through the real pipeline and writes the
// rows it produced, times cut to milliseconds as both stores keep them.
func buildCorpus(t *testing.T) {
	tmp := t.TempDir()
	var all schema.Batch
	for _, in := range corpusInputs(t) {
		src, err := os.ReadFile(in.path)
		if err != nil {
			t.Fatal(err)
		}
		data, err := rewriteInput(src, in.namespace, in.shift)
		if err != nil {
			t.Fatalf("%s: %v", in.path, err)
		}
		path := filepath.Join(tmp, filepath.Base(in.path))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		src2, err := pipeline.NewFileSource(path, pipeline.FileSourceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		sink := &captureSink{}
		clock := time.Date(2026, 11, 3, 15, 30, 0, 0, time.UTC)
		eng, err := pipeline.New(pipeline.DefaultConfig(), pipeline.Deps{Source: src2, Sink: sink, Logger: zerolog.Nop(), Now: func() time.Time { return clock }})
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.Run(context.Background()); err != nil {
			t.Fatalf("pipeline on %s: %v", in.path, err)
		}
		src2.Close()
		for i := range sink.b.Quarantine {
			q := &sink.b.Quarantine[i]
			q.Position = strings.Replace(q.Position, tmp+string(filepath.Separator), "input/", 1)
		}
		all.Exchanges = append(all.Exchanges, sink.b.Exchanges...)
		all.Bodies = append(all.Bodies, sink.b.Bodies...)
		all.Annotations = append(all.Annotations, sink.b.Annotations...)
		all.Quarantine = append(all.Quarantine, sink.b.Quarantine...)
	}
	seen := map[string]string{}
	var buf bytes.Buffer
	emit := func(table string, row any) {
		b, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(corpusLine{Table: table, Row: b})
		buf.Write(line)
		buf.WriteByte('\n')
	}
	for _, e := range all.Exchanges {
		if prev, ok := seen[e.ExchangeID]; ok {
			t.Fatalf("exchange id %s produced twice (%s): the corpus needs unique ids", e.ExchangeID, prev)
		}
		seen[e.ExchangeID] = e.Server
		e.TS, e.EndTS = stamp(e.TS), stamp(e.EndTS)
		emit("exchanges", e)
	}
	for _, b := range all.Bodies {
		b.TS = stamp(b.TS)
		emit("exchange_bodies", b)
	}
	for _, a := range all.Annotations {
		a.SeenAt = stamp(a.SeenAt)
		emit("tool_annotations", a)
	}
	for _, q := range all.Quarantine {
		emit("quarantine", quarantineJSON{TS: stamp(q.TS), Position: q.Position, Reason: q.Reason, Raw: string(q.Raw)})
	}
	if err := os.WriteFile(filepath.Join(conformanceDir, "corpus.ndjson"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("corpus: %d exchanges, %d bodies, %d annotations, %d quarantined", len(all.Exchanges), len(all.Bodies), len(all.Annotations), len(all.Quarantine))
}

// loadCorpus reads corpus.ndjson into one batch.
func loadCorpus(t testing.TB) *schema.Batch {
	b, err := querytest.ReadCorpus(filepath.Join(conformanceDir, "corpus.ndjson"))
	if err != nil {
		t.Fatalf("%v (run `go test ./store/duckstore -run TestConformance -update`)", err)
	}
	return b
}

func TestBuildCorpus(t *testing.T) {
	if !*update {
		t.Skip("the corpus is rebuilt only with -update")
	}
	buildCorpus(t)
}
