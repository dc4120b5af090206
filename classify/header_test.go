package classify

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestHeaderNormalizedIsAMap holds Normalized to what a map of the same
// fields gives, set in order (the last value of a name counts), over
// random fields with repeated names: same pairs, sorted, no repeat.
func TestHeaderNormalizedIsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	names := []string{"a", "b", "content-type", "x-b", "x-a", "mcp-session-id", "z", ""}
	for range 2000 {
		var h Header
		m := map[string]string{}
		for range rng.IntN(12) {
			f := HeaderField{names[rng.IntN(len(names))], fmt.Sprint(rng.IntN(100))}
			h = append(h, f)
			m[f.Name] = f.Value
		}
		given := slices.Clone(h)
		got := h.Normalized()
		if !slices.IsSortedFunc(got, compareFields) || repeats(got) {
			t.Fatalf("%v: not sorted or repeats a name", got)
		}
		if !maps.Equal(got.Map(), m) && len(m) > 0 {
			t.Fatalf("%v: as a map %v, want %v", got, got.Map(), m)
		}
		if !slices.Equal(HeaderOf(m), got) && len(m) > 0 {
			t.Fatalf("HeaderOf(%v) = %v, want %v", m, HeaderOf(m), got)
		}
		var set Header
		for _, f := range given {
			set.Set(f.Name, f.Value)
		}
		if !slices.Equal(set, got) {
			t.Fatalf("set one by one %v, normalized %v", set, got)
		}
	}
}

// TestHeaderNormalizedManyNames: a line may carry tens of thousands of
// headers, in reverse order and with a repeat at the end.
func TestHeaderNormalizedManyNames(t *testing.T) {
	const n = 50_000
	h := make(Header, 0, n)
	for i := range n {
		h = append(h, HeaderField{fmt.Sprintf("x-%d", n-i), "v"}) // reversed
	}
	h = append(h, HeaderField{"x-1", "last"})
	got := h.Normalized()
	if len(got) != n || got.Get("x-1") != "last" || !slices.IsSortedFunc(got, compareFields) {
		t.Fatalf("%d headers, x-1 = %q", len(got), got.Get("x-1"))
	}
}

func TestHeaderGetLookup(t *testing.T) {
	h := Header{{"b", "2"}, {"a", "1"}, {"empty", ""}} // a literal may be unsorted
	for _, c := range []struct {
		name, want string
		ok         bool
	}{{"a", "1", true}, {"b", "2", true}, {"empty", "", true}, {"c", "", false}, {"A", "", false}} {
		if v, ok := h.Lookup(c.name); v != c.want || ok != c.ok {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", c.name, v, ok, c.want, c.ok)
		}
		if v := h.Get(c.name); v != c.want {
			t.Errorf("Get(%q) = %q", c.name, v)
		}
	}
	if got := h.Sorted(); !slices.Equal(got, Header{{"a", "1"}, {"b", "2"}, {"empty", ""}}) || h[0].Name != "b" {
		t.Errorf("Sorted() = %v and changed h to %v", got, h)
	}
	if Header(nil).Get("a") != "" || Header(nil).Map() != nil || HeaderOf(nil) != nil {
		t.Error("a nil Header is not empty")
	}
}

// TestHeaderJSON: a Header encodes as the map of its fields does (names
// sorted, <>& left to the caller's encoder), nil as null, and decodes
// back sorted; an empty object decodes to an empty, non-nil Header.
func TestHeaderJSON(t *testing.T) {
	type doc struct {
		H Header `json:"h"`
		O Header `json:"o,omitempty"`
	}
	h := Header{{"z", "<a&b>"}, {"content-type", "application/json"}}
	got, err := json.Marshal(doc{H: h})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(map[string]map[string]string{"h": h.Map()})
	if string(got) != string(want) {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc{H: h}); err != nil || b.String() != `{"h":{"content-type":"application/json","z":"<a&b>"}}`+"\n" {
		t.Errorf("Encode without HTML escaping = %s (%v)", b.String(), err)
	}
	if got, _ := json.Marshal(doc{}); string(got) != `{"h":null}` {
		t.Errorf("nil: %s", got)
	}
	if got, _ := json.Marshal(Header{}); string(got) != `{}` {
		t.Errorf("empty: %s", got)
	}
	var d doc
	if err := json.Unmarshal([]byte(`{"h":{"b":"2","a":"1"},"o":{}}`), &d); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.H, Header{{"a", "1"}, {"b", "2"}}) || d.O == nil || len(d.O) != 0 {
		t.Errorf("Unmarshal = %+v", d)
	}
	if err := json.Unmarshal([]byte(`{"h":{"a":1}}`), &d); err == nil {
		t.Error("a number value decoded")
	}
}
