package incident_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/incident"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/store/duckstore"
)

// loadStore ingests pipeline fixtures into a fresh DuckDB store.
func loadStore(t *testing.T, fixtures ...string) *duckstore.Store {
	t.Helper()
	ctx := context.Background()
	store, err := duckstore.Open(ctx, filepath.Join(t.TempDir(), "m.duckdb"), duckstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for _, f := range fixtures {
		src, err := pipeline.NewFileSource(f, pipeline.FileSourceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		e, err := pipeline.New(pipeline.DefaultConfig(), pipeline.Deps{Source: src, Sink: store, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(ctx); err != nil {
			t.Fatal(err)
		}
		src.Close()
	}
	return store
}

func untar(t *testing.T, data []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = string(b)
	}
}

func TestBundle(t *testing.T) {
	store := loadStore(t, "../pipeline/testdata/correlate/retries.ndjson", "../pipeline/testdata/correlate/interleaved_sessions.ndjson")
	from := time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	err := incident.Write(context.Background(), queries.On(store), incident.Params{From: from, To: from.Add(2 * time.Hour), Now: func() time.Time { return from }}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	files := untar(t, buf.Bytes())
	readme := files["README.md"]
	for _, want := range []string{"15 exchanges", "| transport | HTTP_ERROR | 3 |", "| application | TOOL_ERROR | 1 |", "Re-sends with unknown side effects", "SERVER_ERROR"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md lacks %q:\n%s", want, readme)
		}
	}
	lines := strings.Split(strings.TrimSpace(files["exchanges.ndjson"]), "\n")
	if len(lines) != 15 {
		t.Fatalf("%d exchanges in the bundle", len(lines))
	}
	found := false
	for _, l := range lines {
		var e incident.Entry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		if e.Evidence.HTTPStatus == 503 {
			found = true
			if e.Evidence.Rule != "http-status" || e.Exchange.Outcome != "HTTP_ERROR" || e.Evidence.ContentType != "text/plain" {
				t.Errorf("evidence of the 503: %+v", e.Evidence)
			}
		}
	}
	if !found {
		t.Error("the 503 is not in the bundle")
	}
	if files["chains.ndjson"] == "" {
		t.Error("no chains in the bundle")
	}
	bodies, sessions := 0, 0
	for name := range files {
		if strings.HasPrefix(name, "bodies/") {
			bodies++
		}
		if strings.HasPrefix(name, "sessions/") {
			sessions++
		}
	}
	if bodies == 0 || sessions < 2 {
		t.Errorf("%d bodies, %d session timelines", bodies, sessions)
	}
}

func TestBundleCap(t *testing.T) {
	store := loadStore(t, "../pipeline/testdata/correlate/retries.ndjson")
	from := time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	if err := incident.Write(context.Background(), queries.On(store), incident.Params{From: from, To: from.Add(2 * time.Hour), MaxExchanges: 3}, &buf); err != nil {
		t.Fatal(err)
	}
	files := untar(t, buf.Bytes())
	if n := strings.Count(files["exchanges.ndjson"], "\n"); n != 3 || !strings.Contains(files["README.md"], "the range holds more") {
		t.Errorf("%d exchanges; README:\n%s", n, files["README.md"])
	}
}
