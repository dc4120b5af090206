package api

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
	"github.com/mcplens/mcplens/store/duckstore"
)

// TestEnginesAgree asks every route of the API, with many parameter
// sets, of a DuckDB store and of the real ClickHouse server holding the
// same data (the conformance corpus and the recorded real-SDK traffic of
// testdata/real, ingested by the pipeline into each), and compares the
// answers by value and by JSON type: a bool is never a number on one
// engine, a missing field is never null on the other; floats within a
// relative 1e-9.
func TestEnginesAgree(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	ctx := t.Context()
	corpus, err := querytest.ReadCorpus(apitest.CorpusPath())
	if err != nil {
		t.Fatal(err)
	}
	duck, err := duckstore.Open(ctx, filepath.Join(t.TempDir(), "agree.duckdb"), duckstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer duck.Close()
	ch, err := apitest.OpenClickHouse(ctx, dsn, clickhousetest.UniqueName(t, "mcplens_agree"))
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	corpus.Token = "corpus"
	recordings, err := filepath.Glob("../testdata/real/*.ndjson")
	if err != nil || len(recordings) == 0 {
		t.Fatalf("no real-SDK recordings in testdata/real (%v)", err)
	}
	for _, s := range []pipeline.Sink{duck, ch} {
		if err := s.Write(ctx, corpus); err != nil {
			t.Fatal(err)
		}
		for _, path := range recordings {
			src, err := pipeline.NewFileSource(path, pipeline.FileSourceConfig{})
			if err != nil {
				t.Fatal(err)
			}
			eng, err := pipeline.New(pipeline.DefaultConfig(), pipeline.Deps{Source: src, Sink: s, Logger: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			if err := eng.Run(ctx); err != nil {
				t.Fatalf("ingest %s: %v", path, err)
			}
			src.Close()
		}
	}
	// Five minutes (see newTestAPI): the bundle reads every exchange of
	// the range one by one, hundreds of queries, which on the server of a
	// loaded machine outlasted one minute (a 503 at load 30). The test
	// compares answers; BenchmarkRoutesClickHouse measures their speed.
	d, c := newTestAPI(t, duck), newTestAPI(t, ch, func(c *Config) { c.QueryTimeout = 5 * time.Minute })

	// What to ask about: every server, client, tool, id and session the
	// DuckDB side knows.
	var ids, sessions, servers, clients, tools []string
	walkPages(t, d, "/api/v1/exchanges?"+fixtureRange+"&limit=500", func(row map[string]any) {
		ids = append(ids, fmt.Sprint(row["exchange_id"]))
		if s, _ := row["session_id"].(string); s != "" {
			sessions = append(sessions, s)
		}
	})
	for path, into := range map[string]*[]string{"servers": &servers, "clients": &clients, "tools": &tools} {
		p := decode[page[map[string]any]](t, d.get("/api/v1/"+path+"?"+fixtureRange, readToken), 200)
		for _, r := range p.Rows {
			*into = append(*into, fmt.Sprint(r["name"]))
		}
	}
	if len(ids) < 100 || len(servers) < 3 || len(sessions) < 5 {
		t.Fatalf("too little to compare: %d ids, %d servers, %d sessions", len(ids), len(servers), len(sessions))
	}

	var paths []string
	add := func(path string, q url.Values) { paths = append(paths, path+"?"+fixtureRange+"&"+q.Encode()) }
	questions := []string{"http200-jsonrpc-errors", "unknown-side-effect-retries", "client-disagreements", "rate-limits", "stream-cuts", "input-required"}
	for _, qn := range questions {
		add("/api/v1/questions/"+qn, nil)
		for _, sv := range servers {
			add("/api/v1/questions/"+qn, url.Values{"server": {sv}})
		}
	}
	for _, qn := range []string{"unknown-side-effect-retries", "client-disagreements", "rate-limits"} {
		for _, cl := range clients {
			add("/api/v1/questions/"+qn, url.Values{"client": {cl}})
		}
	}
	for _, tl := range tools {
		add("/api/v1/questions/unknown-side-effect-retries", url.Values{"tool": {tl}})
		add("/api/v1/questions/input-required", url.Values{"tool": {tl}})
		add("/api/v1/exchanges", url.Values{"tool": {tl}})
	}
	for _, g := range []string{"server", "client", "tool", "method", "layer", "outcome"} {
		for _, b := range []string{"", "1m", "5m", "1h", "1d"} {
			q := url.Values{"group_by": {g}}
			if b != "" {
				q.Set("bucket", b)
			}
			add("/api/v1/outcomes", q)
		}
		add("/api/v1/outcomes", url.Values{"group_by": {g}, "server": {servers[0]}})
	}
	for _, lb := range []string{"servers", "clients", "tools"} {
		add("/api/v1/"+lb, nil)
		add("/api/v1/"+lb, url.Values{"server": {servers[0]}})
	}
	for _, q := range []url.Values{
		{"limit": {"7"}}, {"outcome": {"JSONRPC_ERROR"}}, {"layer": {"transport"}}, {"error_class": {"TIMEOUT"}},
		{"q": {"error"}}, {"q": {"%"}}, {"method": {"tools/call"}}, {"server": {servers[1]}, "limit": {"3"}},
	} {
		add("/api/v1/exchanges", q)
	}
	for _, id := range ids {
		paths = append(paths, "/api/v1/exchanges/"+url.PathEscape(id))
	}
	for _, s := range uniq(sessions) {
		add("/api/v1/sessions/"+url.PathEscape(s)+"/timeline", nil)
		add("/api/v1/sessions/"+url.PathEscape(s)+"/timeline", url.Values{"limit": {"2"}})
	}

	compared := 0
	for _, p := range paths {
		rd, rc := d.get(p, bodiesToken), c.get(p, bodiesToken)
		if rd.Code != rc.Code {
			t.Errorf("%s: DuckDB %d, ClickHouse %d: %s", p, rd.Code, rc.Code, rc.Body)
			continue
		}
		if rd.Code != 200 {
			t.Errorf("%s: %d on both: %s", p, rd.Code, rd.Body)
			continue
		}
		if diff := sameTyped(jsonOf(t, rd.Body.Bytes()), jsonOf(t, rc.Body.Bytes()), "$"); diff != "" {
			t.Errorf("%s: engines differ at %s", p, diff)
		}
		compared++
		// Follow the pages of a paged answer on both sides.
		for next := nextURL(rd.Body.Bytes()); next != "" && compared < 100000; next = nextURL(rd.Body.Bytes()) {
			rd, rc = d.get(next, bodiesToken), c.get(next, bodiesToken)
			if diff := sameTyped(jsonOf(t, rd.Body.Bytes()), jsonOf(t, rc.Body.Bytes()), "$"); rd.Code != rc.Code || diff != "" {
				t.Errorf("%s: engines differ (%d, %d) at %s", next, rd.Code, rc.Code, diff)
				break
			}
			compared++
		}
	}

	// The postmortem bundle: the same files with the same contents.
	bp := "/api/v1/incidents/bundle?" + fixtureRange
	fd, fc := bundleFiles(t, d, bp), bundleFiles(t, c, bp)
	if len(fd) < 3 {
		t.Errorf("the DuckDB bundle has %d files", len(fd))
	}
	for name, want := range fd {
		if got, ok := fc[name]; !ok || !sameFile(name, want, got) {
			t.Errorf("bundle file %s differs on ClickHouse:\n--- duckdb\n%.2000s\n--- clickhouse\n%.2000s", name, want, got)
		}
	}
	for name := range fc {
		if _, ok := fd[name]; !ok {
			t.Errorf("bundle file %s only on ClickHouse", name)
		}
	}
	t.Logf("%d answers the same on both engines (%d exchanges, %d sessions, %d servers), bundle of %d files", compared, len(ids), len(uniq(sessions)), len(servers), len(fd))
}

func walkPages(t *testing.T, a *testAPI, path string, row func(map[string]any)) {
	t.Helper()
	for path != "" {
		rec := a.get(path, readToken)
		p := decode[page[map[string]any]](t, rec, 200)
		for _, r := range p.Rows {
			row(r)
		}
		path = nextURL(rec.Body.Bytes())
	}
}

func nextURL(body []byte) string {
	var p struct {
		NextURL *string `json:"next_url"`
	}
	if json.Unmarshal(body, &p) != nil || p.NextURL == nil {
		return ""
	}
	return *p.NextURL
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// jsonOf decodes JSON keeping numbers as written, so their JSON type and
// digits survive.
func jsonOf(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

// sameTyped returns where two JSON values differ in value or JSON type
// ("" if nowhere): numbers equal (floats within 1e-9 relative), every key
// on both sides.
func sameTyped(a, b any, path string) string {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return fmt.Sprintf("%s: %v (number) vs %#v (%T)", path, x, b, b)
		}
		if x == y {
			return ""
		}
		fx, err1 := x.Float64()
		fy, err2 := y.Float64()
		if err1 != nil || err2 != nil || math.Abs(fx-fy) > 1e-9*math.Max(math.Abs(fx), math.Abs(fy)) {
			return fmt.Sprintf("%s: %v vs %v", path, x, y)
		}
		return ""
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return fmt.Sprintf("%s: %d items vs %#v", path, len(x), b)
		}
		for i := range x {
			if d := sameTyped(x[i], y[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: object vs %#v", path, b)
		}
		keys := map[string]bool{}
		for k := range x {
			keys[k] = true
		}
		for k := range y {
			keys[k] = true
		}
		for k := range keys {
			xv, xok := x[k]
			yv, yok := y[k]
			if xok != yok {
				return fmt.Sprintf("%s.%s: present %v vs %v", path, k, xok, yok)
			}
			if d := sameTyped(xv, yv, path+"."+k); d != "" {
				return d
			}
		}
		return ""
	}
	if fmt.Sprintf("%T", a) != fmt.Sprintf("%T", b) || a != b {
		return fmt.Sprintf("%s: %#v (%T) vs %#v (%T)", path, a, a, b, b)
	}
	return ""
}

func bundleFiles(t *testing.T, a *testAPI, path string) map[string]string {
	t.Helper()
	rec := a.get(path, bodiesToken)
	if rec.Code != 200 {
		t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = string(b)
	}
}

// sameFile compares bundle files: NDJSON line by line as typed JSON, the
// rest as text.
func sameFile(name, a, b string) bool {
	if !strings.HasSuffix(name, ".ndjson") && !strings.HasSuffix(name, ".json") {
		return a == b
	}
	la, lb := strings.Split(strings.TrimSpace(a), "\n"), strings.Split(strings.TrimSpace(b), "\n")
	if len(la) != len(lb) {
		return false
	}
	for i := range la {
		var va, vb any
		da, db := json.NewDecoder(strings.NewReader(la[i])), json.NewDecoder(strings.NewReader(lb[i]))
		da.UseNumber()
		db.UseNumber()
		if da.Decode(&va) != nil || db.Decode(&vb) != nil || sameTyped(va, vb, "$") != "" {
			return la[i] == lb[i]
		}
	}
	return true
}

var _ queries.Store = (*duckstore.Store)(nil)

func TestSameTyped(t *testing.T) {
	f := func(a, b string, same bool) {
		t.Helper()
		var va, vb any
		da, db := json.NewDecoder(strings.NewReader(a)), json.NewDecoder(strings.NewReader(b))
		da.UseNumber()
		db.UseNumber()
		if da.Decode(&va) != nil || db.Decode(&vb) != nil {
			t.Fatalf("bad JSON %s or %s", a, b)
		}
		if d := sameTyped(va, vb, "$"); (d == "") != same {
			t.Errorf("sameTyped(%s, %s) = %q, want same=%v", a, b, d, same)
		}
	}
	f(`{"annotated":true}`, `{"annotated":1}`, false)
	f(`{"a":0}`, `{"a":false}`, false)
	f(`{"a":null}`, `{}`, false)
	f(`{"a":null}`, `{"a":0}`, false)
	f(`{"a":"1"}`, `{"a":1}`, false)
	f(`[1,2]`, `[1,2,3]`, false)
	f(`{"share":0.30000000000000004}`, `{"share":0.3}`, true)
	f(`{"share":0.3}`, `{"share":0.31}`, false)
	f(`{"a":[{"b":true}],"c":"x"}`, `{"c":"x","a":[{"b":true}]}`, true)
}
