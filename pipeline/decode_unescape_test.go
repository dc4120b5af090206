package pipeline

import (
	"bytes"
	"strings"
	"testing"

	"github.com/valyala/fastjson"
)

func TestUnescape(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		got := unescapeJSON(make([]byte, len(in)), []byte(in))
		if string(got) != want {
			t.Errorf("unescapeJSON(%q) = %q, want %q", in, got, want)
		}
	}
	f(``, ``)
	f(`plain text longer than eight bytes`, `plain text longer than eight bytes`)
	f(`{\"a\":\"b\\\"c\"}`, `{"a":"b\"c"}`)
	f(`\n\r\t\b\f\/\\`, "\n\r\t\b\f/\\")
	f(`Z\u00fcrich \u20ac \ud83d\ude00`, "Zürich € 😀")
	f(`bad \q escape`, `bad \q escape`)
	f(`bad \u12G4 hex`, `bad \u12G4 hex`)
	f(`short \u12`, `short \u12`)
	f(`lone \ud800 surrogate`, `lone \ud800 surrogate`)
	f(`pair \ud800\u0041 mismatched`, "pair \uFFFD mismatched")
	f(`trailing \`, `trailing \`)
}

// TestUnescapeEveryOffset puts each kind of escape at every offset of runs
// shorter and longer than the eight bytes the search looks at first, and
// two escapes at every distance, against fastjson.
func TestUnescapeEveryOffset(t *testing.T) {
	var p fastjson.Parser
	check := func(s string) {
		t.Helper()
		v, err := p.Parse(`"` + s + `"`)
		if err != nil {
			t.Fatalf("fastjson refuses %q: %v", s, err)
		}
		want, _ := v.StringBytes()
		if got := unescapeJSON(make([]byte, len(s)), []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("unescapeJSON(%q) = %q, want %q", s, got, want)
		}
	}
	escapes := []string{`\"`, `\\`, `\n`, `\/`, `\u00e9`, `\ud83d\ude00`, `\q`}
	for _, e := range escapes {
		for n := 0; n <= 40; n++ {
			for at := 0; at <= n; at++ {
				check(strings.Repeat("a", at) + e + strings.Repeat("b", n-at))
				check(strings.Repeat("a", at) + e + strings.Repeat("b", n-at) + e)
			}
		}
	}
	if got := string(unescapeJSON(make([]byte, 20), []byte(`0123456789abcdefgh\`))); got != `0123456789abcdefgh\` {
		t.Fatalf("a lone trailing backslash after a long run: %q", got)
	}
}

// FuzzUnescape checks unescape against fastjson's own unescaping, whose
// best-effort results it promises to reproduce.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`{\"a\":1}`, `\u00fc\ud83d\ude00`, `\ud800\u0041`, `\q\u12`, `abcdefgh\\ijklmnop`} {
		f.Add([]byte(s))
	}
	var p fastjson.Parser
	f.Fuzz(func(t *testing.T, s []byte) {
		v, err := p.ParseBytes(append(append([]byte{'"'}, s...), '"'))
		if err != nil || v.Type() != fastjson.TypeString {
			return // s holds an unescaped quote: not one JSON string
		}
		want, _ := v.StringBytes()
		got := unescapeJSON(make([]byte, len(s)), s)
		if !bytes.Equal(got, want) {
			t.Fatalf("unescapeJSON(%q) = %q, fastjson says %q", s, got, want)
		}
	})
}
