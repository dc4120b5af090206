package schema

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the rendered DDL in testdata/ from the current templates")

// TestRenderedGolden pins the DDL each variant renders to. The chDB test
// (tests/chdb) executes these files, so they are also its input.
func TestRenderedGolden(t *testing.T) {
	cases := []struct {
		file   string
		engine Engine
		opts   Options
	}{
		{"clickhouse_single.sql", ClickHouse, Options{DB: "mcplens", TTL: 30 * 24 * time.Hour, BodyTTL: 7 * 24 * time.Hour}},
		// Without TTLs, for the chDB conformance tests, whose fixture times
		// would otherwise expire as the wall clock moves on.
		{"clickhouse_single_nottl.sql", ClickHouse, Options{DB: "mcplens"}},
		{"clickhouse_cluster.sql", ClickHouse, Options{DB: "mcplens", Cluster: "mcplens_cluster", TTL: 30 * 24 * time.Hour, BodyTTL: 7 * 24 * time.Hour}},
		{"duckdb.sql", DuckDB, Options{}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			migs, err := Migrations(c.engine, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, m := range migs {
				b.WriteString("-- migration " + m.Name + "\n")
				for _, s := range m.Statements {
					b.WriteString(s + ";\n\n")
				}
			}
			golden := filepath.Join("testdata", c.file)
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden: %v (run `go test ./schema -run TestRenderedGolden -update`)", err)
			}
			if string(want) != b.String() {
				t.Errorf("rendered DDL of %s changed; if intended, run `go test ./schema -run TestRenderedGolden -update` and review the diff", c.file)
			}
		})
	}
}

func TestMigrationsOrderAndShape(t *testing.T) {
	for _, e := range []Engine{ClickHouse, DuckDB} {
		migs, err := Migrations(e, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if migs[0].Name != "schema_migrations" {
			t.Errorf("%s: first migration is %q, want schema_migrations (Apply runs it first)", e, migs[0].Name)
		}
		for i, m := range migs {
			// Gaps are allowed (each issue has its own range of numbers);
			// Migrations already refuses a version that repeats or goes back.
			if i > 0 && m.Version <= migs[i-1].Version {
				t.Errorf("%s: migration %d has version %d, want increasing numbers", e, i, m.Version)
			}
			for _, s := range m.Statements {
				// A data repair (UPDATE ... WHERE the old form) is idempotent too.
				// On ClickHouse it is a mutation: ALTER TABLE ... UPDATE ... WHERE.
				repair := (strings.HasPrefix(s, "UPDATE ") || strings.HasPrefix(s, "ALTER TABLE ") && strings.Contains(s, " UPDATE ")) && strings.Contains(s, "WHERE ")
				// A text column that becomes bytes converts through
				// encode(), which fails to bind on bytes: never twice.
				repair = repair || strings.HasPrefix(s, "ALTER TABLE ") && strings.Contains(s, " TYPE BLOB USING encode(") || s == "CHECKPOINT"
				// A JSON column made text: set again, a cast to its own type.
				repair = repair || strings.HasPrefix(s, "ALTER TABLE ") && strings.HasSuffix(s, " TYPE VARCHAR")
				// A NOT NULL set again on a column that has it is a no-op.
				repair = repair || strings.HasPrefix(s, "ALTER TABLE ") && strings.HasSuffix(s, " SET NOT NULL")
				if !strings.Contains(s, "IF NOT EXISTS") && !repair {
					t.Errorf("%s %s: statement is not idempotent:\n%s", e, m.Name, s)
				}
				if strings.Contains(s, "{{") || strings.Contains(s, "<no value>") {
					t.Errorf("%s %s: unrendered template:\n%s", e, m.Name, s)
				}
			}
		}
	}
	ch, _ := Migrations(ClickHouse, DefaultOptions())
	duck, _ := Migrations(DuckDB, DefaultOptions())
	// A version both engines have is the same step on both; a step one
	// engine alone needs (a repair of how DuckDB stored a column) has a
	// version of its own.
	names := map[int]string{}
	for _, m := range ch {
		names[m.Version] = m.Name
	}
	for _, m := range duck {
		if n, ok := names[m.Version]; ok && n != m.Name {
			t.Errorf("migration %04d is %q on ClickHouse and %q on DuckDB", m.Version, n, m.Name)
		}
	}
}

func TestClusterVariant(t *testing.T) {
	migs, err := Migrations(ClickHouse, Options{Cluster: "c1", TTL: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	all := ""
	for _, m := range migs {
		all += strings.Join(m.Statements, ";\n") + ";\n"
	}
	for _, want := range []string{
		"CREATE TABLE IF NOT EXISTS mcplens.exchanges_local ON CLUSTER 'c1'",
		"ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')",
		"ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', seen_at)",
		"ENGINE = Distributed('c1', 'mcplens', 'exchanges_local', cityHash64(exchange_id))",
		"ReplicatedReplacingMergeTree('/clickhouse/tables/all/{database}/{table}', '{replica}', applied_at)",
		"TTL toDateTime(ts) + INTERVAL 86400 SECOND",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("cluster DDL lacks %q", want)
		}
	}
	if strings.Contains(all, "non_replicated_deduplication_window") {
		t.Error("cluster DDL sets non_replicated_deduplication_window on replicated tables")
	}
	single, _ := Migrations(ClickHouse, Options{TTL: 0})
	for _, m := range single {
		for _, s := range m.Statements {
			if strings.Contains(s, "TTL ") || strings.Contains(s, "ON CLUSTER") || strings.Contains(s, "Distributed") {
				t.Errorf("single-node DDL without TTL has %q", s)
			}
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	f := func(o Options, ok bool) {
		t.Helper()
		if err := o.Validate(); (err == nil) != ok {
			t.Errorf("Validate(%+v) = %v, want ok=%v", o, err, ok)
		}
	}
	f(DefaultOptions(), true)
	f(Options{DB: "db; DROP TABLE x"}, false)
	f(Options{Cluster: "a'b"}, false)
	f(Options{ReplicaPath: "/x/'y"}, false)
	f(Options{TTL: -time.Hour}, false)
	f(Options{TTL: 1500 * time.Millisecond}, false)
}
