package api

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"
)

func TestIncidentBundle(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	rec := a.get("/api/v1/incidents/bundle?"+fixtureRange, bodiesToken)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/gzip" ||
		!strings.HasPrefix(rec.Header().Get("Content-Disposition"), "attachment; filename=\"mcplens-incident-") {
		t.Fatalf("status %d, headers %v: %s", rec.Code, rec.Header(), rec.Body)
	}
	gz, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = string(b)
	}
	if !strings.Contains(files["README.md"], "# mcplens incident bundle") || files["exchanges.ndjson"] == "" {
		t.Errorf("bundle files: %v", len(files))
	}
	if rec := a.get("/api/v1/incidents/bundle?"+fixtureRange+"&limit=2", bodiesToken); rec.Code != 200 {
		t.Errorf("limit=2: %d", rec.Code)
	}
	if rec := a.get("/api/v1/incidents/bundle?from=yesterday", bodiesToken); rec.Code != 400 {
		t.Errorf("bad from: %d", rec.Code)
	}
}
