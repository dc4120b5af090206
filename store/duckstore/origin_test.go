package duckstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/schema"
)

// storedBefore writes the conformance corpus (after spoil) to a new
// database, takes it back to before migration version (the undo
// statements, then its row in schema_migrations), and opens it again, so
// the migration runs over the rows. It returns the store and the corpus.
func storedBefore(t *testing.T, version int, spoil func(*schema.Batch), undo ...string) (*Store, *schema.Batch) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.duckdb")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	corpus := loadCorpus(t)
	spoil(corpus)
	if err := s.Write(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	for _, q := range append(undo, fmt.Sprintf(`DELETE FROM schema_migrations WHERE version = %d`, version)) {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, path, Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, corpus
}

// TestRetryOriginMigrationRepairs: rows written before migration 0051 (a
// re-send with an empty retry_origin or a logger's "none", a first attempt
// with none at all) say "unknown" and "none" after it.
func TestRetryOriginMigrationRepairs(t *testing.T) {
	var resent, first int
	s, _ := storedBefore(t, 51, func(b *schema.Batch) { resent, first = querytest.SpoilRetryOrigins(b) })
	if resent < 2 || first == 0 {
		t.Fatalf("the corpus has %d re-sends and %d first attempts to spoil", resent, first)
	}
	var wrong, unknown int
	err := s.db.QueryRowContext(context.Background(), `SELECT
		count(*) FILTER (WHERE retry_origin = '' OR (retry_origin = 'none') <> (retry_of = '' AND attempt <= 1)),
		count(*) FILTER (WHERE retry_origin = 'unknown')
		FROM exchanges`).Scan(&wrong, &unknown)
	if err != nil {
		t.Fatal(err)
	}
	if wrong != 0 || unknown != resent {
		t.Errorf("after the migration: %d rows with an empty or inconsistent retry_origin, %d 'unknown' of %d re-sends", wrong, unknown, resent)
	}
}

// TestEvidenceMigrationDerives: rows written before migration 0040 (no
// evidence column) get the level querytest.CheckOldEvidence expects from
// their rule; the column is NOT NULL after it, as the others.
func TestEvidenceMigrationDerives(t *testing.T) {
	ctx := context.Background()
	s, corpus := storedBefore(t, 40, func(*schema.Batch) {}, `ALTER TABLE exchanges DROP COLUMN evidence`)
	rows, err := s.db.QueryContext(ctx, `SELECT exchange_id, evidence FROM exchanges`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	querytest.CheckOldEvidence(t, corpus, rows)
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE exchanges SET evidence = NULL WHERE true`); err == nil {
		t.Error("evidence took a NULL after the migration")
	}
}
