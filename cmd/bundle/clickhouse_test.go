package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/incident"
	"github.com/mcplens/mcplens/internal/secret"
	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/store/chstore"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// TestBundleClickHouseMatchesDuckDB writes the postmortem bundle of the
// conformance corpus with `bundle --store clickhouse://...` from a real
// ClickHouse server and with `--store duckdb:` from a DuckDB file holding
// the same corpus: the same files, the README as the same text, every
// JSON line the same values of the same JSON types (a bool is never a
// number on one engine, floats within 1e-9 relative).
func TestBundleClickHouseMatchesDuckDB(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "corpus.duckdb")
	duck, err := apitest.OpenCorpus(ctx, path, apitest.CorpusPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := duck.Close(); err != nil {
		t.Fatal(err)
	}
	ch, err := apitest.OpenCorpusClickHouse(ctx, dsn, clickhousetest.UniqueName(t, "mcplens_bundle"), apitest.CorpusPath())
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + ch.DB

	for _, c := range []config{
		{From: "2026-11-01T00:00:00Z", To: "2026-12-01T00:00:00Z", Max: incident.DefaultMaxExchanges},
		{From: "2026-11-01T00:00:00Z", To: "2026-12-01T00:00:00Z", Server: "files", Max: incident.DefaultMaxExchanges},
		{From: "2026-11-02T08:00:00Z", To: "2026-11-03T00:00:00Z", Max: 5}, // cut at --max-exchanges
	} {
		c.Out, c.ClickHouse = "-", chstore.DefaultConfig()
		want := bundleOf(t, c, "duckdb:"+path)
		got := bundleOf(t, c, u.String())
		for _, files := range []map[string][]byte{want, got} { // built seconds apart
			files["README.md"] = builtAt.ReplaceAll(files["README.md"], []byte("Built (time)."))
		}
		if len(want) < 3 || len(want["exchanges.ndjson"]) == 0 {
			t.Fatalf("%+v: the DuckDB bundle has too little to compare: %v", c, slices.Sorted(maps.Keys(want)))
		}
		for name, w := range want {
			g, ok := got[name]
			if !ok {
				t.Errorf("%s %s: %s missing from the ClickHouse bundle", c.From, c.Server, name)
				continue
			}
			if diff := diffFile(name, w, g); diff != "" {
				t.Errorf("%s %s: %s differs on ClickHouse: %s", c.From, c.Server, name, diff)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("%s %s: %s only in the ClickHouse bundle", c.From, c.Server, name)
			}
		}
	}
}

var builtAt = regexp.MustCompile(`Built [0-9T:.-]+Z\.`)

// bundleOf runs the CLI on a store and returns the bundle's files.
func bundleOf(t *testing.T, c config, store string) map[string][]byte {
	t.Helper()
	c.Store = secret.URL(store)
	var out, stderr bytes.Buffer
	if err := run(t.Context(), c, &out, &stderr); err != nil {
		t.Fatalf("bundle --store %s: %v\n%s", secret.MaskURL(store), err, stderr.String())
	}
	zr, err := gzip.NewReader(&out)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

// diffFile compares two bundle files: JSON and NDJSON value by value,
// anything else as text. It returns the first difference, or "".
func diffFile(name string, want, got []byte) string {
	wl, gl := bytes.Split(bytes.TrimSpace(want), []byte("\n")), bytes.Split(bytes.TrimSpace(got), []byte("\n"))
	switch {
	case strings.HasSuffix(name, ".json"):
		wl, gl = [][]byte{want}, [][]byte{got}
	case !strings.HasSuffix(name, ".ndjson"):
		for i := range min(len(wl), len(gl)) {
			if !bytes.Equal(wl[i], gl[i]) {
				return "line " + strconv.Itoa(i+1) + ":\n--- duckdb\n" + trim(wl[i]) + "\n--- clickhouse\n" + trim(gl[i])
			}
		}
		if len(wl) != len(gl) {
			return "lines: " + strconv.Itoa(len(wl)) + " vs " + strconv.Itoa(len(gl))
		}
		return ""
	}
	if len(wl) != len(gl) {
		return "lines: " + strconv.Itoa(len(wl)) + " vs " + strconv.Itoa(len(gl))
	}
	for i := range wl {
		var w, g any
		if err := json.Unmarshal(wl[i], &w); err != nil {
			return "duckdb line " + strconv.Itoa(i+1) + ": " + err.Error()
		}
		if err := json.Unmarshal(gl[i], &g); err != nil {
			return "clickhouse line " + strconv.Itoa(i+1) + ": " + err.Error()
		}
		if !querytest.SameJSON(w, g) {
			return "line " + strconv.Itoa(i+1) + ":\n--- duckdb\n" + trim(wl[i]) + "\n--- clickhouse\n" + trim(gl[i])
		}
	}
	return ""
}

func trim(b []byte) string {
	if len(b) > 3000 {
		b = b[:3000]
	}
	return string(b)
}
