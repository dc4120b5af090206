package mcptest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestFaultMatch(t *testing.T) {
	f := newFaults(http.NotFoundHandler(), []Fault{
		{Method: "tools/call", Tool: "lookup", Occurrence: 2, Kind: FaultUnavailable},
		{Method: "tools/call", Kind: FaultRateLimited, Occurrence: 3},
		{Method: "tools/list", Kind: FaultUnauthorized},
	})
	call := func(tool string) rpcHead {
		h := rpcHead{Method: "tools/call"}
		h.Params.Name = tool
		return h
	}
	steps := []struct {
		head rpcHead
		want FaultKind
	}{
		{call("lookup"), ""},                               // lookup 1, any tool 1
		{call("other"), ""},                                // any tool 2
		{call("lookup"), FaultUnavailable},                 // lookup 2 wins over any tool 3
		{call("lookup"), ""},                               // each fault fires once
		{rpcHead{Method: "tools/list"}, FaultUnauthorized}, // occurrence 0 is the first
		{rpcHead{Method: "tools/list"}, ""},
	}
	for i, s := range steps {
		if got := f.match(s.head); got != s.want {
			t.Errorf("request %d (%s %s): fault %q, want %q", i+1, s.head.Method, s.head.Params.Name, got, s.want)
		}
	}
}

func TestFaultResponses(t *testing.T) {
	f := func(kind FaultKind, wantStatus int, wantHeader, wantBody string) {
		t.Helper()
		plan := []Fault{{Method: "tools/call", Kind: kind}}
		w := httptest.NewRecorder()
		r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://mcp.test/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"x"}}`))
		newFaults(http.NotFoundHandler(), plan).ServeHTTP(w, r)
		hdr := strings.ToLower(w.Header().Get("Content-Type") + "|" + w.Header().Get("Retry-After") + "|" + w.Header().Get("WWW-Authenticate"))
		if w.Code != wantStatus || !strings.Contains(hdr, wantHeader) || !strings.Contains(w.Body.String(), wantBody) {
			t.Errorf("%s: %d %q %q", kind, w.Code, hdr, w.Body.String())
		}
	}
	f(FaultUnavailable, 503, "text/plain", "upstream unavailable")
	f(FaultUnavailableJSON, 503, "application/json", `"id":"a-1","error":{"code":-32603`)
	f(FaultRateLimited, 429, "|2|", "rate limit")
	f(FaultUnauthorized, 401, `bearer resource_metadata="http://mcp.test/.well-known/oauth-protected-resource"`, "invalid token")
	f(FaultMalformedJSON, 200, "application/json", `"id":"a-1","result":{"content":[{"type":"text","text":"trunc`)
	f(FaultMalformedSSE, 200, "text/event-stream", "data: {")
}
