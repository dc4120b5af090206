package chstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// storedBefore writes the conformance corpus (after spoil) to a fresh
// database of the real server, takes it back to before migration version
// (the undo statements, {db} standing for the database, then its row in
// schema_migrations) and migrates it again, so the migration runs over
// the rows. It returns the store, its database and the corpus.
func storedBefore(t *testing.T, ctx context.Context, version int, spoil func(*schema.Batch), undo ...string) (*Store, string, *schema.Batch) {
	t.Helper()
	s, db := openFresh(t, clickhousetest.DSN(t))
	corpus := loadCorpusBatch(t)
	spoil(corpus)
	corpus.Token = "old-rows"
	if err := s.Write(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	for _, q := range append(undo, fmt.Sprintf("DELETE FROM {db}.schema_migrations WHERE version = %d", version)) {
		if err := s.conn.Exec(ctx, strings.ReplaceAll(q, "{db}", db)); err != nil {
			t.Fatal(err)
		}
	}
	opts := schema.DefaultOptions()
	opts.TTL, opts.BodyTTL = 0, 0 // the corpus is weeks old
	if err := s.Migrate(ctx, opts); err != nil {
		t.Fatal(err)
	}
	return s, db, corpus
}

// TestServerRetryOriginMigrationRepairs runs on the real server: rows
// written before migration 0051 (a re-send with an empty retry_origin or
// a logger's "none", a first attempt with none at all) say "unknown" and
// "none" once its mutation has run.
func TestServerRetryOriginMigrationRepairs(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var resent, first int
	s, _, _ := storedBefore(t, ctx, 51, func(b *schema.Batch) { resent, first = querytest.SpoilRetryOrigins(b) })
	if resent < 2 || first == 0 {
		t.Fatalf("the corpus has %d re-sends and %d first attempts to spoil", resent, first)
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

// TestServerEvidenceMigrationDerives runs on the real server: parts
// written before migration 0040 (no evidence column) read from the
// column's DEFAULT the level querytest.CheckOldEvidence expects from their
// rule, the values DuckDB's migration writes.
func TestServerEvidenceMigrationDerives(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	s, db, corpus := storedBefore(t, ctx, 40, func(*schema.Batch) {},
		"ALTER TABLE {db}.exchanges DROP COLUMN evidence SETTINGS alter_sync = 2")
	rows, err := s.conn.Query(ctx, "SELECT exchange_id, evidence FROM "+db+".exchanges LIMIT 1 BY exchange_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	querytest.CheckOldEvidence(t, corpus, rows)
}
