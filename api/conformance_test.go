package api

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/queries/querytest"
)

// The storage conformance cases (testdata/conformance/cases.json) and
// their expected rows: every case the API can express is asked through
// the API and must give exactly the expected rows.
const conformanceDir = "../testdata/conformance"

type confCase struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

func loadConformance(t *testing.T) (map[string][]confCase, func(query string) map[string]any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(conformanceDir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases map[string][]confCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	expected := func(query string) map[string]any {
		b, err := os.ReadFile(filepath.Join(conformanceDir, "expected", query+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	return cases, expected
}

// caseQuery turns a case's arguments into API query parameters: the range,
// the limit and each non-empty filter.
func caseQuery(args map[string]any, names ...string) url.Values {
	q := url.Values{}
	for _, n := range append([]string{"from", "to", "limit"}, names...) {
		switch v := args[n].(type) {
		case string:
			if v != "" {
				q.Set(n, v)
			}
		case float64:
			q.Set(n, fmt.Sprint(int64(v)))
		}
	}
	return q
}

// apiRequest maps a conformance case to an API request, or "" when the
// API cannot express it.
func apiRequest(query string, c confCase) string {
	a := c.Args
	switch query {
	case "http200_rpc_errors":
		return "/api/v1/questions/http200-jsonrpc-errors?" + caseQuery(a, "server", "evidence").Encode()
	case "unknown_side_effect_retries":
		// The API looks for earlier attempts the store's default hour back.
		if a["chain_from"] != shiftHour(a["from"].(string)) {
			return ""
		}
		return "/api/v1/questions/unknown-side-effect-retries?" + caseQuery(a, "server", "evidence", "client", "tool").Encode()
	case "client_disagreements":
		return "/api/v1/questions/client-disagreements?" + caseQuery(a, "server", "evidence", "client").Encode()
	case "rate_limits":
		return "/api/v1/questions/rate-limits?" + caseQuery(a, "server", "evidence", "client").Encode()
	case "stream_cuts":
		return "/api/v1/questions/stream-cuts?" + caseQuery(a, "server", "evidence").Encode()
	case "input_required":
		return "/api/v1/questions/input-required?" + caseQuery(a, "server", "evidence", "tool").Encode()
	case "breakdown":
		q := caseQuery(a, "server", "evidence", "client", "tool", "method", "group_by")
		bucket, ok := map[float64]string{0: "", 60: "1m", 300: "5m", 3600: "1h", 86400: "1d"}[a["bucket_s"].(float64)]
		if !ok {
			return ""
		}
		if bucket != "" {
			q.Set("bucket", bucket)
		}
		return "/api/v1/outcomes?" + q.Encode()
	case "leaderboard":
		q := caseQuery(a, "server", "evidence", "client", "order_by")
		return "/api/v1/" + map[string]string{"server": "servers", "client": "clients", "tool": "tools"}[a["group_by"].(string)] + "?" + q.Encode()
	case "search":
		if a["after_id"] != "" {
			return ""
		}
		q := caseQuery(a, "server", "evidence", "client", "tool", "method", "outcome", "layer", "error_class")
		if like := a["q_like"].(string); like != "" {
			q.Set("q", strings.NewReplacer("!%", "%", "!_", "_", "!!", "!").Replace(strings.Trim(like, "%")))
		}
		return "/api/v1/exchanges?" + q.Encode()
	case "session_timeline":
		if a["after_id"] != "" {
			return ""
		}
		return "/api/v1/sessions/" + url.PathEscape(a["session_id"].(string)) + "/timeline?" + caseQuery(a).Encode()
	}
	return ""
}

func shiftHour(ts string) string {
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return ""
	}
	return t.Add(-time.Hour).Format(time.RFC3339)
}

// apiRows extracts the rows of an answer in the shape of the expected
// files: the store's SQL rows (http200 answers are grouped by server in
// the API; flattened back here).
func apiRows(query string, body map[string]any) []any {
	rows := asList(body["rows"])
	if query != "http200_rpc_errors" {
		return orNone(rows)
	}
	var flat []any
	for _, r := range rows {
		s := r.(map[string]any)
		for _, top := range asList(s["top"]) {
			row := map[string]any{"server": s["server"], "rpc_errors": s["rpc_errors"], "http_200": s["http_200"], "share": s["share"]}
			for k, v := range top.(map[string]any) {
				row[k] = v
			}
			flat = append(flat, row)
		}
	}
	return orNone(flat)
}

func orNone(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

// TestQuestionsMatchConformance asks every expressible conformance case
// through the API: the headline questions return the expected servers,
// chains and counts.
func TestQuestionsMatchConformance(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	cases, expected := loadConformance(t)
	asked := 0
	for query, list := range cases {
		var want map[string]any
		for _, c := range list {
			path := apiRequest(query, c)
			if path == "" {
				continue
			}
			if want == nil {
				want = expected(query)
			}
			t.Run(query+"/"+c.Name, func(t *testing.T) {
				body := decode[map[string]any](t, a.get(path, readToken), 200)
				got := apiRows(query, body)
				if !querytest.SameJSON(want[c.Name], got) {
					w, _ := json.MarshalIndent(want[c.Name], "", " ")
					g, _ := json.MarshalIndent(got, "", " ")
					t.Errorf("GET %s\nwant %s\n got %s", path, w, g)
				}
				asked++
			})
		}
	}
	if asked < 30 {
		t.Errorf("only %d conformance cases asked through the API", asked)
	}
}

// TestTimelineSecondPage follows next_url of a session timeline's first
// page and gets the conformance case of the second page.
func TestTimelineSecondPage(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	_, expected := loadConformance(t)
	want := expected("session_timeline")
	first := decode[map[string]any](t, a.get("/api/v1/sessions/s-g2/timeline?"+fixtureRange+"&limit=2", readToken), 200)
	if !querytest.SameJSON(want["s_g2_page1"], first["rows"]) {
		t.Fatalf("first page %v, want %v", first["rows"], want["s_g2_page1"])
	}
	next, _ := first["next_url"].(string)
	if next == "" {
		t.Fatal("no next_url on a full first page")
	}
	second := decode[map[string]any](t, a.get(next, readToken), 200)
	if !querytest.SameJSON(want["s_g2_page2"], second["rows"]) {
		t.Errorf("second page %v, want %v", second["rows"], want["s_g2_page2"])
	}
}

// TestExchangeMatchesConformance: the record, the chain and (with scope
// bodies) the body of an exchange are the stored ones.
func TestExchangeMatchesConformance(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	cases, expected := loadConformance(t)
	wantRecords, wantBodies, wantChains := expected("exchange"), expected("exchange_body"), expected("chain")
	stored := map[string]bool{}
	for _, c := range cases["exchange"] {
		if len(asList(wantRecords[c.Name])) > 0 {
			stored[c.Args["exchange_id"].(string)] = true
		}
	}
	for _, c := range cases["exchange"] {
		id := c.Args["exchange_id"].(string)
		want := asList(wantRecords[c.Name])
		if len(want) == 0 && stored[id] {
			continue // a stored id looked up at another ts: not expressible
		}
		rec := a.get("/api/v1/exchanges/"+url.PathEscape(id), bodiesToken)
		if len(want) == 0 {
			if rec.Code != 404 {
				t.Errorf("%s: unknown exchange answered %d", c.Name, rec.Code)
			}
			continue
		}
		body := decode[map[string]any](t, rec, 200)
		ex := body["exchange"].(map[string]any)
		w := want[0].(map[string]any)
		if w["no_response_reason"] == "" && ex["no_response_reason"] == nil {
			delete(w, "no_response_reason") // omitted when empty
		}
		if !querytest.SameJSON(w, ex) {
			t.Errorf("%s: exchange\n got %v\nwant %v", c.Name, ex, w)
		}
	}
	for _, c := range cases["exchange_body"] {
		want := asList(wantBodies[c.Name])
		body := decode[map[string]any](t, a.get("/api/v1/exchanges/"+url.PathEscape(c.Args["exchange_id"].(string)), bodiesToken), 200)
		if len(want) == 0 {
			continue // a wrong ts: not expressible
		}
		if body["bodies"] != bodiesIncluded || !querytest.SameJSON(want[0], body["body"]) {
			t.Errorf("%s: body %v (%v), want %v", c.Name, body["body"], body["bodies"], want[0])
		}
	}
	for _, c := range cases["chain"] {
		want := wantChains[c.Name]
		body := decode[map[string]any](t, a.get("/api/v1/exchanges/"+url.PathEscape(c.Args["chain_id"].(string)), readToken), 200)
		if !querytest.SameJSON(want, body["chain"]) {
			t.Errorf("chain %s: got %v\nwant %v", c.Name, body["chain"], want)
		}
	}
}
