package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mcplens/mcplens/internal/secret"
)

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
	err := run(context.Background(), config{Store: secret.URL("duckdb:" + db), From: "2026-11-02T08:00:00Z", To: "2026-11-02T10:00:00Z", Out: "-", Max: 100}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if out.Len() < 200 || !bytes.HasPrefix(out.Bytes(), []byte{0x1f, 0x8b}) {
		t.Errorf("bundle of %d bytes, not gzip", out.Len())
	}
	if err := run(context.Background(), config{Store: secret.URL("duckdb:" + db), From: "now", To: "-1h", Out: "-"}, &out); err == nil {
		t.Error("from after to accepted")
	}
}
