package schema

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
)

// encodingJSON is the reference: what the stdout sink wrote before.
func encodingJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

var hostile = []string{
	"", "plain", `quote " backslash \ slash /`, "<script>&amp;</script>", "tab\tnl\ncr\rbs\bff\f",
	"\x00\x01\x1f\x7f", "caf\u00e9 \u4e16\u754c \U0001F600", "bad \xff\xfe utf8 \xc3", "sep \u2028 \u2029 end",
	"\xed\xa0\x80 surrogate", `{"jsonrpc":"2.0","id":1}`,
}

// fill sets every field of v (strings, numbers, bools, times, slices,
// NullInts) from rng, so that a field AppendJSON forgot shows as a
// difference.
func fill(rng *rand.Rand, v reflect.Value) { fillWith(rng, v, hostile) }

// fillWith is fill with strings taken from texts.
func fillWith(rng *rand.Rand, v reflect.Value, texts []string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(texts[rng.IntN(len(texts))])
	case reflect.Int, reflect.Int64:
		v.SetInt(rng.Int64N(2_000_000) - 1_000_000)
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 1)
	case reflect.Float64:
		fs := []float64{0, 3.5, 1e21, 1e-7, 123456.789, -0.000001, 1e20, math.MaxFloat64, 5e-324, rng.Float64() * 1e6}
		v.SetFloat(fs[rng.IntN(len(fs))])
	case reflect.Slice:
		switch rng.IntN(3) {
		case 0:
			v.Set(reflect.Zero(v.Type()))
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
			for i := range 2 {
				fillWith(rng, v.Index(i), texts)
			}
		}
	case reflect.Struct:
		switch v.Interface().(type) {
		case time.Time:
			zones := []*time.Location{time.UTC, time.FixedZone("x", -7*3600-1800), time.Local}
			ts := time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])
			if rng.IntN(5) == 0 {
				ts = time.Time{}
			}
			v.Set(reflect.ValueOf(ts))
		case classify.NullInt:
			v.Set(reflect.ValueOf(classify.NullInt{V: rng.Int64N(70000) - 35000, Valid: rng.IntN(2) == 1}))
		default:
			for i := range v.NumField() {
				fillWith(rng, v.Field(i), texts)
			}
		}
	}
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []byte
	for i := range 20_000 {
		var x Exchange
		fill(rng, reflect.ValueOf(&x).Elem())
		want := encodingJSON(t, &x)
		buf = x.AppendJSON(buf[:0])
		if !bytes.Equal(buf, want) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, buf, want)
		}
	}
	var zero Exchange
	if got, want := zero.AppendJSON(nil), encodingJSON(t, &zero); !bytes.Equal(got, want) {
		t.Fatalf("zero record:\n got %s\nwant %s", got, want)
	}
}

func BenchmarkExchangeJSON(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var x Exchange
	fill(rng, reflect.ValueOf(&x).Elem())
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = x.AppendJSON(buf[:0])
		}
	})
	// A record as traffic makes them: ids, URLs, methods, English
	// messages, mostly plain ASCII; and one in another script.
	for _, c := range []struct {
		name  string
		texts []string
	}{
		{"AppendJSON-typical", []string{"0f8fad5b-d9cb-469f-a165-70867728950e", "tools/call", "https://mcp.internal.example.com/v1/mcp",
			"get_forecast", "upstream returned 502 Bad Gateway after 3 attempts (retry later)", "9f2c4e1ab37d5e08", "Zürich"}},
		{"AppendJSON-cjk", []string{"工具调用失败：上游服务在三次尝试后返回错误", "ツールの呼び出しに失敗しました", "0f8fad5b-d9cb-469f-a165-70867728950e"}},
	} {
		var y Exchange
		fillWith(rand.New(rand.NewPCG(1, 2)), reflect.ValueOf(&y).Elem(), c.texts)
		b.Run(c.name, func(b *testing.B) {
			var buf []byte
			for b.Loop() {
				buf = y.AppendJSON(buf[:0])
			}
		})
	}
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		enc := json.NewEncoder(new(bytes.Buffer))
		enc.SetEscapeHTML(false)
		for b.Loop() {
			if err := enc.Encode(&x); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestAppendStringEveryOffset puts each byte that needs escaping (and
// multi-byte and invalid sequences) at every offset of runs longer than
// the eight-byte fast path, so a run skipped whole would show.
func TestAppendStringEveryOffset(t *testing.T) {
	specials := []string{"\"", "\\", "\x00", "\x1f", "\n", "\x7f", "\xff", "é", "\u2028", "\xe2\x80", "😀"}
	for _, sp := range specials {
		for n := 1; n <= 40; n++ {
			for at := 0; at <= n; at++ {
				s := strings.Repeat("a", at) + sp + strings.Repeat("Z", n-at)
				if got, want := string(appendString(nil, s)), string(encodingJSON(t, s)); got != want {
					t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
				}
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
		f.Add(strings.Repeat(s+"abcdefgh", 3))
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendString(nil, s)), string(encodingJSON(t, s)); got != want {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}
