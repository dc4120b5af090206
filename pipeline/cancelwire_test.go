package pipeline

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/mcptest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/tap"
)

// TestGoSDKCancelsJoinTheirCalls runs the Go SDK's recording alone: its
// cancel on the 2025 wire names its session, the one on the 2026-07-28
// wire neither a session nor a client (only requestId and the User-Agent
// "Go-http-client/1.1"), and both join the chain of the call they cancel,
// the second under the call's client name instead of the User-Agent's.
func TestGoSDKCancelsJoinTheirCalls(t *testing.T) {
	run := goSDKAlone(t)
	checkCancels(t, run)
	for _, ev := range run.evs {
		if r := run.recs[ev.ExchangeID]; r.Method == "notifications/cancelled" && r.ClientName != "mcptest-client" {
			t.Errorf("cancel %s (session %q) from client %q %q, want the call's mcptest-client", r.ExchangeID, r.SessionID, r.ClientName, r.ClientVersion)
		}
	}
}

// goClient is one Go SDK client's copy of the recorded 2026-07-28 SSE
// scenario in the background traffic of TestNamelessCancelAmongOthers.
type goClient struct {
	name  string        // its clientInfo name
	shift time.Duration // how much later than the recording it ran
	// completes replaces the call it gave up on ("client gives up") by
	// one that got its answer, and drops its cancel.
	completes bool
	// runsOn is how much longer than recorded the call it gave up on
	// went on after its cancel (a server that notices late).
	runsOn time.Duration
	// noAnswer leaves that call without a response: the gateway logged
	// its request only.
	noAnswer bool
	// cutThenCancel has the server cut that call's stream 5ms in, and
	// the client, still waiting, cancel it this much later.
	cutThenCancel time.Duration
	// call is what that call must come out as; zero: CANCELLED.
	call classify.Outcome
}

// TestNamelessCancelAmongOthers puts the Go SDK's session-less client
// among other Go SDK clients of the same server behind the same gateway:
// the same User-Agent, request ids that restart at 1 for each, one of
// them with the recorded client's own name, calls that overlap in time,
// jittered starts, logged as whole records and as split records shipped
// late and redelivered (mcptest.TwoViews, the gateway's lines). Each
// cancel must join the call it cancels, or no call when two clients' calls
// that gave up were both running as it was sent (the negative control):
// never another client's call that reuses the id.
func TestNamelessCancelAmongOthers(t *testing.T) {
	cases := []struct {
		name    string
		clients []goClient
		// want maps each client's cancel to the client whose call it
		// joins, "" for none.
		want map[string]string
	}{
		{
			name: "later clients and an overlapping one that got its answer",
			clients: []goClient{
				{name: "mcptest-client"},
				{name: "agent-b", shift: 2500 * time.Millisecond},
				{name: "mcptest-client", shift: 5 * time.Second},
				{name: "agent-c", shift: 7500 * time.Millisecond},
				{name: "agent-d", shift: -40 * time.Millisecond, completes: true, call: classify.ToolSuccess},
			},
		},
		{
			name: "calls that ran on long after their cancels",
			clients: []goClient{
				{name: "mcptest-client", runsOn: 20 * time.Second},
				// Traffic while the first call runs on moves event time
				// past its cancel's merge windows.
				{name: "agent-p", shift: 10 * time.Second, completes: true, call: classify.ToolSuccess},
				{name: "agent-g", shift: 25 * time.Second},
				{name: "agent-h", shift: 30 * time.Second, runsOn: 10 * time.Second},
			},
		},
		{
			// The traffic goes on past the pair window, so the
			// unanswered request expires as NO_RESPONSE, which its
			// cancel explains.
			name: "a call that never got an answer",
			clients: []goClient{
				{name: "mcptest-client", noAnswer: true},
				{name: "agent-i", shift: 70 * time.Second},
			},
		},
		{
			name: "two unanswered calls, the second while the first ran",
			clients: []goClient{
				{name: "mcptest-client", noAnswer: true},
				{name: "agent-j", shift: 80 * time.Millisecond, noAnswer: true, call: classify.NoResponse},
				{name: "agent-k", shift: 70 * time.Second},
			},
			want: map[string]string{"mcptest-client": "mcptest-client", "agent-j": ""},
		},
		{
			name: "two unanswered calls at once",
			clients: []goClient{
				{name: "mcptest-client", noAnswer: true, call: classify.NoResponse},
				{name: "agent-l", shift: 100 * time.Microsecond, noAnswer: true, call: classify.NoResponse},
				{name: "agent-m", shift: 70 * time.Second},
			},
			want: map[string]string{"mcptest-client": "", "agent-l": ""},
		},
		{
			// The cancel comes at the client's own timeout, long after
			// the cut the gateway logged as the call's end; the cut stays
			// against the server.
			name: "a call the server cut, cancelled at the client's timeout",
			clients: []goClient{
				{name: "mcptest-client", cutThenCancel: 5 * time.Second, call: classify.StreamIncomplete},
				{name: "agent-n", shift: 70 * time.Second},
			},
		},
		{
			name: "two cut calls, both cancelled at their clients' timeouts",
			clients: []goClient{
				{name: "mcptest-client", cutThenCancel: 5 * time.Second, call: classify.StreamIncomplete},
				{name: "agent-o", shift: 3 * time.Second, cutThenCancel: 5 * time.Second, call: classify.StreamIncomplete},
			},
			want: map[string]string{"mcptest-client": "", "agent-o": ""},
		},
		{
			name: "another client gave up while the first was running",
			clients: []goClient{
				{name: "mcptest-client"},
				{name: "agent-e", shift: 80 * time.Millisecond},
			},
			want: map[string]string{"mcptest-client": "mcptest-client", "agent-e": ""},
		},
		{
			name: "two clients gave up at once",
			clients: []goClient{
				{name: "mcptest-client"},
				{name: "agent-f", shift: 100 * time.Microsecond},
			},
			want: map[string]string{"mcptest-client": "", "agent-f": ""},
		},
	}
	evs, err := mcptest.ReadEvents("../testdata/real/gosdk.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	var modern []schema.Event
	for _, ev := range evs {
		if mcptest.Attr(ev, "scenario") == "modern-sse" {
			modern = append(modern, ev)
		}
	}
	for _, tc := range cases {
		for seed := uint64(1); seed <= 3; seed++ {
			rng := rand.New(rand.NewPCG(seed, 7))
			var all []schema.Event
			owner := map[string]string{} // exchange id -> client
			for i, c := range tc.clients {
				// Up to 5ms of jitter keeps every overlap the case names.
				jitter := time.Duration(rng.Int64N(int64(5 * time.Millisecond)))
				if c.shift == 0 && i == 0 {
					jitter = 0
				}
				for _, ev := range goClientCopy(t, modern, i, c, c.shift+jitter) {
					owner[ev.ExchangeID] = c.name + fmt.Sprint(i)
					all = append(all, ev)
				}
			}
			slices.SortStableFunc(all, func(a, b schema.Event) int { return a.TS.Compare(b.TS) })
			for _, shape := range []string{"whole", "split"} {
				t.Run(fmt.Sprintf("%s/%s/seed%d", tc.name, shape, seed), func(t *testing.T) {
					lines, poison := gatewayLines(t, all, shape, seed)
					sink, _ := runFile(t, testConfig(), lines)
					if len(sink.quar) != poison {
						t.Errorf("%d lines quarantined, want %d", len(sink.quar), poison)
					}
					checkNamelessCancels(t, tc.clients, tc.want, all, owner, sink)
				})
			}
		}
	}
}

// goClientCopy is client c's (the i-th) run of the recorded scenario:
// fresh event and exchange ids, its own clientInfo name, times moved by
// shift.
func goClientCopy(t *testing.T, modern []schema.Event, i int, c goClient, shift time.Duration) []schema.Event {
	t.Helper()
	var answered schema.Event // the progress call, which got its answer
	for _, ev := range modern {
		if mcptest.Attr(ev, "step") == "progress" {
			answered = ev
		}
	}
	var out []schema.Event
	for _, ev := range modern {
		step := mcptest.Attr(ev, "step")
		if c.completes && step == "client gives up" {
			if strings.Contains(ev.RequestBody, "notifications/cancelled") {
				continue
			}
			// The same call, answered: the progress call's exchange with
			// this call's id.
			ts, eid, xid, attrs := ev.TS, ev.EventID, ev.ExchangeID, ev.Attrs
			ev = answered
			ev.TS, ev.EventID, ev.ExchangeID, ev.Attrs = ts, eid, xid, attrs
			ev.RequestBody = strings.Replace(ev.RequestBody, `"id":8,`, `"id":12,`, 1)
			ev.ResponseBody = strings.ReplaceAll(ev.ResponseBody, `"id":8,`, `"id":12,`)
		}
		if c.runsOn > 0 && step == "client gives up" && ev.DurationMS != nil && strings.Contains(ev.RequestBody, `"tools/call"`) {
			d := *ev.DurationMS + float64(c.runsOn)/float64(time.Millisecond)
			ev.DurationMS = &d
		}
		if c.noAnswer && step == "client gives up" && strings.Contains(ev.RequestBody, `"tools/call"`) {
			ev.Kind, ev.HTTPStatus, ev.ResponseHeaders, ev.ResponseBody = schema.KindRequest, 0, nil, ""
			ev.DurationMS, ev.StreamComplete, ev.CloseReason = nil, nil, ""
		}
		if c.cutThenCancel > 0 && step == "client gives up" {
			if strings.Contains(ev.RequestBody, `"tools/call"`) {
				d := 5.0
				ev.DurationMS, ev.CloseReason = &d, "server_abort"
			} else {
				ev.TS = ev.TS.Add(c.cutThenCancel)
			}
		}
		ev.EventID = fmt.Sprintf("c%d-%s", i, ev.EventID)
		ev.ExchangeID = fmt.Sprintf("c%d-%s", i, ev.ExchangeID)
		ev.TS = ev.TS.Add(shift)
		if ev.ClientName == "mcptest-client" {
			ev.ClientName = c.name
		}
		ev.RequestBody = strings.ReplaceAll(ev.RequestBody, `"name":"mcptest-client"`, fmt.Sprintf("%q:%q", "name", c.name))
		if ev.RequestHeaders.Get("user-agent") != "Go-http-client/1.1" {
			t.Fatalf("recorded %s has User-Agent %q", ev.ExchangeID, ev.RequestHeaders.Get("user-agent"))
		}
		out = append(out, ev)
	}
	return out
}

// gatewayLines logs evs as the gateway ships them: whole exchange records
// in time order with a few of them twice, or split records shipped late
// and redelivered with a poison line (TwoViews without the client's
// lines). It returns the lines and how many are poison.
func gatewayLines(t *testing.T, evs []schema.Event, shape string, seed uint64) ([][]byte, int) {
	t.Helper()
	if shape == "split" {
		lines, _ := mcptest.TwoViews(evs, mcptest.ViewOptions{Seed: seed, Redeliver: 0.1})
		// A request logged alone has no response half to ship.
		var noResponse [][]byte
		for _, ev := range evs {
			if ev.Kind == schema.KindRequest {
				noResponse = append(noResponse, []byte(`"event_id":"`+ev.EventID+`-r"`))
			}
		}
		return slices.DeleteFunc(lines, func(l []byte) bool {
			return bytes.Contains(l, []byte(`"source":"client"`)) || slices.ContainsFunc(noResponse, func(id []byte) bool { return bytes.Contains(l, id) })
		}), 1
	}
	var lines [][]byte
	for i, ev := range evs {
		l, err := tap.MarshalLine(ev)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
		if uint64(i)%7 == seed {
			lines = append(lines, l) // redelivered
		}
	}
	return lines, 0
}

func checkNamelessCancels(t *testing.T, clients []goClient, want map[string]string, evs []schema.Event, owner map[string]string, sink *memSink) {
	t.Helper()
	recs := map[string]schema.Exchange{}
	for _, r := range sink.exchanges {
		if _, dup := recs[r.ExchangeID]; dup {
			t.Errorf("exchange %s emitted twice", r.ExchangeID)
		}
		recs[r.ExchangeID] = r
	}
	if len(recs) != len(evs) {
		t.Fatalf("%d records from %d exchanges", len(recs), len(evs))
	}
	// The call each client gave up on (or got answered), by client.
	call := map[string]schema.Exchange{}
	for _, ev := range evs {
		if r := recs[ev.ExchangeID]; r.Method == "tools/call" && mcptest.Attr(ev, "step") == "client gives up" {
			call[owner[ev.ExchangeID]] = r
		}
	}
	n := 0
	for _, ev := range evs {
		r := recs[ev.ExchangeID]
		if r.Method != "notifications/cancelled" {
			continue
		}
		n++
		from := owner[ev.ExchangeID]
		name := strings.TrimRight(from, "0123456789")
		to := from // by default a cancel joins its own client's call
		if w, ok := want[name]; ok {
			to = ""
			if w != "" {
				to = w + from[len(name):]
			}
		}
		if to == "" {
			if r.ChainID != r.ExchangeID || r.ClientName != "Go-http-client" {
				t.Errorf("%s's cancel in chain %q as client %q; two calls fit, want its own chain under the User-Agent", from, r.ChainID, r.ClientName)
			}
			continue
		}
		c := call[to]
		if r.ChainID != c.ChainID || r.ChainID == r.ExchangeID || r.ClientName != c.ClientName {
			var chains []string
			for who, x := range call {
				chains = append(chains, who+"="+x.ChainID)
			}
			t.Errorf("%s's cancel in chain %q as client %q, want %s's call's %q as %q (calls: %s)", from, r.ChainID, r.ClientName, to, c.ChainID, c.ClientName, strings.Join(chains, " "))
		}
	}
	wantN := 0
	for _, c := range clients {
		if !c.completes {
			wantN++
		}
	}
	if n != wantN {
		t.Errorf("%d cancels, want %d", n, wantN)
	}
	for i, c := range clients {
		want := c.call
		if want == "" {
			want = classify.Cancelled
		}
		if r := call[c.name+fmt.Sprint(i)]; r.Outcome != want {
			t.Errorf("%s's call %s %s/%s (rule %s), want %s", c.name, r.ExchangeID, r.Outcome, r.ErrorClass, r.Rule, want)
		}
	}
}

// TestNamelessCancelWaitsBounded sends a cancel that names no client
// while other clients with the same User-Agent keep calling the server
// with the id it names (each answered, one every 500ms for 200 s, logged
// as split records): requests with its transport key never stop waiting
// in the correlator, yet the cancel comes out once the pair window has
// passed it, not held (with its source position) until the input ends.
func TestNamelessCancelWaitsBounded(t *testing.T) {
	evs, err := mcptest.ReadEvents("../testdata/real/gosdk.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	var lookup, cancel schema.Event
	for _, ev := range evs {
		switch sc, step := mcptest.Attr(ev, "scenario"), mcptest.Attr(ev, "step"); {
		case sc == "modern-sse" && step == "lookup":
			lookup = ev
		case sc == "modern-sse" && strings.Contains(ev.RequestBody, "notifications/cancelled"):
			cancel = ev
		}
	}
	if lookup.ExchangeID == "" || cancel.ExchangeID == "" {
		t.Fatal("recording lacks the modern lookup or cancel")
	}
	start := cancel.TS.Add(-250 * time.Millisecond)
	all := []schema.Event{cancel}
	for k := range 400 {
		ev := lookup
		ev.EventID, ev.ExchangeID = fmt.Sprintf("bg%d-%s", k, ev.EventID), fmt.Sprintf("bg%d-%s", k, ev.ExchangeID)
		ev.TS = start.Add(time.Duration(k) * 500 * time.Millisecond)
		d := 1000.0
		ev.DurationMS = &d
		ev.RequestBody = strings.Replace(ev.RequestBody, `"id":3,`, `"id":12,`, 1)
		ev.ResponseBody = strings.ReplaceAll(ev.ResponseBody, `"id":3,`, `"id":12,`)
		ev.RequestBody = strings.ReplaceAll(ev.RequestBody, `"name":"mcptest-client"`, fmt.Sprintf(`"name":"agent-%d"`, k))
		all = append(all, ev)
	}
	slices.SortStableFunc(all, func(a, b schema.Event) int { return a.TS.Compare(b.TS) })
	cfg := testConfig()
	lines, _ := gatewayLines(t, all, "split", 1)
	sink, _ := runFile(t, cfg, lines)
	at := slices.IndexFunc(sink.exchanges, func(r schema.Exchange) bool { return r.ExchangeID == cancel.ExchangeID })
	if at < 0 {
		t.Fatal("the cancel never came out")
	}
	r := sink.exchanges[at]
	if r.ChainID != r.ExchangeID {
		t.Errorf("the cancel joined chain %q; no call it names gave up", r.ChainID)
	}
	bound := cancel.TS.Add(cfg.Correlator.PairWindow + 10*time.Second)
	for _, x := range sink.exchanges[:at] {
		if x.TS.After(bound) {
			t.Fatalf("the cancel came out at %d of %d, after a call sent %s after it", at, len(sink.exchanges), x.TS.Sub(cancel.TS))
		}
	}
}
