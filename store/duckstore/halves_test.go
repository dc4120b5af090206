package duckstore

import (
	"context"
	"database/sql"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/schema"
)

// TestStoredHalfSkipped: a half whose event is stored in a complete
// exchange is not stored again, whether its batch has other halves or
// not, and a batch of complete exchanges only (no halves' lookup) still
// skips the exchanges and bodies already stored.
func TestStoredHalfSkipped(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "h.duckdb"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	pair := schema.Exchange{ExchangeID: "x-pair", TS: ts, RequestEventID: "req-1", ResponseEventID: "resp-1"}
	body := schema.Body{ExchangeID: "x-pair", TS: ts, RequestBody: "{}"}
	write := func(b schema.Batch) {
		t.Helper()
		if err := s.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
	}
	write(schema.Batch{Exchanges: []schema.Exchange{pair}, Bodies: []schema.Body{body}})
	// The same complete exchange again, and its body: nothing new.
	write(schema.Batch{Exchanges: []schema.Exchange{pair}, Bodies: []schema.Body{body}})
	// Its response re-read alone (an orphan, 5 minutes later), and its
	// request alone (an exchange's ts is its request's), beside a half of
	// another call: only the other call's half is new.
	orphan := schema.Exchange{ExchangeID: "x-orphan", TS: ts.Add(5 * time.Minute), ResponseEventID: "resp-1"}
	request := schema.Exchange{ExchangeID: "x-request", TS: ts, RequestEventID: "req-1"}
	other := schema.Exchange{ExchangeID: "x-other", TS: ts.Add(5 * time.Minute), RequestEventID: "req-2"}
	write(schema.Batch{Exchanges: []schema.Exchange{orphan, request, other},
		Bodies: []schema.Body{{ExchangeID: "x-orphan", TS: orphan.TS}, {ExchangeID: "x-other", TS: other.TS}}})
	// The response re-read alone under the pair's own exchange id (the
	// gateway logged one), with its own ts: found by its event, not by
	// the id's ts.
	sameID := orphan
	sameID.ExchangeID, sameID.TS = pair.ExchangeID, ts.Add(3*time.Second)
	write(schema.Batch{Exchanges: []schema.Exchange{sameID}, Bodies: []schema.Body{{ExchangeID: pair.ExchangeID, TS: sameID.TS}}})
	// Each alone in its batch: the request, and the orphan 14 minutes on.
	write(schema.Batch{Exchanges: []schema.Exchange{request}})
	late := orphan
	late.ExchangeID, late.TS = "x-late", ts.Add(14*time.Minute)
	write(schema.Batch{Exchanges: []schema.Exchange{late}})
	// Bodies alone, one stored and one new.
	write(schema.Batch{Bodies: []schema.Body{body, {ExchangeID: "x-new", TS: ts}}})

	count := func(q string) int {
		t.Helper()
		var n int
		if err := s.DB().QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("SELECT count(*) FROM exchanges"); n != 2 {
		t.Errorf("%d exchanges stored, want 2 (x-pair, x-other)", n)
	}
	if n := count("SELECT count(*) FROM exchanges WHERE exchange_id IN ('x-pair', 'x-other')"); n != 2 {
		t.Errorf("x-pair and x-other: %d rows, want 2", n)
	}
	if n := count("SELECT count(*) FROM exchange_bodies"); n != 3 {
		t.Errorf("%d bodies stored, want 3 (x-pair, x-other, x-new)", n)
	}
	if n := count("SELECT count(*) FROM exchange_bodies WHERE exchange_id = 'x-orphan'"); n != 0 {
		t.Errorf("the orphan's body stored %d times, want 0", n)
	}
}

// TestStoredQueryRanges: a batch's halves are looked up within their own
// kind's range: requests within a minute of themselves (their stored pair
// has their ts), orphan responses up to halfSpan before; a batch without
// halves of a kind runs no query for it.
func TestStoredQueryRanges(t *testing.T) {
	ts := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	req := schema.Exchange{ExchangeID: "q", TS: ts, RequestEventID: "req-1"}
	resp := schema.Exchange{ExchangeID: "r", TS: ts.Add(time.Minute), ResponseEventID: "resp-1"}
	full := schema.Exchange{ExchangeID: "f", TS: ts.Add(-time.Hour), RequestEventID: "req-2", ResponseEventID: "resp-2"}
	named := func(args []any) map[string]time.Time {
		out := map[string]time.Time{}
		for _, a := range args {
			n := a.(sql.NamedArg)
			out[n.Name] = n.Value.(time.Time)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		xs    []schema.Exchange
		parts int
		want  map[string]time.Time
	}{
		{"complete only", []schema.Exchange{full}, 1, map[string]time.Time{"lo": full.TS, "hi": full.TS}},
		{"requests", []schema.Exchange{full, req}, 2, map[string]time.Time{"lo": full.TS, "hi": ts,
			"qlo": ts.Add(-halfSlack), "qhi": ts.Add(halfSlack)}},
		{"responses", []schema.Exchange{resp, full}, 2, map[string]time.Time{"lo": full.TS, "hi": resp.TS,
			"plo": resp.TS.Add(-halfSpan), "phi": resp.TS.Add(halfSlack)}},
		{"both", []schema.Exchange{req, resp}, 3, map[string]time.Time{"lo": ts, "hi": resp.TS,
			"qlo": ts.Add(-halfSlack), "qhi": ts.Add(halfSlack), "plo": resp.TS.Add(-halfSpan), "phi": resp.TS.Add(halfSlack)}},
	} {
		b := &schema.Batch{Exchanges: tc.xs}
		lo, hi := tsRange(b)
		q, args := storedQuery(b, lo, hi)
		if n := strings.Count(q, "UNION ALL") + 1; n != tc.parts {
			t.Errorf("%s: %d queries, want %d", tc.name, n, tc.parts)
		}
		if got := named(args); !maps.EqualFunc(got, tc.want, time.Time.Equal) {
			t.Errorf("%s: ranges %v, want %v", tc.name, got, tc.want)
		}
	}
}
