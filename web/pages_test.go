package web_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/duckstore"
	"github.com/mcplens/mcplens/web"
)

// TestTokenPrompt: every page without a token, or with an unknown one,
// answers 401 with the token form and a way back to the page asked for.
func TestTokenPrompt(t *testing.T) {
	s := startSite(t, corpusStore(t))
	for _, path := range []string{"/", "/server?name=gosdk", "/tool?name=echo", "/client?name=x", "/exchanges", "/exchange?id=x", "/session?id=s-1", "/bundle"} {
		v := s.visitor()
		code, body := v.get(path)
		if code != http.StatusUnauthorized || !strings.Contains(body, `id="token"`) || !strings.Contains(body, `name="next" value="`+htmlAttr(path)+`"`) {
			t.Errorf("%s without a token: %d\n%.300s", path, code, body)
		}
	}
	// A cookie with a token the API does not know: the prompt again.
	v := s.visitor()
	u, _ := url.Parse(s.URL)
	v.c.Jar.SetCookies(u, []*http.Cookie{{Name: "mcplens_token", Value: "stale-token-0123456789"}})
	if code, body := v.get("/"); code != http.StatusUnauthorized || !strings.Contains(body, "no longer accepted") {
		t.Errorf("stale token: %d\n%.300s", code, body)
	}
}

func htmlAttr(s string) string { return strings.ReplaceAll(s, "&", "&amp;") }

// TestLogin: the form sets an HttpOnly, SameSite=Strict cookie and goes
// back to the page asked for; the token appears in no URL, page or log
// line.
func TestLogin(t *testing.T) {
	s := startSite(t, corpusStore(t))
	v := s.visitor()
	next := "/server?name=gosdk&" + wholeCorpus.Encode()
	v.c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, _ := v.post("/login", s.URL, url.Values{"token": {readToken}, "csrf": {v.csrf()}, "next": {next}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != next {
		t.Fatalf("login: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "mcplens_token" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" || cookie.MaxAge <= 0 {
		t.Fatalf("login cookie: %+v", cookie)
	}
	v.c.CheckRedirect = nil
	code, body := v.get(next)
	if code != http.StatusOK || !strings.Contains(body, "<h1>server gosdk</h1>") {
		t.Fatalf("after login: %d\n%.300s", code, body)
	}
	if strings.Contains(body, readToken) {
		t.Error("a page shows the token")
	}
	// Signing out clears the cookie.
	resp, _ = v.post("/logout", s.URL, url.Values{"csrf": {v.csrf()}})
	if resp.Request.URL.Path != "/login" {
		t.Errorf("logout ends at %s", resp.Request.URL)
	}
	if code, _ := v.get(next); code != http.StatusUnauthorized {
		t.Errorf("after logout: %d", code)
	}
	if logs := s.logs.String(); strings.Contains(logs, readToken) || !strings.Contains(logs, `"token":"reader"`) {
		t.Errorf("the log shows the token, or not its name:\n%s", logs)
	}
	// Open redirects are refused.
	for _, bad := range []string{"https://evil.example/", "//evil.example/", "/\\evil.example", "javascript:alert(1)"} {
		v := s.visitor()
		v.c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, _ := v.post("/login", s.URL, url.Values{"token": {readToken}, "csrf": {v.csrf()}, "next": {bad}})
		if resp.Header.Get("Location") != "/" {
			t.Errorf("next=%q redirects to %q", bad, resp.Header.Get("Location"))
		}
	}
}

// TestLoginRefusesCrossSite: a login or logout not sent from this site's
// own form (another Origin, none, a missing or wrong CSRF token) sets no
// cookie.
func TestLoginRefusesCrossSite(t *testing.T) {
	s := startSite(t, corpusStore(t))
	cases := map[string]func(v *visitor) (string, url.Values){
		"other origin": func(v *visitor) (string, url.Values) { return "http://evil.example", url.Values{"csrf": {v.csrf()}} },
		"no origin":    func(v *visitor) (string, url.Values) { return "", url.Values{"csrf": {v.csrf()}} },
		"no csrf":      func(v *visitor) (string, url.Values) { v.csrf(); return s.URL, url.Values{} },
		"wrong csrf": func(v *visitor) (string, url.Values) {
			v.csrf()
			return s.URL, url.Values{"csrf": {strings.Repeat("0", 64)}}
		},
		"no csrf cookie": func(v *visitor) (string, url.Values) { return s.URL, url.Values{"csrf": {strings.Repeat("0", 64)}} },
	}
	for name, c := range cases {
		v := s.visitor()
		origin, form := c(v)
		form.Set("token", readToken)
		resp, body := v.post("/login", origin, form)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "not sent from this site") {
			t.Errorf("%s: %d\n%.300s", name, resp.StatusCode, body)
		}
		for _, c := range resp.Cookies() {
			if c.Name == "mcplens_token" {
				t.Errorf("%s: set the token cookie", name)
			}
		}
		if resp, _ := v.post("/logout", origin, form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: logout %d", name, resp.StatusCode)
		}
	}
	// An unknown token is refused on the form itself.
	v := s.visitor()
	resp, body := v.post("/login", s.URL, url.Values{"token": {"nope-0123456789abcdef"}, "csrf": {v.csrf()}})
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "not known") {
		t.Errorf("unknown token: %d\n%.300s", resp.StatusCode, body)
	}
}

// TestSecurityHeaders: every page forbids scripts, frames and foreign
// resources, and is not cached.
func TestSecurityHeaders(t *testing.T) {
	s := startSite(t, corpusStore(t))
	v := s.visitor()
	v.login(readToken)
	for _, path := range []string{"/", "/login", "/exchange?id=x-72fe3a9e18d5e695975adde9", "/nothing?" + wholeCorpus.Encode()} {
		resp, err := v.c.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		csp := h.Get("Content-Security-Policy")
		if path == "/nothing?"+wholeCorpus.Encode() {
			if resp.StatusCode != 404 || !strings.HasPrefix(h.Get("Content-Type"), "application/problem+json") {
				t.Errorf("%s: %d %s, want the API's 404 problem", path, resp.StatusCode, h.Get("Content-Type"))
			}
			continue
		}
		if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
	resp, err := v.c.Get(s.URL + "/assets/style.css")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") {
		t.Errorf("style.css: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// TestBodiesNeedScope: the exchange page shows bodies only to a token
// with scope bodies; so does the bundle download.
func TestBodiesNeedScope(t *testing.T) {
	s := startSite(t, corpusStore(t))
	facts := factsOf(t)
	x := cutStream(t, facts)
	secret := facts.bodies[x.ExchangeID].RequestBody
	// The body's request id is distinctive enough to look for.
	needle := `progress-`
	if !strings.Contains(secret, needle) {
		t.Fatalf("the body of %s changed: %s", x.ExchangeID, secret)
	}
	reader := s.visitor()
	reader.login(readToken)
	code, body := reader.get("/exchange?id=" + url.QueryEscape(x.ExchangeID))
	if code != 200 || strings.Contains(body, needle) || !strings.Contains(body, "omitted: needs scope bodies") {
		t.Errorf("read token: %d, body shown or reason missing\n%.2000s", code, body)
	}
	if code, body := reader.get("/bundle?" + wholeCorpus.Encode()); code != http.StatusForbidden || !strings.Contains(body, `scope &#34;bodies&#34;`) {
		t.Errorf("bundle with a read token: %d\n%.400s", code, body)
	}
	pm := s.visitor()
	pm.login(bodiesToken)
	if code, body := pm.get("/exchange?id=" + url.QueryEscape(x.ExchangeID)); code != 200 || !strings.Contains(body, needle) {
		t.Errorf("bodies token: %d, no body\n%.400s", code, body)
	}
	resp, err := pm.c.Get(s.URL + "/bundle?" + wholeCorpus.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("bundle: %d %v", resp.StatusCode, resp.Header)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	if len(names) == 0 || !strings.Contains(strings.Join(names, " "), "README.md") {
		t.Errorf("bundle holds %v", names)
	}
}

// TestBadInput: a bad time or limit shows the API's problem, status
// 400, naming the parameter; a missing name or id too.
func TestBadInput(t *testing.T) {
	s := startSite(t, corpusStore(t), func(c *api.Config) { c.MaxLimit = 50 })
	v := s.visitor()
	v.login(readToken)
	for path, param := range map[string]string{
		"/?from=yesterday":                "from",
		"/?from=-90d":                     "from",
		"/server?name=gosdk&to=soon":      "to",
		"/exchanges?outcome=BROKEN":       "outcome",
		"/server":                         "name",
		"/exchange":                       "id",
		"/session?id=s-1&from=2026-13-01": "from",
		"/tool?name=x&from=-1h&to=-2h":    "from",
	} {
		code, body := v.get(path)
		if code != http.StatusBadRequest || !strings.Contains(body, "<code>"+param+"</code>") {
			t.Errorf("%s: %d, want 400 naming %s\n%.600s", path, code, param, body)
		}
	}
	// The view never asks for more rows than --max-limit allows.
	for _, path := range []string{"/?" + wholeCorpus.Encode(), "/server?name=gosdk&" + wholeCorpus.Encode(), "/exchanges?" + wholeCorpus.Encode()} {
		if code, body := v.get(path); code != 200 {
			t.Errorf("%s with --max-limit 50: %d\n%.600s", path, code, body)
		}
	}
	if code, _ := v.get("/exchange?id=no-such-exchange"); code != http.StatusNotFound {
		t.Errorf("unknown exchange: %d", code)
	}
}

// TestRateLimited: over the token's rate limit a page says when to come
// back, with Retry-After.
func TestRateLimited(t *testing.T) {
	s := startSite(t, corpusStore(t), func(c *api.Config) { c.RateLimit, c.RateBurst = 0.01, 3 })
	v := s.visitor()
	// The login spends one request of the burst, the overview it goes
	// on to needs more than the rest.
	resp, body := v.post("/login", s.URL, url.Values{"token": {readToken}, "csrf": {v.csrf()}, "next": {"/?" + wholeCorpus.Encode()}})
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "Try again in") {
		t.Errorf("over the limit: %d, Retry-After %q\n%.400s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// TestDevMode: with api --dev the pages need no token and say that
// authentication is off.
func TestDevMode(t *testing.T) {
	s := startSite(t, corpusStore(t), func(c *api.Config) { c.Dev = true })
	code, body := s.visitor().get("/?" + wholeCorpus.Encode())
	if code != 200 || !strings.Contains(body, "Authentication is off") {
		t.Errorf("dev overview: %d\n%.400s", code, body)
	}
}

// TestPagesCount: the overview and a server page count what the corpus
// holds; the drill-down links lead to that server's failed exchanges.
func TestPagesCount(t *testing.T) {
	s := startSite(t, corpusStore(t))
	facts := factsOf(t)
	v := s.visitor()
	v.login(readToken)
	_, body := v.get("/?" + wholeCorpus.Encode())
	for _, want := range []string{fmt.Sprintf("<b>%d</b> exchanges", facts.total), fmt.Sprintf("<b>%d</b> failed", facts.failed)} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	for _, name := range facts.failingServers {
		failures := 0
		for _, x := range facts.byID {
			if x.Server == name && failed(string(x.Outcome)) {
				failures++
			}
		}
		href := "/server?" + url.Values{"name": {name}, "from": wholeCorpus["from"], "to": wholeCorpus["to"]}.Encode()
		if !strings.Contains(body, `href="`+htmlAttr(href)+`"`) {
			t.Errorf("overview has no link to %s", href)
			continue
		}
		_, page := v.get(href)
		if !strings.Contains(page, fmt.Sprintf("<b>%d</b> failed", failures)) {
			t.Errorf("server %s: page does not count %d failures", name, failures)
		}
		checkClasses(t, name, page, facts, true)
	}
}

// classRowRE is one row of a subject page's error class table.
var classRowRE = regexp.MustCompile(`<tr>\n<td>([A-Z_]+)</td><td><a href="[^"]*">([A-Z_]*)</a>.*?</td>\n<td class="n">([0-9,]+)</td>\n<td><code>([A-Z_]*)</code>`)

// checkClasses: the server page's error class table holds every failing
// (outcome, class) of the server with its exact count and, with
// classified exchanges (not generated ones), the retry advice they were
// classified with.
func checkClasses(t *testing.T, server, page string, facts corpusFacts, classified bool) {
	t.Helper()
	type key struct{ outcome, class string }
	want := map[key]int{}
	advice := map[key]map[string]bool{}
	for _, x := range facts.byID {
		if x.Server != server || !failed(string(x.Outcome)) {
			continue
		}
		k := key{string(x.Outcome), string(x.ErrorClass)}
		want[k]++
		if advice[k] == nil {
			advice[k] = map[string]bool{}
		}
		advice[k][string(x.RetryAdvice)] = true
	}
	got := map[key]int{}
	for _, m := range classRowRE.FindAllStringSubmatch(page, -1) {
		k := key{m[1], m[2]}
		n, err := strconv.Atoi(strings.ReplaceAll(m[3], ",", ""))
		if err != nil {
			t.Fatalf("server %s: class row %q: %v", server, m[0], err)
		}
		got[k] = n
		if classified && len(advice[k]) == 1 && !advice[k][m[4]] {
			t.Errorf("server %s: %s/%s advice %s, its exchanges say %v", server, k.outcome, k.class, m[4], advice[k])
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("server %s: error classes %v, want %v", server, got, want)
	}
}

// TestIDWithSlash: exchange ids may hold '/', and the page finds them.
func TestIDWithSlash(t *testing.T) {
	s := startSite(t, corpusStore(t))
	facts := factsOf(t)
	v := s.visitor()
	v.login(readToken)
	n := 0
	for id := range facts.byID {
		if !strings.Contains(id, "/") {
			continue
		}
		n++
		if code, body := v.get("/exchange?id=" + url.QueryEscape(id)); code != 200 || !strings.Contains(body, "<h1>Exchange "+id+"</h1>") {
			t.Errorf("%s: %d\n%.300s", id, code, body)
		}
	}
	if n == 0 {
		t.Fatal("the corpus has no id with '/'")
	}
}

func TestShort(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := web.Short(in); got != want {
			t.Errorf("short(%q) = %q, want %q", in, got, want)
		}
	}
	f("", "")
	f("backend exploded", "backend exploded")
	f(strings.Repeat("a", 160), strings.Repeat("a", 160))
	f(strings.Repeat("a", 161), strings.Repeat("a", 160)+"…")
	// Never in the middle of a character.
	f(strings.Repeat("a", 159)+"é"+"b", strings.Repeat("a", 159)+"…")
}

// recorder keeps what a store is given.
type recorder struct {
	apitest.Writer
	exchanges []schema.Exchange
}

func (r *recorder) Write(ctx context.Context, b *schema.Batch) error {
	r.exchanges = append(r.exchanges, b.Exchanges...)
	return r.Writer.Write(ctx, b)
}

// TestClassesExact: a server page counts every exchange of each error
// class, also where one failing outcome has hundreds of them (the page
// once counted the classes among the first 200 of each outcome).
func TestClassesExact(t *testing.T) {
	ctx := context.Background()
	store, err := duckstore.Open(ctx, filepath.Join(t.TempDir(), "gen.duckdb"), duckstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	rec := &recorder{Writer: store}
	if err := apitest.Generate(ctx, rec, apitest.GenerateConfig{Exchanges: 100_000, From: from, Span: 24 * time.Hour, Seed: 7, Batch: 10_000}); err != nil {
		t.Fatal(err)
	}
	// The server with the most exchanges of one failing outcome.
	per := map[[2]string]int{}
	server, most := "", 0
	for _, x := range rec.exchanges {
		if !failed(string(x.Outcome)) {
			continue
		}
		k := [2]string{x.Server, string(x.Outcome)}
		if per[k]++; per[k] > most {
			server, most = x.Server, per[k]
		}
	}
	if most <= 200 {
		t.Fatalf("the generated store has at most %d exchanges of one failing outcome on a server; the test needs more than 200", most)
	}
	s := startSite(t, store)
	v := s.visitor()
	v.login(readToken)
	rng := url.Values{"name": {server}, "from": {from.Format(time.RFC3339)}, "to": {from.Add(24 * time.Hour).Format(time.RFC3339)}}
	code, page := v.get("/server?" + rng.Encode())
	if code != http.StatusOK {
		t.Fatalf("server page: %d\n%.400s", code, page)
	}
	facts := corpusFacts{byID: map[string]schema.Exchange{}}
	for _, x := range rec.exchanges {
		facts.byID[x.ExchangeID] = x
	}
	checkClasses(t, server, page, facts, false)
}
