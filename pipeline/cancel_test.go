package pipeline

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// cancelTraffic builds production-shaped gateway traffic around cancelled
// calls: split request and response records of long tools (a cancel 30 s
// after the request, the cut stream 30 s after that), background calls
// from other sessions every 250 ms for three minutes so that event time
// moves far past every merge window, lines slightly out of order and a
// few redelivered.
type cancelTraffic struct {
	t0    time.Time
	lines []logLine
	n     int
}

type logLine struct {
	at   time.Time // when the observer wrote it
	line []byte
}

func (c *cancelTraffic) add(at time.Time, ev schema.Event) {
	c.n++
	ev.V, ev.Source, ev.Observer, ev.Server = 1, "gateway", "gw-1", "tools"
	if ev.SessionID != "" && ev.Kind != schema.KindResponse {
		ev.RequestHeaders.Set("mcp-session-id", ev.SessionID)
	}
	if ev.EventID == "" {
		ev.EventID = fmt.Sprintf("ev-%d", c.n)
	}
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	c.lines = append(c.lines, logLine{at, b})
}

func (c *cancelTraffic) at(s float64) time.Time {
	return c.t0.Add(time.Duration(s * float64(time.Second)))
}

func callBody(id int, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"n":30}}}`, id, tool)
}

func cancelBody(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"request timeout"}}`, id)
}

// request logs the request half of a call at s seconds.
func (c *cancelTraffic) request(xid, session string, s float64, body string) {
	c.add(c.at(s), schema.Event{Kind: schema.KindRequest, ExchangeID: xid, TS: c.at(s), SessionID: session, HTTPMethod: "POST",
		RequestHeaders: classify.HeaderOf(map[string]string{"mcp-protocol-version": "2025-11-25"}), RequestBody: body})
}

// response logs the response half at s seconds: an SSE stream with
// progress only, cut by reason ("eof": the server closed it, rmcp's way;
// "client_abort": the client did, TypeScript's), or a final result.
func (c *cancelTraffic) response(xid, session string, s float64, id int, reason string) {
	progress := `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"progressToken":1}}` + "\n\n"
	ev := schema.Event{Kind: schema.KindResponse, ExchangeID: xid, TS: c.at(s), SessionID: session, HTTPStatus: 200,
		ResponseHeaders: classify.HeaderOf(map[string]string{"content-type": "text/event-stream"}), ResponseBody: progress}
	complete := reason == "eof" || reason == "result"
	ev.StreamComplete = &complete
	if reason == "result" {
		ev.ResponseBody += fmt.Sprintf(`data: {"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"done"}]}}`, id) + "\n\n"
		reason = "eof"
	}
	ev.CloseReason = reason
	c.add(c.at(s), ev)
}

// exchange logs a whole exchange that took ms, at its end.
func (c *cancelTraffic) exchange(session string, s, ms float64, body string, status int, resp string) {
	d := ms
	c.add(c.at(s).Add(time.Duration(ms*float64(time.Millisecond))), schema.Event{Kind: schema.KindExchange, TS: c.at(s), SessionID: session,
		HTTPMethod: "POST", HTTPStatus: status, RequestBody: body, DurationMS: &d,
		ResponseHeaders: classify.HeaderOf(map[string]string{"content-type": "application/json"}), ResponseBody: resp})
}

func (c *cancelTraffic) cancel(session string, s float64, id int) {
	c.exchange(session, s, 3, cancelBody(id), 202, "")
}

// sorted returns the lines in the order they were written, each moved by
// up to 300 ms of shipping jitter, with every 40th line delivered twice.
func (c *cancelTraffic) sorted(seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 14))
	ls := slices.Clone(c.lines)
	for i := range ls {
		ls[i].at = ls[i].at.Add(time.Duration(r.IntN(300)) * time.Millisecond)
	}
	slices.SortStableFunc(ls, func(a, b logLine) int { return a.at.Compare(b.at) })
	var out [][]byte
	for i, l := range ls {
		out = append(out, l.line)
		if i%40 == 39 {
			out = append(out, l.line)
		}
	}
	return out
}

func (c *cancelTraffic) background(until float64) {
	for s, i := 0.0, 0; s < until; s, i = s+0.25, i+1 {
		ok := `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"ok"}]}}`
		c.exchange(fmt.Sprintf("bg-%d", i%7), s, 15+float64(i%40), callBody(1000+i, "lookup"), 200, fmt.Sprintf(ok, 1000+i))
	}
}

// TestCancelWithoutMinus32800 covers the cancels that get no -32800: the
// client's notifications/cancelled precedes a stream the server closes
// without an answer (rmcp) or that the client closes itself (TypeScript),
// on a call that runs long (the cancel 30 s after the request, the cut 30 s
// later), so the cancel waits far longer than two merge windows for its
// call. Those calls are CANCELLED, out of the error rates; a cancel after
// the server cut the stream, a call answered despite its cancel, and a
// call that never got an answer keep what the server did or become
// CANCELLED as the rules say; every cancel joins its call's chain.
func TestCancelWithoutMinus32800(t *testing.T) {
	c := &cancelTraffic{t0: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	c.background(180)
	// Cancel at +30 s, the server closes the stream at +60 s (rmcp).
	c.request("L-eof", "s-rust", 1, callBody(8, "count_slowly"))
	c.cancel("s-rust", 31, 8)
	c.response("L-eof", "s-rust", 59.5, 8, "eof")
	// Cancel at +30 s, the client closes the stream at +58 s (TypeScript).
	c.request("L-abort", "s-ts", 2, callBody(8, "count_slowly"))
	c.cancel("s-ts", 32, 8)
	c.response("L-abort", "s-ts", 60, 8, "client_abort")
	// The server cut the stream at +5 s; the cancel came 3 s later.
	c.request("after", "s-after", 3, callBody(3, "count_slowly"))
	c.response("after", "s-after", 8, 3, "eof")
	c.cancel("s-after", 11, 3)
	// Cancelled at +1 s, answered at +20 s all the same.
	c.request("answered", "s-answered", 4, callBody(4, "count_slowly"))
	c.cancel("s-answered", 5, 4)
	c.response("answered", "s-answered", 24, 4, "result")
	// Never answered: the pair window gives up on it.
	c.request("never", "s-never", 6, callBody(5, "count_slowly"))
	c.cancel("s-never", 16, 5)
	// The same id in another session, answered: not the cancelled call.
	c.request("other", "s-other", 30, callBody(8, "count_slowly"))
	c.response("other", "s-other", 33, 8, "result")

	want := map[string]classify.Outcome{"L-eof": classify.Cancelled, "L-abort": classify.Cancelled, "after": classify.StreamIncomplete,
		"answered": classify.ToolSuccess, "never": classify.Cancelled, "other": classify.ToolSuccess}
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			sink, _ := runFile(t, testConfig(), c.sorted(seed))
			calls := map[string]schema.Exchange{}
			cancels := map[string]schema.Exchange{}
			for _, r := range sink.exchanges {
				switch {
				case r.Method == "notifications/cancelled":
					if _, dup := cancels[r.SessionID]; dup {
						t.Errorf("cancel of %s emitted twice", r.SessionID)
					}
					cancels[r.SessionID] = r
				case want[r.ExchangeID] != "":
					calls[r.ExchangeID] = r
				}
			}
			for id, o := range want {
				r, ok := calls[id]
				if !ok {
					t.Errorf("%s: no record", id)
					continue
				}
				if r.Outcome != o {
					t.Errorf("%s: %s/%s (rule %s), want %s", id, r.Outcome, r.ErrorClass, r.Rule, o)
				}
				if o == classify.Cancelled && (r.ErrorClass != classify.RequestCancelled || r.Layer != classify.LayerInteraction || r.RetryAdvice != classify.AdviceNone || r.OutcomeKnown) {
					t.Errorf("%s: %s %s %s known %v, want REQUEST_CANCELLED in the interaction layer, no advice, outcome unknown", id, r.ErrorClass, r.Layer, r.RetryAdvice, r.OutcomeKnown)
				}
				if id == "other" {
					continue
				}
				cn, ok := cancels[r.SessionID]
				if !ok {
					t.Errorf("%s: no cancel record", id)
					continue
				}
				if cn.ChainID != r.ChainID || cn.ChainID == cn.ExchangeID {
					t.Errorf("%s: cancel in chain %q, its call in %q", id, cn.ChainID, r.ChainID)
				}
			}
		})
	}
}

// TestCancelWaitIsBounded: a cancel waiting for a call that runs on leaves
// the merge set when the correlator gives up on the call (the pair window),
// not at the end of input, and nothing stays behind in the counts.
func TestCancelWaitIsBounded(t *testing.T) {
	c := &cancelTraffic{t0: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	c.background(150)
	for i := range 50 {
		s := fmt.Sprintf("s-%d", i)
		c.request("x-"+s, s, float64(i)/10, callBody(i, "count_slowly"))
		c.cancel(s, 20+float64(i)/10, i)
		// Half of them cancel a request that is not there (already
		// answered long ago, or a client's bug).
		c.cancel(s, 21, 10_000+i)
	}
	cfg := testConfig().Correlator
	cfg.defaults()
	corr := newCorrelator(cfg)
	var out []*group
	var ev schema.Event
	for i, l := range c.sorted(1) {
		ev = schema.Event{}
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatal(err)
		}
		corr.Add(&ev, Position{Stream: "s", Offset: int64(i)})
		corr.Release(false, func(g *group) { out = append(out, g) })
	}
	// Event time is 150 s on: every call expired at 60 s after its
	// request, and its cancel went with it.
	if n := corr.merging.Len(); n > 40 {
		t.Errorf("%d groups still waiting at the end of the traffic", n)
	}
	if len(corr.merging.pending) != 0 || len(corr.merging.cancels) != 0 {
		t.Errorf("pending %d cancels %d keys left", len(corr.merging.pending), len(corr.merging.cancels))
	}
	cancelled := 0
	for _, g := range out {
		rec, _ := g.record()
		if rec.Method == "tools/call" && rec.Outcome == classify.Cancelled {
			cancelled++
		}
	}
	if cancelled != 50 {
		t.Errorf("%d of the 50 unanswered cancelled calls released as CANCELLED", cancelled)
	}
}

// TestClientAbortOneClass: a client that goes away before any status is
// CLIENT_ABORT whether cmd/tap logged it (transport_error client_abort)
// or a gateway's shipper did (Envoy DC, nginx 499: transport_error
// timeout with attrs.aborted_by client), as it is when it leaves after
// the status; an upstream timeout stays TIMEOUT.
func TestClientAbortOneClass(t *testing.T) {
	lines := [][]byte{
		[]byte(`{"v":1,"event_id":"tap","ts":"2026-12-01T09:00:00Z","kind":"exchange","source":"gateway","observer":"tap","server":"s","session_id":"a","http.method":"POST","request_body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}","duration_ms":900,"transport_error":"client_abort","attrs":{"aborted_by":"client"}}`),
		[]byte(`{"v":1,"event_id":"envoy","ts":"2026-12-01T09:00:01Z","kind":"exchange","source":"gateway","observer":"envoy","server":"s","session_id":"b","http.method":"POST","request_body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}","duration_ms":900,"transport_error":"timeout","attrs":{"aborted_by":"client","response_flags":"DC"}}`),
		[]byte(`{"v":1,"event_id":"upstream","ts":"2026-12-01T09:00:02Z","kind":"exchange","source":"gateway","observer":"envoy","server":"s","session_id":"c","http.method":"POST","request_body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}","duration_ms":900,"transport_error":"timeout","attrs":{"response_flags":"UT"}}`),
	}
	sink, _ := runFile(t, testConfig(), lines)
	want := map[string]classify.ErrorClass{"a": classify.ClientAbort, "b": classify.ClientAbort, "c": classify.Timeout}
	if len(sink.exchanges) != 3 {
		t.Fatalf("%d records", len(sink.exchanges))
	}
	for _, r := range sink.exchanges {
		if r.Outcome != classify.TransportError || r.ErrorClass != want[r.SessionID] {
			t.Errorf("session %s: %s/%s, want TRANSPORT_ERROR/%s", r.SessionID, r.Outcome, r.ErrorClass, want[r.SessionID])
		}
	}
}
