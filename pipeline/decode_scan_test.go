package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/valyala/fastjson"
)

// The scanner promises fastjson's grammar: the same lines accepted and
// refused, the same members, strings and renderings. These tests hold it
// to that, with fastjson itself as the reference.

var fastjsonKinds = map[fastjson.Type]jkind{
	fastjson.TypeNull: jNull, fastjson.TypeTrue: jTrue, fastjson.TypeFalse: jFalse,
	fastjson.TypeNumber: jNumber, fastjson.TypeString: jString,
	fastjson.TypeObject: jObject, fastjson.TypeArray: jArray,
}

// sameAsFastjson fails t unless the scanner reads line as fastjson does.
func sameAsFastjson(t *testing.T, line []byte) {
	t.Helper()
	var p fastjson.Parser
	want, werr := p.ParseBytes(line)
	s := jscan{b: line}
	members, kind, ok := s.topObject(nil)
	switch {
	case werr != nil:
		if ok || s.err == "" {
			t.Fatalf("%q: fastjson refuses it (%v), the scanner does not", line, werr)
		}
		return
	case s.err != "":
		t.Fatalf("%q: fastjson takes it, the scanner says %s", line, s.err)
	case want.Type() != fastjson.TypeObject:
		if ok || kind != fastjsonKinds[want.Type()] {
			t.Fatalf("%q: fastjson reads a %s, the scanner a %s (ok %v)", line, want.Type(), kind, ok)
		}
		return
	case !ok:
		t.Fatalf("%q: fastjson reads an object, the scanner does not", line)
	}
	sameMembers(t, line, want.GetObject(), func(yield func([]byte, jval)) {
		for _, m := range members {
			yield(m.key, m.val)
		}
	})
}

// sameMembers compares an object's members, and those of objects nested in
// it, with fastjson's.
func sameMembers(t *testing.T, line []byte, o *fastjson.Object, got func(func([]byte, jval))) {
	t.Helper()
	type member struct {
		key  string
		val  jval
		json []byte
	}
	var ours []member
	got(func(k []byte, v jval) { ours = append(ours, member{string(unescapedKey(k)), v, v.appendJSON(nil)}) })
	i := 0
	o.Visit(func(k []byte, v *fastjson.Value) {
		if i >= len(ours) {
			t.Fatalf("%q: fastjson has more members than the scanner's %d", line, len(ours))
		}
		m := ours[i]
		i++
		raw := v.MarshalTo(nil) // before Type, which unescapes a string in place
		switch {
		case m.key != string(k):
			t.Fatalf("%q: member %d: key %q, fastjson %q", line, i, m.key, k)
		case m.val.kind != fastjsonKinds[v.Type()]:
			t.Fatalf("%q: member %q: a %s, fastjson a %s", line, k, m.val.kind, v.Type())
		case !bytes.Equal(m.json, raw):
			t.Fatalf("%q: member %q renders %q, fastjson %q", line, k, m.json, raw)
		}
		var d Decoder
		if sb, _ := v.StringBytes(); m.val.kind == jString && !bytes.Equal(d.unescaped(&m.val), sb) {
			t.Fatalf("%q: member %q unescapes to %q, fastjson %q", line, k, d.unescaped(&m.val), sb)
		}
		if m.val.kind == jObject {
			sameMembers(t, line, v.GetObject(), func(yield func([]byte, jval)) {
				for it := m.val.members(); ; {
					k, v, ok := it.next()
					if !ok {
						return
					}
					yield(k, v)
				}
			})
		}
	})
	if i != len(ours) {
		t.Fatalf("%q: the scanner has %d members, fastjson %d", line, len(ours), i)
	}
}

var scanCases = []string{
	`{}`, ` { } `, `{"a":1}`, `{"a" : [ 1 , {"b" : null} , "x" ] , "c":{ "d" : true }}`,
	`{"a":"x\\\"y\"z","b\u0041":"\u00fc\ud83d\ude00","c":"\q\u12"}`,
	`{"n":nan,"i":-Inf,"p":+1,"e":e5,"m":1.2.3,"N":NaN,"j":+nan}`, `{"s":-}`, `{"a":-}`, `{"a":+}`, `{"a":in}`,
	`{"a":1} x`, `{"a":1}}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":tru}`, `{"a":nul}`, `{"a":truex}`,
	`{"a":"unterminated`, `{"a":[1,2`, `{"a":[1 2]}`, `{"a":[]}`, `{"a":[,]}`, `[1,2]`, `"s"`, `12`,
	`null`, `true`, ``, `{`, `{"a":"\\"}`, `{"a":"\\\\\"x"}`, "{\"a\":\"tab\there\",\"b\":\"\x00\xff\"}",
	"{\"a\":\v1}", "{\"a\":\f1}", `{"a":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`,
	`{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`,
	`{"a":{"b":{"c":{"d":1}}},"a":2}`,
}

func TestScanMatchesFastjson(t *testing.T) {
	for _, c := range scanCases {
		sameAsFastjson(t, []byte(c))
	}
	for _, name := range []string{"valid.ndjson", "invalid.ndjson"} {
		for _, l := range decodeTestdata(t, name) {
			sameAsFastjson(t, bytes.TrimSpace(l))
		}
	}
	for _, l := range genEventLines(200) {
		sameAsFastjson(t, l)
	}
	// A string's end at every offset around the eight bytes looked at
	// first: closing quotes, escaped quotes after runs of backslashes,
	// and no closing quote at all.
	for n := 0; n <= 20; n++ {
		for at := 0; at <= n; at++ {
			a, b := strings.Repeat("a", at), strings.Repeat("b", n-at)
			for _, mid := range []string{``, `\"`, `\\`, `\\\"`, `\\\\`, `"`} {
				sameAsFastjson(t, []byte(`{"`+a+mid+b+`":"`+b+mid+a+`"}`))
				sameAsFastjson(t, []byte(`{"k":"`+a+mid+b))
			}
		}
	}
}

func FuzzScanMatchesFastjson(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	for _, l := range decodeTestdata(f, "valid.ndjson") {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line []byte) { sameAsFastjson(t, bytes.TrimSpace(line)) })
}

// TestDecodeWideAndDeepLines: a line of thousands of members decodes, and
// the decoder then still decodes a small one; nesting past fastjson's limit
// is refused as not JSON.
func TestDecodeWideAndDeepLines(t *testing.T) {
	base := `{"ts":"2026-01-02T03:04:05Z","kind":"request","source":"gateway","http.method":"POST","request_body":"{}"`
	var wide strings.Builder
	wide.WriteString(base)
	for i := range 5000 {
		fmt.Fprintf(&wide, `,"x%d":[%d,{"y":"z"}]`, i, i)
	}
	wide.WriteString("}")
	d := NewDecoder()
	ev, err := d.Decode([]byte(wide.String()), decodePos)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Attrs) != 5000 || string(ev.Attrs["x4999"]) != `[4999,{"y":"z"}]` {
		t.Fatalf("%d attrs, x4999 = %s", len(ev.Attrs), ev.Attrs["x4999"])
	}
	if cap(d.members) > maxRetainedMembers {
		t.Fatalf("the decoder keeps a members table of %d", cap(d.members))
	}
	if ev, err = d.Decode([]byte(base+"}"), decodePos); err != nil || len(ev.Attrs) != 0 {
		t.Fatalf("after the wide line: %v, %d attrs", err, len(ev.Attrs))
	}
	deep := base + `,"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + "}"
	_, err = d.Decode([]byte(deep), decodePos)
	var de *DecodeError
	if !errors.As(err, &de) || de.Field != "" || !strings.Contains(de.Reason, "nested deeper than 300") {
		t.Fatalf("deep line: %v", err)
	}
}

// TestScanMatchesFastjsonOnLoadgen runs the comparison over
// production-shaped lines: split halves and exchange records, SSE bodies,
// the nested spelling, invalid UTF-8 in bodies, secrets and poison lines.
func TestScanMatchesFastjsonOnLoadgen(t *testing.T) {
	g, err := loadgen.New(loadgen.Config{Seed: 13, Calls: 3000, PoisonShare: 0.05, BadUTF8Share: 0.05, SecretShare: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range g.Lines() {
		sameAsFastjson(t, bytes.TrimSpace(line))
		n++
	}
	if tr := g.Truth(); n != tr.Lines || tr.Poison == 0 {
		t.Fatalf("compared %d lines of %d (%d poison)", n, tr.Lines, tr.Poison)
	}
}
