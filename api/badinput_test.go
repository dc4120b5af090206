package api

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestBadInput: each bad request is a 400 problem naming the parameter.
func TestBadInput(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	long := strings.Repeat("x", 257)
	for _, tc := range []struct {
		name, path string
		params     []string
	}{
		{"unknown parameter", "/api/v1/servers?foo=1", []string{"foo"}},
		{"two unknown parameters", "/api/v1/outcomes?zz=1&aa=2", []string{"aa", "zz"}},
		{"filter the route does not take", "/api/v1/servers?tool=x", []string{"tool"}},
		{"parameter on a route that takes none", "/api/v1/exchanges/x-62eb54a64d4377ff6c88548b?from=-1h", []string{"from"}},
		{"repeated parameter", "/api/v1/servers?limit=1&limit=2", []string{"limit"}},
		{"undecodable query", "/api/v1/servers?from=%zz", []string{"query"}},
		{"bad from", "/api/v1/servers?from=yesterday", []string{"from"}},
		{"bad relative from", "/api/v1/servers?from=-1y", []string{"from"}},
		{"bad to", "/api/v1/servers?to=2026-13-01T00:00:00Z", []string{"to"}},
		{"to before 1970", "/api/v1/servers?from=1969-01-01T00:00:00Z&to=1969-01-02T00:00:00Z", []string{"from", "to"}},
		{"from after to", "/api/v1/servers?from=2026-11-02T00:00:00Z&to=2026-11-01T00:00:00Z", []string{"from"}},
		{"empty range", "/api/v1/servers?from=now&to=now", []string{"from"}},
		{"span over the maximum", "/api/v1/questions/rate-limits?from=-32d", []string{"from", "to"}},
		{"span over the maximum, absolute", "/api/v1/exchanges?from=2026-01-01T00:00:00Z&to=2026-12-01T00:00:00Z", []string{"from", "to"}},
		{"limit over the maximum", "/api/v1/questions/stream-cuts?limit=1001", []string{"limit"}},
		{"limit zero", "/api/v1/questions/stream-cuts?limit=0", []string{"limit"}},
		{"limit not a number", "/api/v1/questions/stream-cuts?limit=ten", []string{"limit"}},
		{"unknown group_by", "/api/v1/outcomes?group_by=region", []string{"group_by"}},
		{"bad bucket", "/api/v1/outcomes?bucket=2m", []string{"bucket"}},
		{"several bad", "/api/v1/outcomes?bucket=2m&group_by=x&from=x&limit=-1", []string{"bucket", "from", "group_by", "limit"}},
		{"unknown order_by", "/api/v1/tools?order_by=size", []string{"order_by"}},
		{"unknown outcome", "/api/v1/exchanges?outcome=FINE", []string{"outcome"}},
		{"unknown layer", "/api/v1/exchanges?layer=physical", []string{"layer"}},
		{"unknown error class", "/api/v1/exchanges?error_class=OOPS", []string{"error_class"}},
		{"unknown evidence", "/api/v1/servers?evidence=full", []string{"evidence"}},
		{"evidence in another case", "/api/v1/questions/stream-cuts?evidence=Envelope", []string{"evidence"}},
		{"empty evidence", "/api/v1/exchanges?evidence=", []string{"evidence"}},
		{"filter too long", "/api/v1/exchanges?server=" + long, []string{"server"}},
		{"control character", "/api/v1/exchanges?q=a%00b", []string{"q"}},
		{"invalid UTF-8", "/api/v1/exchanges?client=%ff", []string{"client"}},
		{"bad cursor", "/api/v1/exchanges?cursor=not-a-cursor", []string{"cursor"}},
		{"cursor before the range", "/api/v1/exchanges?" + fixtureRange + "&cursor=MTAwMDp4", []string{"cursor"}},
		{"bad timeline cursor", "/api/v1/sessions/s-1/timeline?cursor=%21", []string{"cursor"}},
		{"id too long", "/api/v1/exchanges/" + long, []string{"id"}},
		{"session id with a control character", "/api/v1/sessions/a%01b/timeline", []string{"id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := a.get(tc.path, readToken)
			p := decode[Problem](t, rec, 400)
			if ct := rec.Header().Get("Content-Type"); ct != problemJSON {
				t.Errorf("Content-Type %q", ct)
			}
			var named []string
			for _, ip := range p.InvalidParams {
				named = append(named, ip.Name)
				if ip.Reason == "" {
					t.Errorf("parameter %s: no reason", ip.Name)
				}
			}
			slices.Sort(named)
			if !slices.Equal(named, tc.params) {
				t.Errorf("invalid_params %v, want %v: %+v", named, tc.params, p)
			}
			if p.Type != typeInvalidParams || p.Status != 400 || p.Title == "" || p.Detail == "" || p.RequestID == "" {
				t.Errorf("problem %+v", p)
			}
		})
	}
}

// TestGoodInput: the accepted forms of times, limits and enums.
func TestGoodInput(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	for _, q := range []string{
		"", "from=now", "from=-15m", "from=-1h", "from=-7d", "from=-2w&to=now", "from=-90s", "from=-1h30m",
		"from=2026-11-03T00:00:00%2B01:00&to=2026-11-03T12:00:00.123456Z", "to=-1d", "limit=1", "limit=1000",
		"from=-31d", "server=", "order_by=p99", "evidence=bodies", "evidence=envelope", "evidence=status_only",
	} {
		if q == "from=now" {
			q = "from=now&to=2026-12-01T00:00:00Z"
		}
		if rec := a.get("/api/v1/servers?"+q, readToken); rec.Code != 200 {
			t.Errorf("%q: %d %s", q, rec.Code, rec.Body)
		}
	}
	for _, q := range []string{"group_by=layer", "group_by=outcome&bucket=1h", "bucket=1d", "bucket=1m&from=-1h", "group_by=method&bucket=5m"} {
		if rec := a.get("/api/v1/outcomes?"+q, readToken); rec.Code != 200 {
			t.Errorf("outcomes?%s: %d %s", q, rec.Code, rec.Body)
		}
	}
}

// TestFiltersAreValues: filter text is a value, never SQL: quotes,
// wildcards and comments match nothing and break nothing.
func TestFiltersAreValues(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	for _, v := range []string{"x' OR '1'='1", "'; DROP TABLE exchanges; --", "%", "_", "!", `\`, "alpha' --", "$1", "{server:String}"} {
		q := url.Values{"server": {v}, "client": {v}, "tool": {v}, "method": {v}, "q": {v}, "session": {v}}
		rec := a.get("/api/v1/exchanges?"+fixtureRange+"&"+q.Encode(), readToken)
		if p := decode[page[map[string]any]](t, rec, 200); len(p.Rows) != 0 {
			t.Errorf("%q matched %d rows", v, len(p.Rows))
		}
		q.Del("session")
		if rec := a.get("/api/v1/exchanges?"+fixtureRange+"&"+q.Encode(), readToken); rec.Code != 200 || len(decode[page[map[string]any]](t, rec, 200).Rows) != 0 {
			t.Errorf("%q without session: %d %s", v, rec.Code, rec.Body)
		}
		for _, path := range []string{"/api/v1/outcomes", "/api/v1/questions/unknown-side-effect-retries"} {
			q := url.Values{"server": {v}, "client": {v}, "tool": {v}}
			if rec := a.get(path+"?"+fixtureRange+"&"+q.Encode(), readToken); rec.Code != 200 {
				t.Errorf("%s %q: %d", path, v, rec.Code)
			}
		}
		if rec := a.get("/api/v1/exchanges/"+url.PathEscape(v), readToken); rec.Code != 404 {
			t.Errorf("exchange %q: %d", v, rec.Code)
		}
	}
	// The text search escapes LIKE wildcards: "%" matches a literal percent only.
	if p := decode[page[map[string]any]](t, a.get("/api/v1/exchanges?"+fixtureRange+"&q=%25", readToken), 200); len(p.Rows) != 0 {
		t.Errorf("q=%% matched %d rows", len(p.Rows))
	}
}
