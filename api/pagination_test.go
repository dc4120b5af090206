package api

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/queries"
)

type page[T any] struct {
	Rows    []T     `json:"rows"`
	Next    *string `json:"next"`
	NextURL *string `json:"next_url"`
}

// walk fetches path and follows next_url to the last page, checking the
// Link header on the way, and returns every row.
func walk[T any](t *testing.T, a *testAPI, path string) ([]T, int) {
	t.Helper()
	var all []T
	pages := 0
	for path != "" {
		rec := a.get(path, readToken)
		p := decode[page[T]](t, rec, 200)
		all = append(all, p.Rows...)
		pages++
		path = ""
		if p.NextURL != nil {
			path = *p.NextURL
			if link := rec.Header().Get("Link"); link != "<"+path+`>; rel="next"` {
				t.Errorf("Link %q, want the next_url %q", link, path)
			}
			if p.Next == nil || !strings.Contains(path, "cursor="+url.QueryEscape(*p.Next)) {
				t.Errorf("next_url %q does not carry the cursor %v", path, p.Next)
			}
		}
		if pages > 10_000 {
			t.Fatal("pagination does not end")
		}
	}
	return all, pages
}

func ids[T any](rows []T, id func(T) string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = id(r)
	}
	return out
}

// checkOrder: strictly increasing (ts, exchange_id), so no duplicates.
func checkOrder(t *testing.T, ts []time.Time, ids []string) {
	t.Helper()
	for i := 1; i < len(ids); i++ {
		if ts[i].Before(ts[i-1]) || (ts[i].Equal(ts[i-1]) && ids[i] <= ids[i-1]) {
			t.Fatalf("rows %d and %d out of (ts, exchange_id) order: %s %s, %s %s", i-1, i, ts[i-1], ids[i-1], ts[i], ids[i])
		}
	}
}

// TestExchangesPaginationWalk walks /api/v1/exchanges with every page
// size from 1 to 9 (and a relative range, which next_url pins): every row
// exactly once, in order, the same rows as one big page.
func TestExchangesPaginationWalk(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	one := decode[page[queries.SearchRow]](t, a.get("/api/v1/exchanges?"+fixtureRange+"&limit=1000", readToken), 200)
	if len(one.Rows) < 100 || one.Next != nil {
		t.Fatalf("one page of %d rows, next %v: want the whole corpus", len(one.Rows), one.Next)
	}
	want := ids(one.Rows, func(r queries.SearchRow) string { return r.ExchangeID })
	checkOrder(t, stamps(one.Rows), want)
	for _, base := range []string{"/api/v1/exchanges?" + fixtureRange, "/api/v1/exchanges?from=-30d"} {
		for limit := 1; limit <= 9; limit++ {
			rows, pages := walk[queries.SearchRow](t, a, fmt.Sprintf("%s&limit=%d", base, limit))
			got := ids(rows, func(r queries.SearchRow) string { return r.ExchangeID })
			if !slices.Equal(got, want) {
				t.Fatalf("%s limit %d: %d rows in %d pages differ from the %d rows of one page", base, limit, len(got), pages, len(want))
			}
			if wantPages := (len(want) + limit - 1) / limit; pages < wantPages || pages > wantPages+1 {
				t.Errorf("limit %d: %d pages for %d rows", limit, pages, len(want))
			}
		}
	}
}

func stamps(rows []queries.SearchRow) []time.Time {
	out := make([]time.Time, len(rows))
	for i, r := range rows {
		out[i] = r.TS
	}
	return out
}

// TestExchangesFilteredWalk walks filtered searches, with and without a
// session (which the API serves from the session timeline), and compares
// them with the full listing filtered here.
func TestExchangesFilteredWalk(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	all := decode[page[queries.SearchRow]](t, a.get("/api/v1/exchanges?"+fixtureRange+"&limit=1000", readToken), 200).Rows
	sessions := map[string]int{}
	for _, r := range all {
		sessions[r.SessionID]++
	}
	busiest := ""
	for s, n := range sessions {
		if s != "" && (busiest == "" || n > sessions[busiest] || (n == sessions[busiest] && s < busiest)) {
			busiest = s
		}
	}
	if sessions[busiest] < 5 {
		t.Fatalf("busiest session %q has %d exchanges; the corpus changed?", busiest, sessions[busiest])
	}
	for _, tc := range []struct {
		name  string
		query url.Values
		keep  func(r queries.SearchRow) bool
	}{
		{"session", url.Values{"session": {busiest}}, func(r queries.SearchRow) bool { return r.SessionID == busiest }},
		{"session+tools/call", url.Values{"session": {busiest}, "method": {"tools/call"}},
			func(r queries.SearchRow) bool { return r.SessionID == busiest && r.Method == "tools/call" }},
		{"session+text", url.Values{"session": {busiest}, "q": {"E"}},
			func(r queries.SearchRow) bool {
				return r.SessionID == busiest && strings.Contains(strings.ToLower(r.ErrorMessage), "e")
			}},
		{"session none", url.Values{"session": {"no-such-session"}}, func(r queries.SearchRow) bool { return false }},
		{"layer", url.Values{"layer": {"transport"}}, func(r queries.SearchRow) bool { return r.Layer == "transport" }},
		{"outcome+server", url.Values{"outcome": {"JSONRPC_ERROR"}, "server": {"alpha"}},
			func(r queries.SearchRow) bool { return r.Outcome == "JSONRPC_ERROR" && r.Server == "alpha" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			for _, r := range all {
				if tc.keep(r) {
					want = append(want, r.ExchangeID)
				}
			}
			for limit := 1; limit <= 4; limit++ {
				q := tc.query
				q.Set("limit", fmt.Sprint(limit))
				rows, _ := walk[queries.SearchRow](t, a, "/api/v1/exchanges?"+fixtureRange+"&"+q.Encode())
				got := ids(rows, func(r queries.SearchRow) string { return r.ExchangeID })
				if !slices.Equal(got, want) {
					t.Fatalf("limit %d: got %v\nwant %v", limit, got, want)
				}
				for _, r := range rows {
					if !tc.keep(r) {
						t.Fatalf("row %+v does not match the filter", r)
					}
				}
			}
		})
	}
}

// TestSessionSearchMatchesSearch: for a session, a search answered from
// the timeline gives the same rows, field by field, as the store's own
// Search filtered by session.
func TestSessionSearchMatchesSearch(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	all := decode[page[queries.SearchRow]](t, a.get("/api/v1/exchanges?"+fixtureRange+"&limit=1000", readToken), 200).Rows
	bySession := map[string][]queries.SearchRow{}
	for _, r := range all {
		bySession[r.SessionID] = append(bySession[r.SessionID], r)
	}
	for s, want := range bySession {
		if s == "" {
			continue
		}
		got := decode[page[queries.SearchRow]](t, a.get("/api/v1/exchanges?"+fixtureRange+"&limit=1000&session="+url.QueryEscape(s), readToken), 200).Rows
		if len(got) != len(want) {
			t.Fatalf("session %s: %d rows, want %d", s, len(got), len(want))
		}
		for i := range want {
			if !got[i].TS.Equal(want[i].TS) {
				t.Fatalf("session %s row %d: ts %s, want %s", s, i, got[i].TS, want[i].TS)
			}
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(want[i])
			if string(g) != string(w) {
				t.Fatalf("session %s row %d:\n got %+v\nwant %+v", s, i, got[i], want[i])
			}
		}
	}
}

// TestSessionSearchSmallPages reads the timeline in pages of 2 and stops
// each request after 3 rows scanned: cursors that resume inside and
// between timeline pages, and pages cut short by the scan budget, still
// walk every matching row exactly once.
func TestSessionSearchSmallPages(t *testing.T) {
	defer func(p, s int) { sessionPage, sessionScan = p, s }(sessionPage, sessionScan)
	a := newTestAPI(t, corpusStore(t))
	wantFor := func(q string) []string {
		rows := decode[page[queries.SearchRow]](t, a.get("/api/v1/exchanges?"+fixtureRange+"&limit=1000&"+q, readToken), 200).Rows
		return ids(rows, func(r queries.SearchRow) string { return r.ExchangeID })
	}
	qs := []string{"session=s-1", "session=s-1&method=tools/call", "session=s-1&outcome=TOOL_SUCCESS"}
	wants := map[string][]string{}
	for _, q := range qs {
		wants[q] = wantFor(q)
	}
	sessionPage, sessionScan = 2, 3
	for _, q := range qs {
		for limit := 1; limit <= 3; limit++ {
			rows, _ := walk[queries.SearchRow](t, a, fmt.Sprintf("/api/v1/exchanges?%s&%s&limit=%d", fixtureRange, q, limit))
			if got := ids(rows, func(r queries.SearchRow) string { return r.ExchangeID }); !slices.Equal(got, wants[q]) {
				t.Errorf("%s limit %d: %v, want %v", q, limit, got, wants[q])
			}
		}
	}
}

// TestSessionCursorRejectsForeignCursors: a session search takes only its
// own cursors.
func TestSessionCursorRejectsForeignCursors(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	first := decode[page[queries.SearchRow]](t, a.get("/api/v1/exchanges?"+fixtureRange+"&limit=1", readToken), 200)
	for _, cur := range []string{*first.Next, "s1.!!", sessionCursor{Skip: sessionPage}.String(), sessionCursor{Skip: -1}.String()} {
		rec := a.get("/api/v1/exchanges?"+fixtureRange+"&session=s-1&cursor="+url.QueryEscape(cur), readToken)
		p := decode[Problem](t, rec, 400)
		if len(p.InvalidParams) != 1 || p.InvalidParams[0].Name != "cursor" {
			t.Errorf("cursor %q: %+v, want cursor named", cur, p)
		}
	}
}

// TestTimelineWalk walks a session timeline page by page.
func TestTimelineWalk(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	full := decode[page[queries.TimelineRow]](t, a.get("/api/v1/sessions/s-1/timeline?"+fixtureRange+"&limit=1000", readToken), 200).Rows
	if len(full) < 5 {
		t.Fatalf("session s-1 has %d exchanges", len(full))
	}
	want := ids(full, func(r queries.TimelineRow) string { return r.ExchangeID })
	for limit := 1; limit <= 5; limit++ {
		rows, _ := walk[queries.TimelineRow](t, a, fmt.Sprintf("/api/v1/sessions/s-1/timeline?%s&limit=%d", fixtureRange, limit))
		if got := ids(rows, func(r queries.TimelineRow) string { return r.ExchangeID }); !slices.Equal(got, want) {
			t.Fatalf("limit %d: %v, want %v", limit, got, want)
		}
	}
}
