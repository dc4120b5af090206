package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// initialize logs a session's initialize naming the client.
func (c *cancelTraffic) initialize(session string, s float64, name string) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":%q,"version":"1.0.0"}}}`, name)
	c.exchange(session, s, 5, body, 200, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"tools","version":"1"}}}`)
}

// cutCall logs a tools/call whose stream the server cut after a progress
// event, 500 ms in.
func (c *cancelTraffic) cutCall(session string, s float64, id int, body string) {
	d := 500.0
	complete := false
	c.add(c.at(s).Add(500*time.Millisecond), schema.Event{Kind: schema.KindExchange, TS: c.at(s), SessionID: session, HTTPMethod: "POST", HTTPStatus: 200,
		RequestBody: body, DurationMS: &d, StreamComplete: &complete, CloseReason: "server_abort",
		ResponseHeaders: classify.HeaderOf(map[string]string{"content-type": "text/event-stream"}),
		ResponseBody:    `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"progressToken":1}}` + "\n\n"})
}

func deleteBody(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"delete_item","arguments":{"id":"item-7"}}}`, id)
}

const deleted = `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"deleted"}]}}`

// TestAcrossSessionsNeedsTheSameInstance: two processes of one agent (the
// same client name and version) call the same tool with the same params.
// The first one's call is cut, and it goes on working in its session; the
// other one's call, from a session it opened meanwhile, is not a re-send
// of the cut call. A third process that loses its session (cut, 404,
// initialize, re-send) is still linked across its two sessions.
func TestAcrossSessionsNeedsTheSameInstance(t *testing.T) {
	c := &cancelTraffic{t0: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	c.background(60)
	// Instance A: its call is cut at 10 s; it keeps using session A.
	c.initialize("A", 0, "agent")
	c.cutCall("A", 10, 1, deleteBody(1))
	for i, s := range []float64{12, 14.5, 20} {
		c.exchange("A", s, 30, callBody(2+i, "lookup"), 200, fmt.Sprintf(deleted, 2+i))
	}
	// Instance B: opens its session at 11 s, the same call at 13 s.
	c.initialize("B", 11, "agent")
	c.exchange("B", 13, 40, deleteBody(1), 200, fmt.Sprintf(deleted, 1))
	// Instance C: cut at 30 s, 404 on its session, a new session, the
	// re-send.
	c.initialize("C1", 25, "agent")
	c.cutCall("C1", 30, 1, deleteBody(1))
	c.exchange("C1", 31, 2, deleteBody(2), 404, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}`)
	c.initialize("C2", 31.5, "agent")
	c.exchange("C2", 32, 40, deleteBody(1), 200, fmt.Sprintf(deleted, 1))

	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			sink, _ := runFile(t, testConfig(), c.sorted(seed))
			calls := map[string][]schema.Exchange{}
			for _, r := range sink.exchanges {
				if r.ToolName == "delete_item" {
					calls[r.SessionID] = append(calls[r.SessionID], r)
				}
			}
			if len(calls["A"]) != 1 || len(calls["B"]) != 1 || len(calls["C1"]) != 2 || len(calls["C2"]) != 1 {
				t.Fatalf("delete_item calls per session: A %d B %d C1 %d C2 %d", len(calls["A"]), len(calls["B"]), len(calls["C1"]), len(calls["C2"]))
			}
			if b := calls["B"][0]; b.Attempt != 1 || b.RetryOf != "" || b.ChainID != b.ExchangeID || b.UnknownSideEffectRetry {
				t.Errorf("B's own call: attempt %d retry_of %q chain %q unknown %v, want a first attempt (A's call %s)",
					b.Attempt, b.RetryOf, b.ChainID, b.UnknownSideEffectRetry, calls["A"][0].ExchangeID)
			}
			cut := calls["C1"][0]
			if cut.HTTPStatus != 200 {
				cut = calls["C1"][1]
			}
			if r := calls["C2"][0]; r.RetryOf == "" || r.ChainID != cut.ChainID || !r.UnknownSideEffectRetry || r.ClientName != "agent" {
				t.Errorf("C's re-send: attempt %d retry_of %q chain %q unknown %v client %q, want in the chain of %s with the unknown side effect",
					r.Attempt, r.RetryOf, r.ChainID, r.UnknownSideEffectRetry, r.ClientName, cut.ExchangeID)
			}
		})
	}
}
