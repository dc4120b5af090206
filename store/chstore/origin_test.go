package chstore

import (
	"context"
	"testing"
	"time"

	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// TestServerRetryOriginMigrationRepairs runs on the real server: rows
// written before migration 0051 (a re-send with an empty retry_origin or
// a logger's "none", a first attempt with none at all) say "unknown" and
// "none" once its mutation has run.
func TestServerRetryOriginMigrationRepairs(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	s, db := openFresh(t, dsn)
	corpus := loadCorpusBatch(t)
	resent, first := querytest.SpoilRetryOrigins(corpus)
	if resent < 2 || first == 0 {
		t.Fatalf("the corpus has %d re-sends and %d first attempts to spoil", resent, first)
	}
	corpus.Token = "old-rows"
	if err := s.Write(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	if err := s.conn.Exec(ctx, "DELETE FROM "+db+".schema_migrations WHERE version = 51"); err != nil {
		t.Fatal(err)
	}
	opts := schema.DefaultOptions()
	opts.TTL, opts.BodyTTL = 0, 0 // the corpus is weeks old
	if err := s.Migrate(ctx, opts); err != nil {
		t.Fatal(err)
	}
	const check = `SELECT countIf(retry_origin = '' OR (retry_origin = 'none') != (retry_of = '' AND attempt <= 1)), countIf(retry_origin = 'unknown')
		FROM (SELECT retry_origin, retry_of, attempt FROM exchanges LIMIT 1 BY exchange_id)`
	var wrong, unknown uint64
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if err := s.conn.QueryRow(ctx, check).Scan(&wrong, &unknown); err != nil {
			t.Fatal(err)
		}
		if wrong == 0 || time.Now().After(deadline) {
			break
		}
	}
	if wrong != 0 || int(unknown) != resent {
		t.Errorf("after the migration: %d rows with an empty or inconsistent retry_origin, %d 'unknown' of %d re-sends", wrong, unknown, resent)
	}
}
