// Package querytest runs the conformance cases of testdata/conformance
// (cases.json, expected/*.json) on any queries.Engine, so that the DuckDB
// store, the ClickHouse store and the chDB test (tests/chdb, the same
// files read from Python) prove the same answers.
package querytest

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

	"github.com/mcplens/mcplens/queries"
)

// A conformance case: one query with bound arguments, as JSON values. The
// same file drives tests/chdb (ClickHouse's engine) and, with
// CLICKHOUSE_DSN, the chstore tests, against the same expected rows.
type confCase struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

func loadCases(t testing.TB, dir string) map[string][]confCase {
	b, err := os.ReadFile(filepath.Join(dir, "cases.json"))
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

// SameJSON compares JSON values, floats within a relative 1e-9 (engines
// may round the last bit of a quantile or ratio differently).
func SameJSON(a, b any) bool {
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
			if !SameJSON(x[i], y[i]) {
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
			if !SameJSON(v, y[k]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

func expectedPath(dir, query string) string {
	return filepath.Join(dir, "expected", query+".json")
}

// Run runs every case of every query of testdata/conformance (dir) on an
// engine and compares the rows with the expected files, or rewrites them
// when rewrite is set. It fails t for a query without a case.
func Run(t *testing.T, dir string, e queries.Engine, rewrite bool) {
	cases := loadCases(t, dir)
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
		path := expectedPath(dir, name)
		if rewrite {
			b, _ := json.MarshalIndent(got, "", " ")
			if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("read %s: %v (run `go test ./store/duckstore -run TestConformance -update`)", path, err)
		}
		var want map[string]any
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases[name] {
			if !SameJSON(want[c.Name], got[c.Name]) {
				w, _ := json.MarshalIndent(want[c.Name], "", " ")
				g, _ := json.MarshalIndent(got[c.Name], "", " ")
				t.Errorf("%s/%s differs from %s:\nwant %s\n got %s\nIf the change is intended, run `go test ./store/duckstore -run TestConformance -update` and review the diff.", name, c.Name, path, w, g)
			}
		}
	}
}
