package duckstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mcplens/mcplens/queries/querytest"
)

// TestRetryOriginMigrationRepairs: rows written before migration 0051 (a
// re-send with an empty retry_origin or a logger's "none", a first attempt
// with none at all) say "unknown" and "none" after it.
func TestRetryOriginMigrationRepairs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.duckdb")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	corpus := loadCorpus(t)
	resent, first := querytest.SpoilRetryOrigins(corpus)
	if resent < 2 || first == 0 {
		t.Fatalf("the corpus has %d re-sends and %d first attempts to spoil", resent, first)
	}
	if err := s.Write(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = 51`); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wrong, unknown int
	err = s.db.QueryRowContext(ctx, `SELECT
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
