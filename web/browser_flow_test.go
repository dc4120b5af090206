package web_test

import (
	"fmt"
	"maps"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
)

// corpusFacts are what the pages over the whole corpus must show,
// counted from the corpus file.
type corpusFacts struct {
	total, failed int
	// failingServers are the servers with failures, most first.
	failingServers []string
	byID           map[string]schema.Exchange
	bodies         map[string]schema.Body
	chains         map[string][]schema.Exchange
	sessions       map[string][]schema.Exchange
}

func factsOf(t testing.TB) corpusFacts {
	xs, bodies := corpusRows(t)
	f := corpusFacts{byID: map[string]schema.Exchange{}, bodies: bodies, chains: map[string][]schema.Exchange{}, sessions: map[string][]schema.Exchange{}}
	fails := map[string]int{}
	for _, x := range xs {
		f.total++
		f.byID[x.ExchangeID] = x
		f.chains[x.ChainID] = append(f.chains[x.ChainID], x)
		if x.SessionID != "" {
			f.sessions[x.SessionID] = append(f.sessions[x.SessionID], x)
		}
		if failed(string(x.Outcome)) {
			f.failed++
			fails[x.Server]++
		}
	}
	for s := range fails {
		f.failingServers = append(f.failingServers, s)
	}
	sort.Slice(f.failingServers, func(i, j int) bool {
		a, b := f.failingServers[i], f.failingServers[j]
		if fails[a] != fails[b] {
			return fails[a] > fails[b]
		}
		return a < b
	})
	return f
}

// A 401 status page shows in the console as a failed load; the token
// prompt answers with exactly that.
const unauthorizedLoad = "status of 401"

// TestBrowser drives headless Chromium through the view over the
// conformance corpus on DuckDB: the token prompt, the overview, the
// drill-down from the most failing server to one of its failed
// exchanges, bodies hidden without the scope and shown with it (an SSE
// stream event by event, the cut marked), the retry and MRTR chains, the
// session timeline, and sign-out.
func TestBrowser(t *testing.T) {
	browse(t, startSite(t, corpusStore(t)), true)
}

func browse(t *testing.T, s *site, screenshots bool) {
	facts := factsOf(t)
	b := newBrowser(t)
	q := wholeCorpus.Encode()

	// No token: the prompt, status 401, the token field focused.
	b.run(chromedp.Navigate(s.URL + "/?" + q))
	if st := b.settle(unauthorizedLoad); st != 401 {
		t.Errorf("overview without a token: status %d, want 401", st)
	}
	var focused string
	b.run(chromedp.Evaluate(`document.activeElement && document.activeElement.id`, &focused))
	if focused != "token" {
		t.Errorf("the token prompt focuses %q, want the token field", focused)
	}
	// A wrong token, typed and sent with Enter: the prompt again.
	b.run(chromedp.SendKeys("#token", "not-a-token-at-all"+kb.Enter, chromedp.ByID), chromedp.WaitVisible("#login-message", chromedp.ByID))
	b.settle(unauthorizedLoad)
	if msg := b.text("#login-message"); !strings.Contains(msg, "not known") {
		t.Errorf("wrong token: the prompt says %q", msg)
	}
	// The read token: back on the overview asked for.
	b.run(chromedp.SendKeys("#token", readToken+kb.Enter, chromedp.ByID), chromedp.WaitVisible("section.stats", chromedp.ByQuery))
	if st := b.settle(); st != 200 {
		t.Errorf("overview after sign-in: status %d", st)
	}
	var loc string
	b.run(chromedp.Location(&loc))
	if u, _ := url.Parse(loc); u.Path != "/" || u.Query().Get("from") != wholeCorpus.Get("from") {
		t.Errorf("after sign-in the browser is at %s, want the overview asked for", loc)
	}
	stats := b.text("section.stats")
	for _, want := range []string{fmt.Sprintf("%d exchanges", facts.total), fmt.Sprintf("%d failed", facts.failed)} {
		if !strings.Contains(stats, want) {
			t.Errorf("overview totals %q lack %q", stats, want)
		}
	}
	servers := b.text("#servers")
	for _, name := range facts.failingServers {
		if !strings.Contains(servers, name) {
			t.Errorf("the failing server %s is not on the overview: %q", name, servers)
		}
	}
	// Keyboard: the first Tab reaches the skip link, Enter on it moves
	// focus to the content.
	b.run(chromedp.KeyEvent(kb.Tab))
	var active string
	b.run(chromedp.Evaluate(`document.activeElement.className`, &active))
	if active != "skip" {
		t.Errorf("the first Tab focuses %q, want the skip link", active)
	}
	b.run(chromedp.KeyEvent(kb.Enter))
	b.run(chromedp.Evaluate(`document.activeElement.id`, &active))
	if active != "main" {
		t.Errorf("the skip link moves focus to %q, want main", active)
	}
	if n := b.count("figure.chart svg rect"); n == 0 {
		t.Error("the overview chart has no bars")
	}
	if screenshots {
		b.screenshot("overview", false)
		b.dark(true)
		b.screenshot("overview-dark", false)
		b.dark(false)
	}

	// Drill down: the most failing server, then its first failed exchange.
	top := facts.failingServers[0]
	b.run(chromedp.Click(fmt.Sprintf(`#servers a[href*="name=%s&"]`, url.QueryEscape(top)), chromedp.ByQuery),
		chromedp.WaitVisible("#failures", chromedp.ByQuery))
	b.settle()
	if h := b.text("h1"); h != "server "+top {
		t.Errorf("the server page is titled %q", h)
	}
	if n := b.count("table.classes tbody tr"); n == 0 {
		t.Error("the server page lists no error classes")
	}
	var href string
	var ok bool
	b.run(chromedp.AttributeValue(`#failures a[href^="/exchange?id="]`, "href", &href, &ok, chromedp.ByQuery))
	u, _ := url.Parse(href)
	id := u.Query().Get("id")
	x, known := facts.byID[id]
	if !known || x.Server != top || !failed(string(x.Outcome)) {
		t.Fatalf("the server page's first failure links to %q (%+v), not a failed exchange of %s", href, x.Outcome, top)
	}
	b.run(chromedp.Click(`#failures a[href^="/exchange?id="]`, chromedp.ByQuery), chromedp.WaitVisible("section.verdict", chromedp.ByQuery))
	b.settle()
	if h := b.text("h1"); h != "Exchange "+id {
		t.Errorf("the exchange page is titled %q, want the exchange %s", h, id)
	}
	if v := b.text("section.verdict"); !strings.Contains(v, string(x.Outcome)) {
		t.Errorf("the verdict %q lacks the outcome %s", v, x.Outcome)
	}
	// Without the bodies scope: no body, and the page says why.
	if n := b.count("pre.body, ol.events"); n != 0 {
		t.Errorf("a read token sees %d bodies", n)
	}
	if hidden := b.text("#bodies-hidden"); !strings.Contains(hidden, "needs scope bodies") {
		t.Errorf("bodies hidden, the page says %q", hidden)
	}

	// The longest retry chain and the longest MRTR chain: one chain list,
	// each link saying how it joins.
	for _, id := range []string{longestChain(facts, true), longestChain(facts, false)} {
		b.run(chromedp.Navigate(s.URL + "/exchange?id=" + url.QueryEscape(id)))
		b.settle()
		chain := facts.chains[facts.byID[id].ChainID]
		want := map[string]int{}
		for _, x := range chain {
			switch {
			case x.Continues != "":
				want["MRTR round"]++
			case x.RetryOf != "":
				want["retry"]++
			default:
				want["first"]++
			}
		}
		var sections int
		var joins []string
		b.run(chromedp.Evaluate(`[...document.querySelectorAll("section")].filter(s => s.querySelector("h2")?.textContent === "Chain").length`, &sections))
		b.run(chromedp.Evaluate(`[...document.querySelectorAll("ol.timeline li .joins")].map(e => e.textContent)`, &joins))
		got := map[string]int{}
		for _, j := range joins {
			got[j]++
		}
		if sections != 1 || len(joins) != len(chain) || !maps.Equal(got, want) {
			t.Errorf("chain of %s: %d chain sections, links %v, want one section with %v", id, sections, got, want)
		}
	}

	// Sign out, then in with the bodies scope: the SSE stream of a cut
	// stream, event by event, the cut marked.
	b.run(chromedp.Click(`form.logout button`, chromedp.ByQuery), chromedp.WaitVisible("#token", chromedp.ByID))
	b.settle()
	cut := cutStream(t, facts)
	b.run(chromedp.Navigate(s.URL + "/exchange?id=" + url.QueryEscape(cut.ExchangeID)))
	if st := b.settle(unauthorizedLoad); st != 401 {
		t.Errorf("after sign-out an exchange answers %d, want the prompt", st)
	}
	b.run(chromedp.SendKeys("#token", bodiesToken+kb.Enter, chromedp.ByID), chromedp.WaitVisible("ol.events", chromedp.ByQuery))
	b.settle()
	if n := b.count("ol.events li.event:not(.cut)"); n != cut.SSEEvents {
		t.Errorf("cut stream %s: %d events shown, the record counted %d", cut.ExchangeID, n, cut.SSEEvents)
	}
	if n := b.count("ol.events li.cut"); n != 1 {
		t.Errorf("cut stream %s: %d cut marks", cut.ExchangeID, n)
	}
	if n := b.count("ol.events li.final"); n != 0 {
		t.Errorf("cut stream %s: %d events marked final", cut.ExchangeID, n)
	}
	if screenshots {
		b.screenshot("exchange", true)
	}
	// A stream that carried its answer: exactly one final message.
	done := completeStream(t, facts)
	b.run(chromedp.Navigate(s.URL + "/exchange?id=" + url.QueryEscape(done.ExchangeID)))
	b.settle()
	if n := b.count("ol.events li.final"); n != 1 {
		t.Errorf("complete stream %s: %d events marked final, want 1", done.ExchangeID, n)
	}

	// The session timeline, from the exchange's link.
	b.run(chromedp.Click(`a[href^="/session?"]`, chromedp.ByQuery), chromedp.WaitVisible("ol.session", chromedp.ByQuery))
	b.settle()
	if n, want := b.count("ol.session li"), len(facts.sessions[done.SessionID]); n != want {
		t.Errorf("session %s: %d exchanges shown, the corpus has %d", done.SessionID, n, want)
	}
}

// longestChain returns an exchange of the longest retry chain (retries)
// or MRTR chain.
func longestChain(f corpusFacts, retries bool) string {
	best, n := "", 0
	for _, c := range f.chains {
		linked := 0
		for _, x := range c {
			if retries && x.RetryOf != "" || !retries && x.Continues != "" {
				linked++
			}
		}
		if linked > 0 && len(c) > n || len(c) == n && linked > 0 && c[0].ExchangeID < best {
			best, n = c[0].ExchangeID, len(c)
		}
	}
	return best
}

func cutStream(t *testing.T, f corpusFacts) schema.Exchange {
	for _, id := range sortedIDs(f) {
		x := f.byID[id]
		if _, ok := f.bodies[id]; ok && x.Outcome == "STREAM_INCOMPLETE" && x.SSEEvents > 0 {
			return x
		}
	}
	t.Fatal("the corpus has no cut SSE stream with a body")
	return schema.Exchange{}
}

func completeStream(t *testing.T, f corpusFacts) schema.Exchange {
	for _, id := range sortedIDs(f) {
		x := f.byID[id]
		if _, ok := f.bodies[id]; ok && x.Transport == "sse" && x.Outcome == "TOOL_SUCCESS" && x.SSEEvents > 1 && x.SessionID != "" {
			return x
		}
	}
	t.Fatal("the corpus has no complete SSE stream of several events with a body")
	return schema.Exchange{}
}

func sortedIDs(f corpusFacts) []string {
	ids := make([]string, 0, len(f.byID))
	for id := range f.byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

var _ queries.Store
