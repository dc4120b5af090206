package queries

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCursorRoundTrip(t *testing.T) {
	c := cursor{ts: time.Date(2026, 11, 2, 9, 0, 0, 123e6, time.UTC), id: "x-1:2"}
	got, err := parseCursor(c.String())
	if err != nil || !got.ts.Equal(c.ts) || got.id != c.id {
		t.Fatalf("parseCursor(%q) = %+v, %v", c.String(), got, err)
	}
	for _, bad := range []string{"***", "bm9jb2xvbg", "MTIzOg"} {
		if _, err := parseCursor(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("parseCursor(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestLikePattern(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := likePattern(in); got != want {
			t.Errorf("likePattern(%q) = %q, want %q", in, got, want)
		}
	}
	f("", "")
	f("Rate Limit", "%rate limit%")
	f("100%_done!", "%100!%!_done!!%")
}

func TestFilterNormalized(t *testing.T) {
	now := time.Date(2026, 11, 2, 10, 0, 0, 999999999, time.UTC)
	f, err := Filter{}.normalized(func() time.Time { return now })
	if err != nil || !f.To.Equal(now.Truncate(time.Millisecond)) || !f.From.Equal(f.To.Add(-time.Hour)) || f.Limit != DefaultLimit {
		t.Fatalf("defaults: %+v, %v", f, err)
	}
	for _, bad := range []Filter{
		{From: now, To: now},
		{From: now.Add(time.Hour), To: now},
		{Limit: -1},
		{Limit: MaxLimit + 1},
		{Evidence: "body"},
		{Evidence: "Bodies"},
	} {
		if _, err := bad.normalized(func() time.Time { return now }); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err %v, want ErrInvalid", bad, err)
		}
	}
}

func TestCheckArgs(t *testing.T) {
	q := Get("stream_cuts")
	ok := Args{"from": time.Now(), "to": time.Now(), "server": "", "evidence": "", "limit": 10}
	if err := q.Check(ok); err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]Args{
		"missing":  {"from": time.Now(), "to": time.Now(), "limit": 10},
		"unknown":  {"from": time.Now(), "to": time.Now(), "server": "", "evidence": "", "limit": 10, "tool": ""},
		"mistyped": {"from": "yesterday", "to": time.Now(), "server": "", "evidence": "", "limit": 10},
	} {
		if err := q.Check(a); !errors.Is(err, ErrArgs) {
			t.Errorf("%s: Check = %v, want ErrArgs", name, err)
		}
	}
}

func TestClickHouseParams(t *testing.T) {
	q := Get("stream_cuts")
	p, err := q.ClickHouseParams(Args{"from": time.Date(2026, 11, 2, 9, 0, 0, 5e6, time.FixedZone("x", 3600)), "to": time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC), "server": "a'b", "evidence": "envelope", "limit": 7})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"from": "2026-11-02 08:00:00.005", "to": "2026-11-03 00:00:00.000", "server": "a'b", "evidence": "envelope", "limit": "7"}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s = %q, want %q", k, p[k], v)
		}
	}
}

// FuzzParseCursor: a cursor comes from API clients; any text either fails
// with ErrInvalid or round-trips.
func FuzzParseCursor(f *testing.F) {
	f.Add(cursor{ts: time.Unix(1_790_000_000, 0), id: "x-1"}.String())
	f.Add("")
	f.Add("MTIzOg")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCursor(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("parseCursor(%q) = %v, not ErrInvalid", s, err)
			}
			return
		}
		again, err := parseCursor(c.String())
		if err != nil || !again.ts.Equal(c.ts) || again.id != c.id {
			t.Fatalf("cursor %q does not round-trip: %+v vs %+v (%v)", s, c, again, err)
		}
	})
}

// FuzzLikePattern: the pattern of any search text, read back by the rules
// of LIKE ... ESCAPE '!', is the lower-cased text between two wildcards.
func FuzzLikePattern(f *testing.F) {
	for _, s := range []string{"rate limit", "100%", "a_b", "!!", "ÄÖ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		p := likePattern(q)
		if q == "" {
			if p != "" {
				t.Fatalf("likePattern(\"\") = %q", p)
			}
			return
		}
		if !strings.HasPrefix(p, "%") || !strings.HasSuffix(p, "%") || len(p) < 2 {
			t.Fatalf("likePattern(%q) = %q: no wildcards around the text", q, p)
		}
		var lit strings.Builder
		inner := p[1 : len(p)-1]
		for i := 0; i < len(inner); i++ {
			switch c := inner[i]; c {
			case '!':
				if i+1 == len(inner) {
					t.Fatalf("likePattern(%q) = %q: dangling escape", q, p)
				}
				i++
				lit.WriteByte(inner[i])
			case '%', '_':
				t.Fatalf("likePattern(%q) = %q: unescaped wildcard", q, p)
			default:
				lit.WriteByte(c)
			}
		}
		if lit.String() != strings.ToLower(q) {
			t.Fatalf("likePattern(%q) reads back as %q", q, lit.String())
		}
	})
}
