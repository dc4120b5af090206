package shippers

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/pipeline"
)

var update = flag.Bool("update", false, "rewrite testdata/*/want from the Go reference mappings")

// sample is one input file of testdata/KIND/in and its golden file.
type sample struct {
	name, in, want string
}

func samples(t *testing.T, kind string) []sample {
	t.Helper()
	ins, err := filepath.Glob(filepath.Join("testdata", kind, "in", "*.json"))
	if err != nil || len(ins) == 0 {
		t.Fatalf("no samples in testdata/%s/in (%v)", kind, err)
	}
	out := make([]sample, len(ins))
	for i, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		out[i] = sample{name: name, in: in, want: filepath.Join("testdata", kind, "want", name+".ndjson")}
	}
	return out
}

// compact returns the file as one line, as a log shipper reads it.
func compact(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return buf.Bytes()
}

// checkGolden compares events with the golden NDJSON file, or rewrites it
// under -update.
func checkGolden(t *testing.T, path string, events []map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	for _, ev := range events {
		line, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./deploy/shippers -update to create it)", err)
	}
	if !sameEvents(t, buf.Bytes(), want) {
		t.Errorf("%s differs from the Go reference mapping (if the change is intended, run go test ./deploy/shippers -update and review the diff)\ngot:\n%s\nwant:\n%s", path, buf.Bytes(), want)
	}
}

// sameEvents compares two NDJSON (or whitespace-separated JSON) streams of
// events: numbers by value, a null field as an absent one, as the
// ingester's decoder reads them.
func sameEvents(t *testing.T, a, b []byte) bool {
	t.Helper()
	ea, eb := parseEvents(t, a), parseEvents(t, b)
	return reflect.DeepEqual(ea, eb)
}

func parseEvents(t *testing.T, data []byte) []any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []any
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("not a JSON stream: %v\n%s", err, data)
		}
		out = append(out, dropNulls(v))
	}
	return out
}

func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
			} else {
				v[k] = dropNulls(e)
			}
		}
	case []any:
		for i, e := range v {
			v[i] = dropNulls(e)
		}
	}
	return v
}

// decodes checks that the ingester accepts a line as a contract-v1 event,
// or, for an event a mapping marked unmappable, quarantines it with the
// mapping's reason.
func decodes(t *testing.T, what string, line []byte) {
	t.Helper()
	var probe struct {
		Unmappable string `json:"unmappable"`
	}
	_ = json.Unmarshal(line, &probe)
	_, err := pipeline.NewDecoder().Decode(line, pipeline.Position{})
	switch {
	case probe.Unmappable != "" && (err == nil || !strings.Contains(err.Error(), probe.Unmappable)):
		t.Errorf("%s: the ingester does not quarantine an unmappable event with its reason (%v)\n%s", what, err, line)
	case probe.Unmappable == "" && err != nil:
		t.Errorf("%s: the ingester rejects the event: %v\n%s", what, err, line)
	}
}
