package queries

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/duckdb/*.sql from the current rendering")

// TestRenderedGolden pins each query's DuckDB rendering, so a dialect
// change shows up as a reviewable diff.
func TestRenderedGolden(t *testing.T) {
	for _, name := range Names() {
		q := Get(name)
		path := filepath.Join("testdata", "duckdb", name+".sql")
		if *update {
			if err := os.WriteFile(path, []byte(q.DuckDB+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run `go test ./queries -run TestRenderedGolden -update`)", err)
		}
		if string(want) != q.DuckDB+"\n" {
			t.Errorf("DuckDB rendering of %s changed:\n%s\nIf intended, run `go test ./queries -run TestRenderedGolden -update` and review the diff.", name, q.DuckDB)
		}
	}
}

func TestRenderRules(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		got, err := RenderDuckDB(in)
		if err != nil {
			t.Fatalf("RenderDuckDB(%q): %v", in, err)
		}
		if got != want {
			t.Errorf("RenderDuckDB(%q)\n got %q\nwant %q", in, got, want)
		}
	}
	f("SELECT count() FROM t", "SELECT count(*) FROM t")
	f("SELECT countIf(a = 1) FROM t", "SELECT count(*) FILTER (WHERE a = 1) FROM t")
	f("SELECT sumIf(x, y > 2), avg(z)", "SELECT sum(x) FILTER (WHERE y > 2), avg(z)")
	f("quantileExactInclusive(0.5)(d)", "quantile_cont(d, 0.5)")
	f("quantileExactInclusiveIf(0.99)(d, o != 'NO_RESPONSE')", "quantile_cont(d, 0.99) FILTER (WHERE o != 'NO_RESPONSE')")
	f("arraySlice(arraySort(groupArray(id)), 1, 3)", "list_slice(list_sort(coalesce(list(id), [])), 1, 3)")
	f("arraySlice(a, 2, n)", "list_slice(a, 2, (2) + (n) - 1)")
	f("groupArrayIf(id, ok)", "coalesce(list(id) FILTER (WHERE ok), [])")
	f("groupUniqArrayIf(r, c = 'x, y')", "coalesce(list(DISTINCT r) FILTER (WHERE c = 'x, y'), [])")
	f("argMax(a, ts), argMin(b, ts)", "arg_max(a, ts), arg_min(b, ts)")
	f("dateDiff('millisecond', a.ts, b.ts)", "date_diff('millisecond', a.ts, b.ts)")
	f("toStartOfHour(ts) >= toStartOfHour({from:DateTime64(3, 'UTC')})", "date_trunc('hour', ts) >= date_trunc('hour', CAST($from AS TIMESTAMP))")
	f("toStartOfInterval(ts, toIntervalSecond({b:UInt32}))", "time_bucket(to_seconds(CAST($b AS BIGINT)), ts, TIMESTAMP '1970-01-01 00:00:00')")
	f("toFloat64(n) / uniqExact(id)", "CAST(n AS DOUBLE) / count(DISTINCT id)")
	f("lowerUTF8(m) LIKE {q:String} ESCAPE '!'", "lower(m) LIKE CAST($q AS VARCHAR) ESCAPE '!'")
	// Names inside strings, qualified names and non-calls stay.
	f("SELECT 'countIf(x)', t.count, count AS n", "SELECT 'countIf(x)', t.count, count AS n")
	f("SELECT a -- countIf(b)\nFROM t", "SELECT a\nFROM t")
	f("SELECT * FROM t ORDER BY ts LIMIT 1 BY exchange_id LIMIT 5", "SELECT * FROM t ORDER BY ts LIMIT 5")
	f("SELECT * FROM (SELECT * FROM q LIMIT 1 BY position)", "SELECT * FROM (SELECT * FROM q)")
	f("SELECT x FROM exchanges FINAL WHERE y", "SELECT x FROM exchanges WHERE y")
}

func TestRenderErrors(t *testing.T) {
	for _, in := range []string{
		"SELECT * FROM t LIMIT 2 BY server",
		"SELECT {x:Decimal(10, 2)}",
		"SELECT quantileExactInclusive(0.5)",
		"SELECT countIf(",
		"SELECT arraySlice(a, 1)",
	} {
		if _, err := RenderDuckDB(in); err == nil {
			t.Errorf("RenderDuckDB(%q) succeeded, want an error", in)
		}
	}
}

func TestParseParams(t *testing.T) {
	q, err := Parse("x", "SELECT {a:String}, {b:UInt32}, {a:String}, {t:DateTime64(3, 'UTC')}")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range q.Params {
		names = append(names, p.Name+":"+p.Type)
	}
	if got := strings.Join(names, ","); got != "a:String,b:UInt32,t:DateTime64(3, 'UTC')" {
		t.Errorf("params = %s", got)
	}
	if _, err := Parse("x", "SELECT {a:String}, {a:UInt32}"); err == nil {
		t.Error("a parameter declared with two types parsed")
	}
}

// TestQueriesStayPortable guards the habits the dialect layer relies on.
func TestQueriesStayPortable(t *testing.T) {
	for _, name := range Names() {
		q := Get(name)
		if strings.Contains(strings.ToUpper(finalExchanges.ReplaceAllString(q.SQL, "")), " FINAL") {
			t.Errorf("%s reads a table other than exchanges with FINAL; deduplicate with LIMIT 1 BY or aggregation", name)
		}
		if strings.Contains(q.DuckDB, "{") {
			t.Errorf("%s: DuckDB rendering keeps a placeholder:\n%s", name, q.DuckDB)
		}
		if strings.Contains(q.SQL, "exchanges") && !strings.Contains(q.SQL, "LIMIT 1 BY exchange_id") && !finalExchanges.MatchString(q.SQL) &&
			name != "latest" && name != "exchange" && name != "exchange_ts" {
			t.Errorf("%s reads exchanges without FINAL or LIMIT 1 BY exchange_id", name)
		}
	}
}
