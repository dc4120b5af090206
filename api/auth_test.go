package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// validPath returns a request for a route that answers 200 with a good
// token.
func validPath(r route) string {
	switch r.path {
	case "/api/v1/exchanges/{id}":
		return "/api/v1/exchanges/x-62eb54a64d4377ff6c88548b"
	case "/api/v1/sessions/{id}/timeline":
		return "/api/v1/sessions/s-1/timeline?" + fixtureRange
	}
	if len(r.params) > 0 {
		return r.path + "?" + fixtureRange
	}
	return r.path
}

// TestAuthMatrix: every /api/v1 route answers no token and an unknown
// token with 401 and a Bearer challenge, a token without scope read with
// 403, and the read and bodies tokens with 200; the operations endpoints
// need no token.
func TestAuthMatrix(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	for _, r := range a.routes {
		path := validPath(r)
		if r.scope == "" {
			if rec := a.get(path, ""); rec.Code != 200 {
				t.Errorf("%s without token: %d, want 200", path, rec.Code)
			}
			continue
		}
		cases := []struct {
			name, token string
			status      int
			challenge   string
		}{
			{"none", "", 401, `Bearer realm="mcplens"`},
			{"wrong", wrongToken, 401, `Bearer realm="mcplens", error="invalid_token"`},
			{"bodies only", bodiesOnlyToken, 403, `Bearer realm="mcplens", error="insufficient_scope", scope="read"`},
			{"read", readToken, 200, ""},
			{"bodies", bodiesToken, 200, ""},
		}
		if r.scope == ScopeBodies {
			// A route of scope bodies (the incident bundle): read alone is
			// not enough, bodies alone is.
			cases[2].status, cases[2].challenge = 200, ""
			cases[3].status, cases[3].challenge = 403, `Bearer realm="mcplens", error="insufficient_scope", scope="bodies"`
		}
		for _, tc := range cases {
			rec := a.get(path, tc.token)
			if rec.Code != tc.status {
				t.Errorf("%s with %s token: %d, want %d: %s", path, tc.name, rec.Code, tc.status, rec.Body)
			}
			if got := rec.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, tc.challenge) || (tc.challenge == "") != (got == "") {
				t.Errorf("%s with %s token: WWW-Authenticate %q, want %q", path, tc.name, got, tc.challenge)
			}
		}
	}
}

// TestAuthHeaderForms: the scheme is case-insensitive; anything but a
// bearer token is no token.
func TestAuthHeaderForms(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	for header, want := range map[string]int{
		"Bearer " + readToken:                    200,
		"bearer " + readToken:                    200,
		"BEARER  " + readToken + " ":             200,
		"Basic " + readToken:                     401,
		readToken:                                401,
		"Bearer":                                 401,
		"Bearer " + readToken + "x":              401,
		"Bearer " + readToken[:len(readToken)-1]: 401,
	} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/servers?"+fixtureRange, nil)
		req.Header.Set("Authorization", header)
		if rec := a.do(req); rec.Code != want {
			t.Errorf("Authorization %q: %d, want %d", header, rec.Code, want)
		}
	}
}

// TestBodiesScope: an exchange's bodies only with scope bodies; without it
// the answer says they were omitted.
func TestBodiesScope(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	const path = "/api/v1/exchanges/x-62eb54a64d4377ff6c88548b"
	read := decode[exchangeBody](t, a.get(path, readToken), 200)
	if read.Body != nil || read.Bodies != bodiesOmitted {
		t.Errorf("read token: body %v, bodies %q; want none, %q", read.Body, read.Bodies, bodiesOmitted)
	}
	full := decode[exchangeBody](t, a.get(path, bodiesToken), 200)
	if full.Body == nil || full.Bodies != bodiesIncluded || !strings.Contains(full.Body.RequestBody, "delete_item") {
		t.Errorf("bodies token: body %+v, bodies %q", full.Body, full.Bodies)
	}
	if read.Exchange.ExchangeID != full.Exchange.ExchangeID || len(read.Chain) != 2 || len(full.Chain) != 2 {
		t.Errorf("record or retry chain differ by scope: %+v / %+v", read.Chain, full.Chain)
	}
}

// TestNoTokenNoStart: without tokens the API refuses to start unless
// --dev.
func TestNoTokenNoStart(t *testing.T) {
	if _, err := New(DefaultConfig(), Deps{Store: corpusStore(t)}); err == nil {
		t.Error("New without tokens and without Dev succeeded")
	}
	cfg := DefaultConfig()
	cfg.Dev = true
	if _, err := New(cfg, Deps{Store: corpusStore(t)}); err != nil {
		t.Errorf("New in dev mode: %v", err)
	}
}

// TestDevMode: no token needed, bodies included, every response marked.
func TestDevMode(t *testing.T) {
	a := newTestAPI(t, corpusStore(t), func(c *Config) { c.Dev = true })
	for _, path := range []string{"/api/v1/exchanges/x-62eb54a64d4377ff6c88548b", "/healthz", "/api/v1/nope"} {
		rec := a.get(path, "")
		if rec.Header().Get("X-Mcplens-Dev-Mode") == "" {
			t.Errorf("%s: no X-Mcplens-Dev-Mode header", path)
		}
		if path == "/api/v1/exchanges/x-62eb54a64d4377ff6c88548b" {
			if b := decode[exchangeBody](t, rec, 200); b.Bodies != bodiesIncluded {
				t.Errorf("dev mode: bodies %q", b.Bodies)
			}
		}
	}
}
