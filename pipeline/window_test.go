package pipeline

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

func TestRing(t *testing.T) {
	var r ring[int]
	next, want := 0, 0
	for round := range 50 { // grow across blocks, drain, refill
		for range 37 + round*101 {
			r.push(next)
			next++
		}
		for range 29 + round*67 {
			if got := r.pop(); got != want {
				t.Fatalf("pop %d, want %d", got, want)
			}
			want++
		}
		if round%10 == 9 { // now and then down to empty
			for r.len() > 0 {
				r.pop()
				want++
			}
		}
		if r.len() != next-want {
			t.Fatalf("len %d, want %d", r.len(), next-want)
		}
		if r.len() > 0 && r.front() != want {
			t.Fatalf("front %d, want %d", r.front(), want)
		}
		for i := 0; i < r.len(); i += 97 {
			if got := *r.at(i); got != want+i {
				t.Fatalf("at(%d) = %d, want %d", i, got, want+i)
			}
		}
		// What the ring holds is what it was given, plus two blocks.
		if held := len(r.blocks) * ringBlock; held > r.len()+2*ringBlock {
			t.Fatalf("%d slots for %d elements", held, r.len())
		}
	}
}

// chainRec is a classified exchange of call k (its retry key) at ts.
func chainRec(id string, k int, ts time.Time, out classify.Outcome) *schema.Exchange {
	rec := &schema.Exchange{ExchangeID: id, TS: ts, Server: "s", SessionID: "sess"}
	rec.Method, rec.ToolName, rec.ParamsHash = "tools/call", "t", strconv.Itoa(k)
	rec.Outcome = out
	rec.OutcomeKnown = out != classify.HTTPError
	return rec
}

// A run three times longer than the chain window keeps one window of
// state, and still links a retry within the window but not beyond it.
func TestChainsBoundedOverLongRun(t *testing.T) {
	const window, perSec = 10 * time.Second, 1000
	c := newChains(ChainConfig{Window: window}, nil)
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	n := int(3 * window / time.Second * perSec)
	maxLen := 0
	for i := range n {
		ts := t0.Add(time.Duration(i) * time.Second / perSec)
		c.Link(chainRec(fmt.Sprint("x-", i), i, ts, classify.HTTPError))
		maxLen = max(maxLen, c.Len())
	}
	if limit := int(window/time.Second*perSec) + 1; maxLen > limit || c.retries.ring.len() > limit {
		t.Errorf("state grew to %d calls, ring %d; one window holds %d", maxLen, c.retries.ring.len(), limit)
	}
	end := t0.Add(time.Duration(n) * time.Second / perSec)
	recent := chainRec("retry-recent", n-100, end, classify.ToolSuccess)
	c.Link(recent)
	if recent.RetryOf != fmt.Sprint("x-", n-100) || recent.Attempt != 2 {
		t.Errorf("retry within the window: retry_of %q attempt %d", recent.RetryOf, recent.Attempt)
	}
	old := chainRec("retry-old", n-int(window/time.Second*perSec)-100, end, classify.ToolSuccess)
	c.Link(old)
	if old.RetryOf != "" {
		t.Errorf("retry beyond the window linked to %q", old.RetryOf)
	}
}

func TestChainsMaxKeys(t *testing.T) {
	c := newChains(ChainConfig{MaxKeys: 100}, nil)
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for i := range 1000 {
		c.Link(chainRec(fmt.Sprint("x-", i), i, t0, classify.HTTPError))
		// The same call again keeps its key: no eviction for a repeat.
		c.Link(chainRec(fmt.Sprint("y-", i), i, t0, classify.HTTPError))
	}
	if c.Len() != 100 {
		t.Fatalf("Len %d, want the bound 100", c.Len())
	}
	r := chainRec("z", 999, t0, classify.ToolSuccess)
	if c.Link(r); r.RetryOf != "y-999" || r.Attempt != 3 {
		t.Errorf("newest call: retry_of %q attempt %d, want y-999, 3", r.RetryOf, r.Attempt)
	}
	r = chainRec("z", 0, t0, classify.ToolSuccess)
	if c.Link(r); r.RetryOf != "" {
		t.Errorf("evicted call still linked to %q", r.RetryOf)
	}
}

// windowPopulations are the entries a window holds in BenchmarkWindowCost:
// 1, 3 and 10 minutes of 1,000 calls/s; 10 minutes is the default chain
// and dedupe window.
var windowPopulations = []struct {
	name string
	n    int
}{{"1x", 60_000}, {"3x", 180_000}, {"10x", 600_000}}

// BenchmarkWindowCost measures one operation of each windowed stage once
// its window is full and expiring (the state is run for two windows before
// the timer starts), at 1x, 3x and 10x the population. A cost that grows
// with state shows as ns/op rising from 1x to 10x.
func BenchmarkWindowCost(b *testing.B) {
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for _, p := range windowPopulations {
		window := time.Duration(p.n) * time.Millisecond // 1,000 per second
		b.Run("chains/"+p.name, func(b *testing.B) {
			c := newChains(ChainConfig{Window: window, MaxKeys: 2 * p.n}, nil)
			recs := make([]*schema.Exchange, 4096)
			for i := range recs {
				recs[i] = chainRec("x", 0, t0, classify.HTTPError)
			}
			i := 0
			link := func() {
				r := recs[i%len(recs)]
				*r = schema.Exchange{ExchangeID: "x", TS: t0.Add(time.Duration(i) * time.Millisecond), Server: "s", SessionID: "sess"}
				r.Method, r.ToolName, r.ParamsHash, r.Outcome = "tools/call", "t", strconv.Itoa(i), classify.HTTPError
				c.Link(r)
				i++
			}
			for range 2 * p.n {
				link()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				link()
			}
			b.ReportMetric(float64(c.Len()), "calls-held")
		})
		b.Run("dedupe/"+p.name, func(b *testing.B) {
			d := newDedupe(DedupeConfig{Window: window, MaxIDs: 2 * p.n})
			ids := make([]string, 2*p.n)
			for i := range ids {
				ids[i] = "ev-" + strconv.Itoa(i)
			}
			i := 0
			for range 2 * p.n {
				d.Seen(ids[i%len(ids)], t0.Add(time.Duration(i)*time.Millisecond))
				i++
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				d.Seen(ids[i%len(ids)], t0.Add(time.Duration(i)*time.Millisecond))
				i++
			}
			b.ReportMetric(float64(d.Len()), "ids-held")
		})
		b.Run("correlate/"+p.name, func(b *testing.B) { benchCorrelate(b, t0, p.n, false) })
		// With sessions (2,000, as loadgen's) every waiting request is in
		// the flights index too, and each step asks for the unreleased
		// attempt of a call in the session it adds to, as Link does for a
		// released tool call: a call none makes, so the whole session's
		// list is looked at.
		b.Run("flights/"+p.name, func(b *testing.B) { benchCorrelate(b, t0, p.n, true) })
	}
}

// benchCorrelate is BenchmarkWindowCost's correlate case for a window of
// n calls: responses come n/10 calls after their requests, so that many
// requests wait; each Add is followed by a Release. With sessions, the
// requests have one of 2,000 and each step looks up a call in the flights.
func benchCorrelate(b *testing.B, t0 time.Time, n int, sessions bool) {
	inflight := n / 10
	c := newCorrelator(CorrelatorConfig{MaxPending: 4 * n, PairWindow: time.Hour})
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{}}}`
	resp := `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}`
	hdr := classify.Header{{Name: "content-type", Value: "application/json"}}
	names := []string{""}
	if sessions {
		names = make([]string, 2000)
		for k := range names {
			names[k] = "sess-" + strconv.Itoa(k)
		}
	}
	other := classify.Call{Method: "tools/call", ToolName: "t", ParamsHash: "none"}
	found := 0
	emit := func(*group) {}
	i, off := 0, int64(0)
	step := func() {
		ts := t0.Add(time.Duration(i) * time.Millisecond)
		sess := names[i%len(names)]
		req := schema.Event{EventID: "q" + strconv.Itoa(i), TS: ts, Kind: schema.KindRequest, Source: "gateway",
			SessionID: sess, ExchangeID: "x" + strconv.Itoa(i), HTTPMethod: "POST", RequestBody: body}
		c.Add(&req, Position{Stream: "s", Offset: off})
		off++
		if j := i - inflight; j >= 0 {
			r := schema.Event{EventID: "r" + strconv.Itoa(j), TS: ts, Kind: schema.KindResponse, Source: "gateway",
				SessionID: names[j%len(names)], ExchangeID: "x" + strconv.Itoa(j), HTTPStatus: 200, ResponseBody: resp, ResponseHeaders: hdr}
			c.Add(&r, Position{Stream: "s", Offset: off})
			off++
		}
		if sessions {
			if _, ok := c.unreleased("", sess, schema.SourceGateway, other, ts.UnixNano()); ok {
				found++
			}
		}
		c.Release(false, emit)
		i++
	}
	for range 2 * inflight {
		step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		step()
	}
	if found > 0 {
		b.Fatalf("%d lookups found a call none makes", found)
	}
	pending, _ := c.Pending()
	b.ReportMetric(float64(pending), "pending")
	if sessions {
		b.ReportMetric(float64(c.merging.flights.len()), "indexed")
	}
}

func TestKeyedWindow(t *testing.T) {
	h := newKeyHasher()
	w := newKeyed[int](3)
	a, b, c, d := h.of("a"), h.of("b"), h.of("c"), h.of("d")
	w.put(a, hkey{}, 1, 10)
	w.put(b, hkey{}, 2, 20)
	w.put(a, hkey{}, 3, 11) // a again: its newest value, no eviction
	if v, ok := w.get(a); !ok || *v != 11 {
		t.Fatalf("a = %v %v, want its newest value 11", v, ok)
	}
	if w.len() != 2 {
		t.Fatalf("len %d, want 2 keys", w.len())
	}
	// Expiring the entry a wrote first keeps a: it was put again since.
	w.expire(2)
	if v, ok := w.get(a); !ok || *v != 11 {
		t.Fatalf("a after expiry of its first entry = %v %v, want 11", v, ok)
	}
	if _, ok := w.get(b); !ok {
		t.Fatal("b expired before its time")
	}
	w.put(c, hkey{}, 4, 30)
	w.put(d, hkey{}, 5, 40) // over the bound of 3: the oldest live key (b) goes
	if _, ok := w.get(b); ok {
		t.Error("b kept past the bound")
	}
	for _, k := range []hkey{a, c, d} {
		if _, ok := w.get(k); !ok {
			t.Errorf("key %v lost", k)
		}
	}
	w.expire(6)
	if w.len() != 0 || w.ring.len() != 0 {
		t.Errorf("after expiring everything: %d keys, %d entries", w.len(), w.ring.len())
	}
	w.put(b, hkey{}, 7, 21) // sequence numbers go on after the ring emptied
	if v, ok := w.get(b); !ok || *v != 21 {
		t.Errorf("b = %v %v after refill, want 21", v, ok)
	}
}

func TestKeyHasherPartsAreSeparated(t *testing.T) {
	h := newKeyHasher()
	if h.of("ab", "c") == h.of("a", "bc") || h.of("s", "x") == h.of("c", "x") {
		t.Error("keys of different parts share a hash")
	}
	if k := h.of("a", "b"); h.of("a", "b") != k {
		t.Error("one key, two hashes")
	}
	other := newKeyHasher()
	if other.of("a") == h.of("a") {
		t.Error("two hashers share a seed")
	}
}

// A retry and a cancel still find their call once thousands of other
// calls were linked between (the windows index by hash and sequence).
func TestChainsLinkAcrossAFullWindow(t *testing.T) {
	c := newChains(ChainConfig{Window: time.Minute}, nil)
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	first := chainRec("x-first", -1, t0, classify.HTTPError)
	first.JSONRPCID = "7"
	c.Link(first)
	for i := range 50_000 {
		r := chainRec(fmt.Sprint("x-", i), i, t0.Add(time.Duration(i)*time.Millisecond), classify.ToolSuccess)
		r.JSONRPCID = strconv.Itoa(100 + i)
		c.Link(r)
	}
	at := t0.Add(50 * time.Second)
	retry := chainRec("x-retry", -1, at, classify.ToolSuccess)
	c.Link(retry)
	if retry.RetryOf != "x-first" || retry.ChainID != "x-first" || retry.Attempt != 2 {
		t.Errorf("retry: retry_of %q chain %q attempt %d, want x-first, x-first, 2", retry.RetryOf, retry.ChainID, retry.Attempt)
	}
	cancel := &schema.Exchange{ExchangeID: "x-cancel", TS: at, Server: "s", SessionID: "sess"}
	cancel.Method, cancel.Notification = "notifications/cancelled", true
	c.Link(cancel)
	c.LinkCancel(cancel, &schema.Body{RequestBody: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`}, &fastjson.Parser{})
	if cancel.ChainID != "x-first" {
		t.Errorf("cancel of id 7 in chain %q, want x-first", cancel.ChainID)
	}
}

// BenchmarkChainsMemory reports the heap the chains hold per call with a
// full default window: 10 minutes of 1,000 calls/s, each with a session,
// a 64-hex params hash, a JSON-RPC id and a generated exchange id.
func BenchmarkChainsMemory(b *testing.B) {
	const n = 600_000
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := newChains(ChainConfig{}, nil)
		for i := range n {
			rec := &schema.Exchange{ExchangeID: fmt.Sprintf("x-%024x", i), TS: t0.Add(time.Duration(i) * time.Millisecond),
				Server: fmt.Sprintf("srv-%02d", i%20), SessionID: fmt.Sprintf("%08x-4b1c-4a7e-9f3d-%012x", i/50, i/50),
				ClientName: "claude-code"}
			rec.Method, rec.ToolName, rec.ParamsHash = "tools/call", fmt.Sprintf("tool_%02d", i%40), fmt.Sprintf("%064x", i)
			rec.JSONRPCID, rec.Outcome, rec.OutcomeKnown = strconv.Itoa(i%1000), classify.ToolSuccess, true
			c.Link(rec)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/call")
		b.ReportMetric(float64(c.Len()), "calls-held")
		runtime.KeepAlive(c)
	}
}

func TestChainsNumberOrigins(t *testing.T) {
	c := newChains(ChainConfig{}, nil)
	for _, o := range []string{"sdk", "app", "sdk", "user"} {
		if got := c.originNames[c.origin(o)]; got != o {
			t.Errorf("origin %q comes back as %q", o, got)
		}
	}
	for i := range 400 {
		o := fmt.Sprint("o", i)
		i := c.origin(o)
		if full := i == 0 && len(c.originNames) == 256; c.originNames[i] != o && !full {
			t.Fatalf("origin %q comes back as %q", o, c.originNames[i])
		}
	}
	if len(c.originNames) != 256 || c.originNames[c.origin("sdk")] != "sdk" {
		t.Errorf("%d origins numbered, want 256 (255 and the empty one), the first kept", len(c.originNames))
	}
}
