package chstore

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/schema"
)

// TestServerConformance runs against a real ClickHouse server when
// CLICKHOUSE_DSN is set (clickhouse://user:pass@host:9000/default): it
// migrates a fresh database, writes the corpus twice (once in other
// batches, once as a retry of the first batch), and checks every question
// against testdata/conformance/expected, as the DuckDB and chDB suites do.
func TestServerConformance(t *testing.T) {
	dsn := os.Getenv("CLICKHOUSE_DSN")
	if dsn == "" {
		t.Skip("CLICKHOUSE_DSN not set; the chDB suite (make test-chdb) covers the SQL without a server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := DefaultConfig()
	admin, err := Open(ctx, dsn, cfg, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	db := fmt.Sprintf("mcplens_test_%d", time.Now().UnixNano())
	opts := schema.Options{DB: db, CreateDatabase: true}
	if err := admin.Migrate(ctx, opts); err != nil {
		t.Fatal(err)
	}
	defer admin.conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db)
	if err := admin.Migrate(ctx, opts); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	var applied uint64
	if err := admin.conn.QueryRow(ctx, "SELECT count() FROM "+db+".schema_migrations").Scan(&applied); err != nil || applied != 5 {
		t.Fatalf("schema_migrations has %d rows (%v), want 5 after two runs", applied, err)
	}

	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	s, err := Open(ctx, u.String(), cfg, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	corpus := loadCorpusBatch(t)
	for i := 0; i < 2; i++ { // the second is a retried batch: same token
		if err := s.Write(ctx, corpus); err != nil {
			t.Fatal(err)
		}
	}
	var stored uint64
	if err := s.conn.QueryRow(ctx, "SELECT count() FROM exchanges").Scan(&stored); err != nil || int(stored) != len(corpus.Exchanges) {
		t.Fatalf("a retried batch was stored again: %d rows (%v)", stored, err)
	}
	small := *corpus
	small.Token = "replayed"
	s.cfg.MaxInsertRows = 7
	if err := s.Write(ctx, &small); err != nil {
		t.Fatal(err)
	}
	querytest.Run(t, "../../testdata/conformance", s, false)

	recs, anns, err := s.Seed(ctx, 10*time.Minute)
	if err != nil || len(recs) == 0 || len(anns) == 0 {
		t.Errorf("seed: %d records, %d annotations, %v", len(recs), len(anns), err)
	}
}
