package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f := func(in string, want time.Time, ok bool) {
		t.Helper()
		got, err := parseTime(in, now)
		if (err == nil) != ok || (ok && !got.Equal(want)) {
			t.Errorf("parseTime(%q) = %v, %v", in, got, err)
		}
	}
	f("now", now, true)
	f("-2h", now.Add(-2*time.Hour), true)
	f("-7d", now.Add(-7*24*time.Hour), true)
	f("2026-11-29T10:00:00Z", now.Add(-2*time.Hour), true)
	f("yesterday", time.Time{}, false)
	f("-xd", time.Time{}, false)
}

// TestBundleCLI ingests a fixture into DuckDB with the pipeline and writes
// a bundle from it with the CLI.
func TestBundleCLI(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.duckdb")
	ingest := exec.Command("go", "run", "../ingest", "--from", "file:../../pipeline/testdata/correlate/retries.ndjson", "--to", "duckdb:"+db, "--listen", "")
	if out, err := ingest.CombinedOutput(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	var out bytes.Buffer
	err := run(context.Background(), config{Store: "duckdb:" + db, From: "2026-11-02T08:00:00Z", To: "2026-11-02T10:00:00Z", Out: "-", Max: 100}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if out.Len() < 200 || !bytes.HasPrefix(out.Bytes(), []byte{0x1f, 0x8b}) {
		t.Errorf("bundle of %d bytes, not gzip", out.Len())
	}
	if err := run(context.Background(), config{Store: "duckdb:" + db, From: "now", To: "-1h", Out: "-"}, &out); err == nil {
		t.Error("from after to accepted")
	}
}
