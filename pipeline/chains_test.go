package pipeline

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// TestRetryOriginOneVocabulary: every exchange of a chain says who re-sent
// it in one vocabulary: "none" on a first attempt, the logger's word on a
// re-send it named, "unknown" on one nobody named (never empty, never
// "none" on a re-send), and an MRTR round has its attempt's origin.
func TestRetryOriginOneVocabulary(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	call := func(id string, sec int, outcome classify.Outcome, attempt int, origin string) schema.Exchange {
		x := schema.Exchange{
			ExchangeID: id, TS: t0.Add(time.Duration(sec) * time.Second), Server: "files", SessionID: "s-1",
			Attempt: attempt, RetryOrigin: origin,
		}
		x.Method, x.ToolName, x.ParamsHash, x.Outcome = "tools/call", "write", "h1", outcome
		x.OutcomeKnown = outcome != classify.HTTPError
		return x
	}
	round := func(x schema.Exchange) schema.Exchange { x.Continuation = true; return x }
	notification := schema.Exchange{ExchangeID: "n", TS: t0}
	notification.Method, notification.Notification = "notifications/initialized", true
	cases := []struct {
		name string
		in   []schema.Exchange
		want []string // retry_origin of each, in order
	}{
		{"inferred retries", []schema.Exchange{
			call("a", 0, classify.HTTPError, 0, ""), call("b", 1, classify.HTTPError, 0, ""), call("c", 2, classify.ToolSuccess, 0, ""),
		}, []string{"none", "unknown", "unknown"}},
		{"the client logged its SDK's retry", []schema.Exchange{
			call("a", 0, classify.HTTPError, 0, ""), call("b", 1, classify.HTTPError, 2, "sdk"), call("c", 2, classify.ToolSuccess, 0, ""),
		}, []string{"none", "sdk", "unknown"}},
		{"a logger's none on a re-send", []schema.Exchange{
			call("a", 0, classify.HTTPError, 1, "none"), call("b", 1, classify.ToolSuccess, 0, "none"),
		}, []string{"none", "unknown"}},
		{"attempt 3 whose earlier attempts were never seen", []schema.Exchange{
			call("a", 0, classify.ToolSuccess, 3, ""),
		}, []string{"unknown"}},
		{"MRTR rounds keep their attempt's origin", []schema.Exchange{
			call("a", 0, classify.HTTPError, 0, ""), call("b", 1, classify.InputRequired, 2, "app"), round(call("c", 2, classify.InputRequired, 0, "")),
			round(call("d", 3, classify.ToolSuccess, 0, "")),
		}, []string{"none", "app", "app", "app"}},
		{"a round of a first attempt", []schema.Exchange{
			call("a", 0, classify.InputRequired, 0, ""), round(call("b", 1, classify.ToolSuccess, 0, "")),
		}, []string{"none", "none"}},
		{"notification", []schema.Exchange{notification}, []string{"none"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch := newChains(ChainConfig{}, nil)
			for i := range c.in {
				ch.Link(&c.in[i])
				if got := c.in[i].RetryOrigin; got != c.want[i] {
					t.Errorf("%s (attempt %d, retry_of %q, continues %q): retry_origin %q, want %q",
						c.in[i].ExchangeID, c.in[i].Attempt, c.in[i].RetryOf, c.in[i].Continues, got, c.want[i])
				}
			}
		})
	}
}

// TestRetryOriginOnEveryChain checks the same over every correlate fixture
// and the recorded SDK traffic through the whole pipeline: no exchange
// without a retry_origin, "none" exactly on first attempts.
func TestRetryOriginOnEveryChain(t *testing.T) {
	files, _ := filepath.Glob("testdata/correlate/*.ndjson")
	real, _ := filepath.Glob("../testdata/real/*.ndjson")
	files = append(files, real...)
	if len(files) < 5 {
		t.Fatalf("fixtures: %v", files)
	}
	resent := 0
	for _, f := range files {
		sink, _ := runFile(t, testConfig(), readLines(t, f))
		for _, x := range sink.exchanges {
			first := x.RetryOf == "" && x.Attempt <= 1
			switch {
			case x.RetryOrigin == "":
				t.Errorf("%s %s: no retry_origin (attempt %d, retry_of %q)", filepath.Base(f), x.ExchangeID, x.Attempt, x.RetryOf)
			case first != (x.RetryOrigin == "none"):
				t.Errorf("%s %s: retry_origin %q on attempt %d, retry_of %q", filepath.Base(f), x.ExchangeID, x.RetryOrigin, x.Attempt, x.RetryOf)
			}
			if !first && !strings.HasPrefix(x.Method, "notifications/") {
				resent++
			}
		}
	}
	if resent == 0 {
		t.Error("no re-sent call in the fixtures: the test checks nothing")
	}
}

// writeCall is one tools/call of write (server files, session s-1, params
// h1) sent sec seconds after 09:00, with its outcome.
func writeCall(id string, sec int, outcome classify.Outcome) schema.Exchange {
	x := schema.Exchange{ExchangeID: id, TS: time.Date(2026, 11, 2, 9, 0, sec, 0, time.UTC), Server: "files", SessionID: "s-1"}
	x.Method, x.ToolName, x.ParamsHash, x.Outcome = "tools/call", "write", "h1", outcome
	return x
}

// TestLinkSameExchangeAgain: an exchange the window holds as its call's
// newest attempt, formed again (re-read after a restart whose chains were
// seeded from the store, or a second view after a missed merge), keeps
// its attempt and chain and leaves the window as it was: it is not a retry
// of itself, and the call's next attempt is counted once. Before, the
// second Link made it attempt 2, retry_of itself, and the next attempt 3.
func TestLinkSameExchangeAgain(t *testing.T) {
	ch := newChains(ChainConfig{}, nil)
	var got []schema.Exchange
	for _, x := range []schema.Exchange{
		writeCall("a", 0, classify.HTTPError), writeCall("b", 1, classify.HTTPError),
		writeCall("b", 1, classify.HTTPError), // formed again
		writeCall("c", 2, classify.ToolSuccess),
	} {
		ch.Link(&x)
		got = append(got, x)
	}
	want := []struct {
		attempt          int
		retryOf, chainID string
	}{{1, "", "a"}, {2, "a", "a"}, {2, "", "a"}, {3, "b", "a"}}
	for i, w := range want {
		if g := got[i]; g.Attempt != w.attempt || g.RetryOf != w.retryOf || g.ChainID != w.chainID {
			t.Errorf("link %d (%s): attempt %d retry_of %q chain %q, want %d %q %q", i, g.ExchangeID, g.Attempt, g.RetryOf, g.ChainID, w.attempt, w.retryOf, w.chainID)
		}
	}
}

// TestSlowAttemptReleasedAfterItsResend: the client gives up on a call
// after 10 s and sends it again; the re-send fails at once, the first
// attempt only at 30 s (the gateway's own timeout). The correlator
// releases each exchange once it is answered, so the re-send reaches the
// chains first, while the first attempt's request still waits for its
// answer. The re-send is a retry of that attempt in flight (attempt 2,
// unknown_side_effect_retry: the client could not know whether it ran);
// the first attempt, released later, must not become a retry of its own
// re-send (before 2026-12-05: attempt 2, retry_of the re-send): it is
// attempt 1 of the chain, and the next attempt is a retry of the re-send.
// The same holds when the first attempt works (session s2). Logged as one
// exchange record at completion (session s3, an access log), the first
// attempt is unknown when its re-send is released: a slow call that
// worked, released after a later call of the same tool and params, then
// stands alone (in order, the later one would have been a new call).
// Session s4: the first attempt works half a second after the client sent
// it again, and is released first; its re-send, sent while it was still
// in flight, is its retry all the same.
func TestSlowAttemptReleasedAfterItsResend(t *testing.T) {
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	line := func(kind, id string, at time.Duration, status int) []byte {
		body := fmt.Sprintf(`"request_body":"{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":\"write\",\"arguments\":{\"a\":1}}}"`, id)
		if kind == "response" {
			body = fmt.Sprintf(`"http.status":%d,"response_body":""`, status)
			if status == 200 {
				body = fmt.Sprintf(`"http.status":200,"response_body":"{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"content\":[]}}"`, id)
			}
		}
		session := "s1"
		switch id[0] {
		case 'w':
			session = "s2"
		case 'v':
			session = "s3"
		case 'u':
			session = "s4"
		}

		return fmt.Appendf(nil, `{"v":1,"event_id":"%s-%s","ts":%q,"kind":%q,"source":"gateway","exchange_id":"x-%s","server":"kv","session_id":%q,"http.method":"POST",%s}`,
			kind, id, t0.Add(at).Format(time.RFC3339Nano), kind, id, session, body)
	}
	// record is a whole exchange that worked, logged when it ended.
	record := func(id string, at, took time.Duration) []byte {
		return fmt.Appendf(nil, `{"v":1,"event_id":"e-%s","ts":%q,"duration_ms":%d,"kind":"exchange","source":"gateway","exchange_id":"x-%s","server":"kv","session_id":"s3","http.method":"POST","http.status":200,"request_body":"{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"method\":\"tools/call\",\"params\":{\"name\":\"write\",\"arguments\":{\"a\":1}}}","response_body":"{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"content\":[]}}"}`,
			id, t0.Add(at).Format(time.RFC3339Nano), took.Milliseconds(), id, id, id)
	}
	lines := [][]byte{
		line("request", "1", 0, 0),
		line("request", "2", 10*time.Second, 0),
		line("response", "2", 10*time.Second+100*time.Millisecond, 503),
		line("response", "1", 30*time.Second, 504),
		line("request", "3", 31*time.Second, 0),
		line("response", "3", 31*time.Second+100*time.Millisecond, 503),
		line("request", "w1", 0, 0),
		line("request", "w2", 5*time.Second, 0),
		line("response", "w2", 5*time.Second+100*time.Millisecond, 200),
		line("response", "w1", 20*time.Second, 200),
		record("v2", 5*time.Second, 100*time.Millisecond),
		record("v1", 0, 20*time.Second),
		line("request", "u1", 40*time.Second, 0),
		line("request", "u2", 50*time.Second, 0),
		line("response", "u1", 50*time.Second+500*time.Millisecond, 200),
		line("response", "u2", 55*time.Second, 200),
	}
	var msgs []Message
	for i, l := range lines {
		msgs = append(msgs, Message{Value: l, Pos: Position{Stream: "a/0", Topic: "a", Offset: int64(i)}})
	}
	got := map[string]schema.Exchange{}
	for _, x := range runMessages(t, msgs) {
		got[x.ExchangeID] = x
	}
	for _, w := range []struct {
		id, retryOf, chain string
		attempt            int
		unknown            bool
	}{{"x-1", "", "x-1", 1, false}, {"x-2", "x-1", "x-1", 2, true}, {"x-3", "x-2", "x-1", 3, true}, {"x-w1", "", "x-w1", 1, false}, {"x-w2", "x-w1", "x-w1", 2, true},
		{"x-v1", "", "x-v1", 1, false}, {"x-v2", "", "x-v2", 1, false},
		{"x-u1", "", "x-u1", 1, false}, {"x-u2", "x-u1", "x-u1", 2, true}} {
		if x := got[w.id]; x.RetryOf != w.retryOf || x.ChainID != w.chain || x.Attempt != w.attempt || x.UnknownSideEffectRetry != w.unknown {
			t.Errorf("%s: attempt %d retry_of %q chain %q unknown %v, want %d %q %q %v", w.id, x.Attempt, x.RetryOf, x.ChainID, x.UnknownSideEffectRetry, w.attempt, w.retryOf, w.chain, w.unknown)
		}
	}
}

// TestSeedKeepsStoredLinks: after a restart the window holds each stored
// exchange as it was linked. The store holds re-sends that named an
// attempt b still in flight when they were released; b was not stored
// before the kill. A failed re-send c (retry_of b, chain b): seeded, it
// keeps chain b, and the next attempt d joins it (linked again, c would
// have started a chain of its own). A re-send c that worked after a failed
// first attempt a (retry_of b, attempt 3, chain a): b, released after the
// restart, is the attempt before c in that chain and a retry of a, as in
// a run without the restart, when the seed says c named an attempt still
// to come.
func TestSeedKeepsStoredLinks(t *testing.T) {
	ch := newChains(ChainConfig{}, nil)
	c := writeCall("c", 20, classify.HTTPError)
	c.Attempt, c.RetryOf, c.ChainID = 2, "b", "b"
	ch.Seed(&c, true)
	d := writeCall("d", 30, classify.ToolSuccess)
	ch.Link(&d)
	if d.Attempt != 3 || d.ChainID != "b" || d.RetryOf != "c" {
		t.Errorf("d attempt %d chain %q retry_of %q, want 3 %q %q", d.Attempt, d.ChainID, d.RetryOf, "b", "c")
	}

	for _, ahead := range []bool{true, false} {
		ch := newChains(ChainConfig{}, nil)
		a, c := writeCall("a", 0, classify.HTTPError), writeCall("c", 20, classify.ToolSuccess)
		a.Attempt, a.ChainID = 1, "a"
		c.Attempt, c.RetryOf, c.ChainID = 3, "b", "a"
		ch.Seed(&a, false)
		ch.Seed(&c, ahead)
		b := writeCall("b", 10, classify.HTTPError)
		ch.Link(&b)
		want, wantOf := 2, "a"
		if !ahead {
			want, wantOf = 1, "" // the window does not know c named an attempt still to come
		}
		if b.Attempt != want || b.ChainID != "a" || b.RetryOf != wantOf {
			t.Errorf("ahead %v: b attempt %d chain %q retry_of %q, want %d %q %q", ahead, b.Attempt, b.ChainID, b.RetryOf, want, "a", wantOf)
		}
	}
}

// TestAttemptBeforeOneInFlight: a call fails (a), is sent again (b), and
// b runs long; the client gives up on b and sends the call a third time
// (c), which is answered first. c names b, still unreleased (attempt 3,
// chain a); b, released after c, is the attempt between: a retry of a,
// which c's entry replaced in the window. Before, b came out with no
// retry_of (about 0.5% of the re-sends read from unkeyed partitions,
// whose answers a lagging partition gives late).
func TestAttemptBeforeOneInFlight(t *testing.T) {
	ch := newChains(ChainConfig{}, nil)
	var pending *unreleased
	ch.unreleased = func(_, _, _ string, _ classify.Call, before int64) (unreleased, bool) {
		if pending == nil || pending.ts >= before {
			return unreleased{}, false
		}
		return *pending, true
	}
	a := writeCall("a", 0, classify.HTTPError)
	ch.Link(&a)
	b := writeCall("b", 5, classify.TransportError)
	pending = &unreleased{id: "b", ts: b.TS.UnixNano(), unknown: true}
	c := writeCall("c", 20, classify.ToolSuccess)
	ch.Link(&c)
	if c.RetryOf != "b" || c.Attempt != 3 || c.ChainID != "a" || !c.UnknownSideEffectRetry {
		t.Errorf("c: retry_of %q attempt %d chain %q unknown %v, want b 3 a true", c.RetryOf, c.Attempt, c.ChainID, c.UnknownSideEffectRetry)
	}
	pending = nil
	ch.Link(&b)
	if b.RetryOf != "a" || b.Attempt != 2 || b.ChainID != "a" {
		t.Errorf("b: retry_of %q attempt %d chain %q, want a 2 a", b.RetryOf, b.Attempt, b.ChainID)
	}
	d := writeCall("d", 30, classify.ToolSuccess)
	ch.Link(&d)
	if d.RetryOf != "" || d.ChainID != "d" {
		t.Errorf("d after c worked: retry_of %q chain %q, want a new call", d.RetryOf, d.ChainID)
	}
}

// TestSeedKeepsUnknownOutcome: a stored attempt flagged as an unknown
// side-effect retry (its earlier attempt was still in flight when it was
// sent, which the seed cannot see again) passes the flag on to the call's
// next attempt after a restart, as it did before it. Before, the seed
// linked it again from its own known outcome, and the next attempt came
// out without the flag (11-14 rows of a real-broker kill run with client
// clocks 3 s off).
func TestSeedKeepsUnknownOutcome(t *testing.T) {
	ch := newChains(ChainConfig{}, nil)
	c := writeCall("c", 20, classify.HTTPError)
	c.OutcomeKnown, c.Attempt, c.RetryOf, c.ChainID, c.UnknownSideEffectRetry = true, 2, "b", "b", true
	ch.Seed(&c, false)
	d := writeCall("d", 30, classify.ToolSuccess)
	d.OutcomeKnown = true
	ch.Link(&d)
	if d.RetryOf != "c" || d.Attempt != 3 || !d.UnknownSideEffectRetry {
		t.Errorf("d: retry_of %q attempt %d unknown %v, want c 3 true", d.RetryOf, d.Attempt, d.UnknownSideEffectRetry)
	}
}
