package schema

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/mcplens/mcplens/classify"
)

// TestAppendHeaderMatchesEncodingJSON holds AppendHeader to
// encoding/json of the same headers as a map, byte for byte, over random
// maps: keys and values with
// quotes, backslashes, control bytes, <>&, U+2028, invalid UTF-8, up to
// 40 keys (in their map order, so mostly unsorted). Also as the DuckDB appender stores it:
// json.Marshal of the result as a json.RawMessage (which escapes HTML)
// gives what json.Marshal of the map gave.
func TestAppendHeaderMatchesEncodingJSON(t *testing.T) {
	pieces := []string{"a", "Z", "content-type", "\"", "\\", "\n", "\x00", "\x1f", "<", ">", "&", "\u2028", "\u2029",
		"é", "\xff", "\xe2\x82", "; rel=\"next\"", " ", "application/json, text/event-stream", "日本"}
	rng := rand.New(rand.NewPCG(7, 21))
	str := func() string {
		var b []byte
		for range rng.IntN(6) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		return string(b)
	}
	for i := range 5000 {
		m := map[string]string{}
		for range rng.IntN(41) {
			m[str()] = str()
		}
		if i == 0 {
			m = nil
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(m); err != nil {
			t.Fatal(err)
		}
		wantText := bytes.TrimSuffix(want.Bytes(), []byte("\n"))
		if m == nil {
			wantText = []byte("{}")
		}
		h := make(classify.Header, 0, len(m))
		for k, v := range m {
			h = append(h, classify.HeaderField{Name: k, Value: v})
		}
		got := AppendHeader(nil, h)
		if sorted := AppendHeader(nil, classify.HeaderOf(m)); !bytes.Equal(sorted, got) {
			t.Fatalf("map %q: sorted\n %s\nunsorted\n %s", m, sorted, got)
		}
		if !bytes.Equal(got, wantText) {
			t.Fatalf("map %q:\n got %s\nwant %s", m, got, wantText)
		}
		stored, err := json.Marshal(json.RawMessage(got))
		if err != nil {
			t.Fatalf("map %q: %s is not JSON: %v", m, got, err)
		}
		if m != nil {
			marshaled, _ := json.Marshal(m)
			if !bytes.Equal(stored, marshaled) {
				t.Fatalf("map %q as stored:\n got %s\nwant %s", m, stored, marshaled)
			}
		}
	}
	small := classify.HeaderOf(map[string]string{"content-type": "application/json", "mcp-session-id": "s-1", "accept": "*/*"})
	buf := make([]byte, 0, 256)
	if allocs := testing.AllocsPerRun(100, func() { buf = AppendHeader(buf[:0], small) }); allocs != 0 {
		t.Errorf("AppendHeader allocates %.0f times for three sorted headers", allocs)
	}
}
