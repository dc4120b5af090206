package duckstore

import (
	"context"
	"maps"
	"path/filepath"
	"testing"

	"github.com/mcplens/mcplens/schema"
)

// TestHeadersStoredAsObjects: the header columns hold JSON objects, so
// DuckDB's JSON operators reach into them.
func TestHeadersStoredAsObjects(t *testing.T) {
	s := corpusStore(t)
	var rows, notObjects, withType int
	err := s.db.QueryRowContext(context.Background(), `SELECT count(*),
		count(*) FILTER (WHERE json_type(request_headers) <> 'OBJECT' OR json_type(response_headers) <> 'OBJECT'),
		count(*) FILTER (WHERE response_headers->>'content-type' IS NOT NULL)
		FROM exchange_bodies`).Scan(&rows, &notObjects, &withType)
	if err != nil {
		t.Fatal(err)
	}
	if rows == 0 || notObjects != 0 || withType == 0 {
		t.Errorf("%d bodies: %d with headers that are not JSON objects, %d with response_headers->>'content-type'", rows, notObjects, withType)
	}
}

// TestHeadersMigrationRepairsStrings: rows written before migration 0050
// (headers as JSON strings spelling an object) become objects on open.
func TestHeadersMigrationRepairsStrings(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.duckdb")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO exchange_bodies VALUES ('old', TIMESTAMP '2026-11-20 10:00:00',
			to_json('{"user-agent":"claude-code/2.1"}'), to_json('{}'), '', '', false)`,
		`INSERT INTO exchange_bodies VALUES ('new', TIMESTAMP '2026-11-20 10:00:01',
			'{"user-agent":"codex"}'::JSON, '{"content-type":"text/event-stream"}'::JSON, '', '', false)`,
		`DELETE FROM schema_migrations WHERE version = 50`,
	} {
		if _, err := s.db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.db.QueryContext(ctx, `SELECT exchange_id, request_headers->>'user-agent', json_type(response_headers)
		FROM exchange_bodies ORDER BY exchange_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := map[string]string{"new": "codex", "old": "claude-code/2.1"}
	n := 0
	for rows.Next() {
		var id, ua, typ string
		if err := rows.Scan(&id, &ua, &typ); err != nil {
			t.Fatal(err)
		}
		n++
		if ua != want[id] || typ != "OBJECT" {
			t.Errorf("%s: user-agent %q, response_headers %s; want %q and an OBJECT", id, ua, typ, want[id])
		}
	}
	if err := rows.Err(); err != nil || n != 2 {
		t.Fatalf("%d rows, %v", n, err)
	}
}

// TestHeadersMigrationToText: a store whose header columns are JSON (as
// before migration 0053) has them as text after it opens, with the same
// values: the API still reads objects, and DuckDB's JSON operators still
// reach into them.
func TestHeadersMigrationToText(t *testing.T) {
	ctx := context.Background()
	s, corpus := storedBefore(t, 53, func(*schema.Batch) {},
		`ALTER TABLE exchange_bodies ALTER request_headers TYPE JSON`,
		`ALTER TABLE exchange_bodies ALTER response_headers TYPE JSON`,
		`CHECKPOINT`)
	var types string
	if err := s.db.QueryRowContext(ctx, `SELECT string_agg(DISTINCT typeof(request_headers) || '/' || typeof(response_headers), ',') FROM exchange_bodies`).Scan(&types); err != nil {
		t.Fatal(err)
	}
	if types != "VARCHAR/VARCHAR" {
		t.Errorf("header columns after the migration: %s, want VARCHAR/VARCHAR", types)
	}
	var withType int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM exchange_bodies WHERE response_headers->>'content-type' IS NOT NULL`).Scan(&withType); err != nil || withType == 0 {
		t.Errorf("response_headers->>'content-type' found in %d rows (%v)", withType, err)
	}
	checked := 0
	for _, b := range corpus.Bodies {
		if len(b.RequestHeaders)+len(b.ResponseHeaders) == 0 {
			continue
		}
		d, err := s.Exchange(ctx, b.ExchangeID)
		if err != nil {
			t.Fatal(err)
		}
		if d.Body == nil || !maps.Equal(d.Body.RequestHeaders.Map(), b.RequestHeaders.Map()) || !maps.Equal(d.Body.ResponseHeaders.Map(), b.ResponseHeaders.Map()) {
			t.Errorf("%s: headers read back as %+v, written %v / %v", b.ExchangeID, d.Body, b.RequestHeaders, b.ResponseHeaders)
		}
		if checked++; checked == 5 {
			break
		}
	}
	if checked == 0 {
		t.Fatal("no body in the corpus has headers")
	}
}
