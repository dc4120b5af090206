package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMetrics: requests are counted by route template and status, and
// timed by route.
func TestMetrics(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	a.get("/api/v1/exchanges/x-62eb54a64d4377ff6c88548b", readToken)
	a.get("/api/v1/exchanges/multi_observer%2Freq-77", readToken)
	a.get("/api/v1/servers", "")
	a.get("/no/such/path", "")
	body := a.get("/metrics", "").Body.String()
	for _, want := range []string{
		`mcplens_api_requests_total{route="/api/v1/exchanges/{id}",status="200"} 2`,
		`mcplens_api_requests_total{route="/api/v1/servers",status="401"} 1`,
		`mcplens_api_requests_total{route="unmatched",status="404"} 1`,
		`mcplens_api_request_duration_seconds_count{route="/api/v1/exchanges/{id}"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "x-62eb54a64d4377ff6c88548b") {
		t.Error("an id became a label value")
	}
}

// TestAccessLog: one JSON line per request with method, route, status,
// duration and token name; never the token, the query or a body.
func TestAccessLog(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	a.get("/api/v1/exchanges?"+fixtureRange+"&q=needle-text", readToken)
	a.get("/api/v1/exchanges/x-62eb54a64d4377ff6c88548b", bodiesToken)
	a.get("/api/v1/servers", wrongToken)
	logs := a.logs.String()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["message"] == "request" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 3 {
		t.Fatalf("%d access log lines, want 3:\n%s", len(lines), logs)
	}
	want := []struct {
		route, token string
		status       float64
	}{{"/api/v1/exchanges", "reader", 200}, {"/api/v1/exchanges/{id}", "postmortem", 200}, {"/api/v1/servers", "", 401}}
	for i, w := range want {
		l := lines[i]
		if l["method"] != "GET" || l["route"] != w.route || l["status"] != w.status || l["token"] != w.token || l["duration_ms"] == nil || l["request_id"] == "" {
			t.Errorf("line %d: %v, want route %s token %q status %v", i, l, w.route, w.token, w.status)
		}
	}
	for _, secret := range []string{readToken, bodiesToken, wrongToken, "needle-text", "delete_item"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log contains %q", secret)
		}
	}
}

// TestRequestID: a sane X-Request-Id is kept, anything else replaced.
func TestRequestID(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	for in, keep := range map[string]bool{"abc-123.x_y": true, "": false, "bad id\"": false, strings.Repeat("a", 65): false} {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		req.Header.Set("X-Request-Id", in)
		got := a.do(req).Header().Get("X-Request-Id")
		if (got == in) != keep || got == "" {
			t.Errorf("X-Request-Id %q answered as %q", in, got)
		}
	}
}

// TestCORS: off by default; on for configured origins, with preflight.
func TestCORS(t *testing.T) {
	preflight := func(a *testAPI, origin string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodOptions, "/api/v1/servers", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "GET")
		req.Header.Set("Access-Control-Request-Headers", "authorization")
		return a.do(req)
	}
	simple := func(a *testAPI, origin string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/servers", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Authorization", "Bearer "+readToken)
		return a.do(req)
	}
	off := newTestAPI(t, corpusStore(t))
	if rec := simple(off, "https://ui.example"); rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS off: %d, ACAO %q", rec.Code, rec.Header().Get("Access-Control-Allow-Origin"))
	}
	if rec := preflight(off, "https://ui.example"); rec.Code != 405 {
		t.Errorf("CORS off: preflight %d", rec.Code)
	}

	on := newTestAPI(t, corpusStore(t), func(c *Config) { c.CORSOrigins = []string{"https://ui.example"} })
	rec := simple(on, "https://ui.example")
	if rec.Header().Get("Access-Control-Allow-Origin") != "https://ui.example" || !strings.Contains(rec.Header().Get("Vary"), "Origin") {
		t.Errorf("allowed origin: %v", rec.Header())
	}
	if rec := preflight(on, "https://ui.example"); rec.Code != 204 || rec.Header().Get("Access-Control-Allow-Methods") != "GET" ||
		!strings.Contains(rec.Header().Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", rec.Code, rec.Header())
	}
	if rec := simple(on, "https://evil.example"); rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other origin allowed: %v", rec.Header())
	}
	if rec := preflight(on, "https://evil.example"); rec.Code == 204 {
		t.Error("preflight of another origin allowed")
	}
	star := newTestAPI(t, corpusStore(t), func(c *Config) { c.CORSOrigins = []string{"*"} })
	if rec := simple(star, "https://x.example"); rec.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("*: %v", rec.Header())
	}
}

// TestHealth: /healthz always, /readyz when the store answers.
func TestHealth(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	if b := decode[map[string]string](t, a.get("/healthz", ""), 200); b["status"] != "ok" {
		t.Errorf("healthz %v", b)
	}
	if b := decode[map[string]string](t, a.get("/readyz", ""), 200); b["status"] != "ready" {
		t.Errorf("readyz %v", b)
	}
	if rec := a.get("/healthz?x=1", ""); rec.Code != 400 {
		t.Errorf("healthz with a parameter: %d", rec.Code)
	}
}
