package duckstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
)

// A conformance case: one query with bound arguments, as JSON values. The
// same file drives tests/chdb (ClickHouse's engine) and, with
// CLICKHOUSE_DSN, the chstore tests, against the same expected rows.
type confCase struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

func loadCases(t testing.TB) map[string][]confCase {
	b, err := os.ReadFile(filepath.Join(conformanceDir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases map[string][]confCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

// bindArgs converts a case's JSON arguments to Go values of the
// parameters' types.
func bindArgs(q *queries.Query, in map[string]any) (queries.Args, error) {
	out := queries.Args{}
	for _, p := range q.Params {
		v, ok := in[p.Name]
		if !ok {
			return nil, fmt.Errorf("case lacks argument %s", p.Name)
		}
		switch {
		case strings.HasPrefix(p.Type, "DateTime64"):
			ts, err := time.Parse(time.RFC3339Nano, v.(string))
			if err != nil {
				return nil, err
			}
			out[p.Name] = ts.UTC()
		case strings.HasPrefix(p.Type, "UInt"), strings.HasPrefix(p.Type, "Int"):
			out[p.Name] = int64(v.(float64))
		default:
			out[p.Name] = v
		}
	}
	return out, nil
}

// canonical turns rows into plain JSON values, as the expected files hold
// them.
func canonical(t testing.TB, rows []map[string]any) []any {
	b, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	var out []any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out == nil {
		out = []any{}
	}
	return out
}

// sameJSON compares JSON values, floats within a relative 1e-9 (engines
// may round the last bit of a quantile or ratio differently).
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y)))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !sameJSON(v, y[k]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

func expectedPath(query string) string {
	return filepath.Join(conformanceDir, "expected", query+".json")
}

// runConformance runs every case of every query on an engine and compares
// the rows with the expected files (or rewrites them with -update).
func runConformance(t *testing.T, e queries.Engine, rewrite bool) {
	cases := loadCases(t)
	for _, name := range queries.Names() {
		if len(cases[name]) == 0 {
			t.Errorf("query %s has no conformance case in cases.json", name)
		}
	}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		q, ok := queries.All()[name]
		if !ok {
			t.Errorf("cases.json names unknown query %s", name)
			continue
		}
		got := map[string]any{}
		for _, c := range cases[name] {
			args, err := bindArgs(q, c.Args)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, c.Name, err)
			}
			tab, err := e.Run(context.Background(), q, args)
			if err != nil {
				t.Fatalf("%s/%s: %v", name, c.Name, err)
			}
			got[c.Name] = canonical(t, tab.Maps())
		}
		path := expectedPath(name)
		if rewrite {
			b, _ := json.MarshalIndent(got, "", " ")
			if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("read %s: %v (run `go test ./pipeline/duckstore -run TestConformance -update`)", path, err)
		}
		var want map[string]any
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases[name] {
			if !sameJSON(want[c.Name], got[c.Name]) {
				w, _ := json.MarshalIndent(want[c.Name], "", " ")
				g, _ := json.MarshalIndent(got[c.Name], "", " ")
				t.Errorf("%s/%s differs from %s:\nwant %s\n got %s\nIf the change is intended, run `go test ./pipeline/duckstore -run TestConformance -update` and review the diff.", name, c.Name, path, w, g)
			}
		}
	}
}

func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "mcplens.duckdb"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance loads the corpus into DuckDB and checks every question
// against testdata/conformance/expected.
func TestConformance(t *testing.T) {
	s := openTemp(t)
	if err := s.Write(context.Background(), loadCorpus(t)); err != nil {
		t.Fatal(err)
	}
	runConformance(t, s, *update)
}

// splitBatches cuts a batch into batches of n rows of each kind.
func splitBatches(b *pipeline.Batch, n int) []*pipeline.Batch {
	var out []*pipeline.Batch
	for i := 0; ; i++ {
		lo, hi := i*n, (i+1)*n
		part := &pipeline.Batch{Token: fmt.Sprintf("part-%d", i)}
		part.Exchanges = window(b.Exchanges, lo, hi)
		part.Bodies = window(b.Bodies, lo, hi)
		part.Annotations = window(b.Annotations, lo, hi)
		part.Quarantine = window(b.Quarantine, lo, hi)
		if part.Len() == 0 {
			return out
		}
		out = append(out, part)
	}
}

func window[T any](s []T, lo, hi int) []T {
	if lo >= len(s) {
		return nil
	}
	return s[lo:min(hi, len(s))]
}

// TestConformanceInsertedTwice writes the corpus twice, the second time
// in other batches (as a replay after a crash would), and gets the same
// answers.
func TestConformanceInsertedTwice(t *testing.T) {
	if *update {
		t.Skip("compares with the expected files")
	}
	s := openTemp(t)
	ctx := context.Background()
	corpus := loadCorpus(t)
	if err := s.Write(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	for _, b := range splitBatches(corpus, 7) {
		if err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	// A batch that repeats rows within itself is stored once too.
	doubled := *corpus
	doubled.Exchanges = append(append([]schema.Exchange{}, corpus.Exchanges...), corpus.Exchanges...)
	if err := s.Write(ctx, &doubled); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.DB().QueryRow("SELECT count(*) FROM exchanges").Scan(&n); err != nil || n != len(corpus.Exchanges) {
		t.Fatalf("stored %d exchanges (err %v), want %d", n, err, len(corpus.Exchanges))
	}
	runConformance(t, s, false)
}
