package chstore

import (
	"context"
	"io"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/logging/logtest"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// openFresh opens the store on a database that does not exist yet on the
// shared server and migrates it, as `ingest --migrate` does on a fresh
// install.
func openFresh(t testing.TB, dsn string) (*Store, string) {
	t.Helper()
	opts := schema.DefaultOptions()
	// The corpus is weeks old: keep it (the TTL tests use the default).
	opts.TTL, opts.BodyTTL = 0, 0
	return openFreshWith(t, dsn, opts)
}

func openFreshWith(t testing.TB, dsn string, opts schema.Options) (*Store, string) {
	t.Helper()
	ctx := t.Context()
	dbDSN, db := clickhousetest.NewDatabase(t, dsn)
	s, err := Open(ctx, dbDSN, DefaultConfig(), zerolog.Nop(), nil)
	if err != nil {
		t.Fatalf("open a store whose database does not exist yet: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx, opts); err != nil {
		t.Fatalf("migrate a fresh server: %v", err)
	}
	return s, db
}

func count(t *testing.T, s *Store, query string) uint64 {
	t.Helper()
	var n uint64
	if err := s.conn.QueryRow(t.Context(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestServerConformance runs on the real ClickHouse server of
// CLICKHOUSE_DSN: it migrates a database that does not exist yet (twice),
// writes the corpus twice as the same batch (a retry), once more in small
// inserts under another token (a replay), and checks every question
// against testdata/conformance/expected, as the DuckDB and chDB suites do.
func TestServerConformance(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	s, db := openFresh(t, dsn)
	if err := s.Migrate(ctx, schema.DefaultOptions()); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	migs, err := schema.Migrations(schema.ClickHouse, schema.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, "SELECT count() FROM "+db+".schema_migrations"); int(n) != len(migs) {
		t.Fatalf("schema_migrations has %d rows after two runs, want %d", n, len(migs))
	}

	corpus := loadCorpusBatch(t)
	corpus.Token = "conformance"
	for range 2 { // the second is a retried batch: same token
		if err := s.Write(ctx, corpus); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, s, "SELECT count() FROM exchanges"); int(n) != len(corpus.Exchanges) {
		t.Fatalf("a retried batch was stored again: %d rows, want %d", n, len(corpus.Exchanges))
	}
	small := *corpus
	small.Token = "replayed"
	s.cfg.MaxInsertRows = 7
	if err := s.Write(ctx, &small); err != nil {
		t.Fatal(err)
	}
	querytest.Run(t, "../../testdata/conformance", s, false)
	checkStoredHeaders(t, s, corpus.Bodies)

	recs, anns, err := s.Seed(ctx, 10*time.Minute)
	if err != nil || len(recs) == 0 || len(anns) == 0 {
		t.Errorf("seed: %d records, %d annotations, %v", len(recs), len(anns), err)
	}
	querytest.CheckSeedKeepsMergedViews(t, ctx, s, recs[len(recs)-1].TS.Add(time.Second))
}

// checkStoredHeaders reads every body's headers back from the server: the
// maps the corpus gave, each with its keys in sorted order (headerMap).
func checkStoredHeaders(t *testing.T, s *Store, bodies []schema.Body) {
	t.Helper()
	want := map[string][2]map[string]string{}
	for _, b := range bodies {
		want[b.ExchangeID] = [2]map[string]string{b.RequestHeaders.Map(), b.ResponseHeaders.Map()}
	}
	rows, err := s.conn.Query(t.Context(), `SELECT DISTINCT exchange_id, request_headers, response_headers,
		mapKeys(request_headers) = arraySort(mapKeys(request_headers)) AND mapKeys(response_headers) = arraySort(mapKeys(response_headers))
		FROM exchange_bodies`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var id string
		var req, resp map[string]string
		var sorted bool
		if err := rows.Scan(&id, &req, &resp, &sorted); err != nil {
			t.Fatal(err)
		}
		n++
		w, ok := want[id]
		for i, got := range []map[string]string{req, resp} {
			if ok && (len(got) != 0 || len(w[i]) != 0) && !maps.Equal(got, w[i]) {
				t.Errorf("%s: %s %v, want %v", id, schema.BodyColumns[2+i], got, w[i])
			}
		}
		if !ok || !sorted {
			t.Errorf("%s: in the corpus %v, keys sorted %v", id, ok, sorted)
		}
	}
	if err := rows.Err(); err != nil || n != len(want) {
		t.Errorf("read %d bodies (%v), want %d", n, err, len(want))
	}
}

// TestServerMissingDatabase: without --migrate a store on a database that
// does not exist opens (so --migrate can create it) but every read and
// write names the database and the flag, and is not retried as transient.
func TestServerMissingDatabase(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	dbDSN, db := clickhousetest.NewDatabase(t, dsn)
	s, err := Open(t.Context(), dbDSN, DefaultConfig(), zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, err := range map[string]error{
		"write":                  s.Write(t.Context(), loadCorpusBatch(t)),
		"seed":                   func() error { _, _, err := s.Seed(t.Context(), time.Minute); return err }(),
		"migrate without create": s.Migrate(t.Context(), schema.Options{DB: db}),
	} {
		if err == nil || !strings.Contains(err.Error(), db) || !strings.Contains(err.Error(), "--migrate") || Transient(err) || (name == "write" && !s.Permanent(err)) {
			t.Errorf("%s: %v; want a permanent error naming %s and --migrate", name, err, db)
		}
	}
}

// TestServerCredentials: a wrong password and a read-only user fail at
// once with an error naming the user and the cause.
func TestServerCredentials(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	s, _ := openFresh(t, dsn)
	ctx := t.Context()

	cfg := DefaultConfig()
	cfg.User, cfg.Password = "mcplens", "not-the-password"
	if _, err := Open(ctx, dsn, cfg, zerolog.Nop(), nil); err == nil ||
		!strings.Contains(err.Error(), `user "mcplens"`) || !strings.Contains(err.Error(), "wrong password") {
		t.Errorf("wrong password: %v", err)
	}

	cfg.User, cfg.Password = "mcplens", clickhousetest.UserPassword
	w, err := Open(ctx, clickhousetest.WithDatabase(t, dsn, s.db), cfg, zerolog.Nop(), nil)
	if err != nil {
		t.Fatalf("right password: %v", err)
	}
	defer w.Close()
	b := loadCorpusBatch(t)
	b.Token = "credentials"
	if err := w.Write(ctx, b); err != nil {
		t.Fatalf("write as a user with a password: %v", err)
	}

	cfg.User, cfg.Password = "reader", clickhousetest.ReaderPassword
	r, err := Open(ctx, clickhousetest.WithDatabase(t, dsn, s.db), cfg, zerolog.Nop(), nil)
	if err != nil {
		t.Fatalf("read-only user: %v", err)
	}
	defer r.Close()
	start := time.Now()
	err = r.Write(ctx, b)
	if err == nil || Transient(err) || !r.Permanent(err) || !strings.Contains(err.Error(), `user "reader" is read-only`) {
		t.Errorf("write as a read-only user: %v; want a permanent error saying so", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the read-only write took %s: retried as transient?", d)
	}
	if err := r.Migrate(ctx, schema.DefaultOptions()); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("migrate as a read-only user: %v", err)
	}
	// A reader still answers the questions.
	if _, err := r.HTTP200RPCErrors(ctx, queries.Filter{From: time.Now().Add(-time.Hour), To: time.Now(), Limit: 10}); err != nil {
		t.Errorf("read as the read-only user: %v", err)
	}
	if n := count(t, s, "SELECT count() FROM exchanges"); int(n) != len(b.Exchanges) {
		t.Errorf("%d rows stored, want %d", n, len(b.Exchanges))
	}
}

// TestServerDebugDSNKeepsStdout: debug=true in the DSN turns the driver's
// debug log on; its lines go to the store's log, never to stdout, which
// carries `ingest --to stdout` records.
func TestServerDebugDSNKeepsStdout(t *testing.T) {
	dbDSN, _ := clickhousetest.NewDatabase(t, clickhousetest.DSN(t))
	opts := schema.DefaultOptions()
	opts.TTL, opts.BodyTTL = 0, 0 // the corpus is weeks old
	sep := "?"
	if strings.Contains(dbDSN, "?") {
		sep = "&"
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	printed := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); printed <- b }()
	stdout := os.Stdout
	os.Stdout = w
	var logs logtest.Buffer
	s, err := Open(t.Context(), dbDSN+sep+"debug=true", DefaultConfig(), zerolog.New(&logs), nil)
	if err == nil {
		err = s.Migrate(t.Context(), opts)
	}
	if err == nil {
		err = s.Write(t.Context(), loadCorpusBatch(t))
	}
	if s != nil {
		_ = s.Close()
	}
	os.Stdout = stdout
	_ = w.Close()
	out := <-printed
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > 0 {
		t.Errorf("the driver printed %d bytes to stdout: %.300s", len(out), out)
	}
	if !strings.Contains(logs.String(), "clickhouse-go") {
		t.Errorf("the driver's debug lines are not in the store's log: %.300s", logs.String())
	}
}

// TestServerCompressionMethods writes the corpus with each native
// compression the DSN may choose and reads its rows and a body back.
func TestServerCompressionMethods(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	corpus := loadCorpusBatch(t)
	for _, method := range []string{"none", "zstd", "lz4hc"} {
		t.Run(method, func(t *testing.T) {
			ctx := t.Context()
			dbDSN, db := clickhousetest.NewDatabase(t, dsn)
			sep := "?"
			if strings.Contains(dbDSN, "?") {
				sep = "&"
			}
			s, err := Open(ctx, dbDSN+sep+"compress="+method, DefaultConfig(), zerolog.Nop(), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			opts := schema.DefaultOptions()
			opts.TTL, opts.BodyTTL = 0, 0
			if err := s.Migrate(ctx, opts); err != nil {
				t.Fatal(err)
			}
			b := *corpus
			b.Token = "compress-" + method
			if err := s.Write(ctx, &b); err != nil {
				t.Fatal(err)
			}
			if n := count(t, s, "SELECT count() FROM "+db+".exchanges"); int(n) != len(corpus.Exchanges) {
				t.Errorf("%d exchanges stored, want %d", n, len(corpus.Exchanges))
			}
			var want string
			for _, x := range corpus.Bodies {
				if len(x.ResponseBody) > len(want) {
					want = x.ResponseBody
				}
			}
			var got string
			if err := s.conn.QueryRow(ctx, "SELECT response_body FROM "+db+".exchange_bodies ORDER BY length(response_body) DESC LIMIT 1").Scan(&got); err != nil || got != want {
				t.Errorf("longest response body read back (%d bytes, %v), want %d bytes", len(got), err, len(want))
			}
		})
	}
}
