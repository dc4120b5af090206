package web_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/internal/logging/logtest"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/store/duckstore"
)

var update = flag.Bool("update", false, "rewrite the screenshots in testdata/screenshots")

// testNow is the clock of the tests: the corpus spans November 2026.
var testNow = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// The tokens of the tests.
const (
	readToken   = "view-read-token-0123456789abcdef"
	bodiesToken = "view-bodies-token-0123456789abcdef"
)

// wholeCorpus is a range that holds every exchange of the corpus.
var wholeCorpus = url.Values{"from": {"2026-11-01T00:00:00Z"}, "to": {"2026-11-30T00:00:00Z"}}

var (
	tmpDir string
	corpus apitest.Shared[*duckstore.Store]
)

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "mcplens-web-test")
	if err != nil {
		panic(err)
	}
	tmpDir = dir
	code := m.Run()
	if err := corpus.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close corpus store:", err)
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// corpusStore is the DuckDB store of the conformance corpus, shared by
// the tests (they only read it).
func corpusStore(t testing.TB) queries.Store {
	t.Helper()
	return corpus.Get(t, func() (*duckstore.Store, error) {
		return apitest.OpenCorpus(context.Background(), filepath.Join(tmpDir, "corpus.duckdb"), apitest.CorpusPath())
	})
}

// site is a live API (and so the view) over a store, with the test
// tokens and clock and a captured log.
type site struct {
	URL  string
	logs *logtest.Buffer
	t    testing.TB
}

func startSite(t testing.TB, store queries.Store, configure ...func(*api.Config)) *site {
	t.Helper()
	cfg := api.DefaultConfig()
	cfg.RateLimit = 0
	// The race detector on a loaded CI machine can take longer than the
	// production deadline (10 s) for a bundle; no test here is about it.
	cfg.QueryTimeout = 2 * time.Minute
	for _, f := range configure {
		f(&cfg)
	}
	tokens, err := api.LoadTokens("", readToken+" scopes=read name=reader; "+bodiesToken+" scopes=read,bodies name=postmortem")
	if err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Buffer{}
	reg := prometheus.NewRegistry()
	a, err := api.New(cfg, api.Deps{Store: store, Tokens: tokens, Logger: zerolog.New(logs), Registerer: reg, Gatherer: reg,
		Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return &site{URL: srv.URL, logs: logs, t: t}
}

// visitor is a browser without JavaScript: a cookie jar that follows
// redirects and sends the Origin a browser sends.
type visitor struct {
	s *site
	c *http.Client
}

func (s *site) visitor() *visitor {
	jar, _ := cookiejar.New(nil)
	return &visitor{s: s, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// get fetches a page and returns its status and body.
func (v *visitor) get(path string) (int, string) {
	v.s.t.Helper()
	resp, err := v.c.Get(v.s.URL + path)
	if err != nil {
		v.s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// post sends a form as a page of origin would.
func (v *visitor) post(path, origin string, form url.Values) (*http.Response, string) {
	v.s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, v.s.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		v.s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := v.c.Do(req)
	if err != nil {
		v.s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// csrf returns the CSRF token of the visitor's cookie, loading the login
// form to get one.
func (v *visitor) csrf() string {
	v.s.t.Helper()
	u, _ := url.Parse(v.s.URL)
	for _, c := range v.c.Jar.Cookies(u) {
		if c.Name == "mcplens_csrf" {
			return c.Value
		}
	}
	v.get("/login")
	for _, c := range v.c.Jar.Cookies(u) {
		if c.Name == "mcplens_csrf" {
			return c.Value
		}
	}
	v.s.t.Fatal("the login form set no CSRF cookie")
	return ""
}

// login signs in with token and fails the test unless it worked.
func (v *visitor) login(token string) {
	v.s.t.Helper()
	resp, body := v.post("/login", v.s.URL, url.Values{"token": {token}, "csrf": {v.csrf()}, "next": {"/"}})
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/" {
		v.s.t.Fatalf("login: %d at %s\n%.400s", resp.StatusCode, resp.Request.URL, body)
	}
}
