package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
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
	var out, stderr bytes.Buffer
	err := run(context.Background(), config{Store: secret.URL("duckdb:" + db), From: "2026-11-02T08:00:00Z", To: "2026-11-02T10:00:00Z", Out: "-", Max: 100}, &out, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stderr.String(), "bundle: wrote stdout: ") || strings.Contains(stderr.String(), "nothing matched") || strings.Contains(stderr.String(), " 0 exchanges") {
		t.Errorf("summary: %q", stderr.String())
	}
	// A server that has nothing in the range: an empty bundle, and a hint.
	stderr.Reset()
	if err := run(context.Background(), config{Store: secret.URL("duckdb:" + db), From: "2026-11-02T08:00:00Z", To: "2026-11-02T10:00:00Z", Server: "no-such-server", Out: filepath.Join(dir, "x.tar.gz"), Max: 100}, &out, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), " 0 exchanges, 0 sessions") || !strings.Contains(stderr.String(), "nothing matched: check the range") {
		t.Errorf("no hint for an empty bundle: %q", stderr.String())
	}
	if out.Len() < 200 || !bytes.HasPrefix(out.Bytes(), []byte{0x1f, 0x8b}) {
		t.Errorf("bundle of %d bytes, not gzip", out.Len())
	}
	if err := run(context.Background(), config{Store: secret.URL("duckdb:" + db), From: "now", To: "-1h", Out: "-"}, &out, &stderr); err == nil {
		t.Error("from after to accepted")
	}
}
