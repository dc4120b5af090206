package mcptest

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// checkUniqueIDs checks that no two events share an event or exchange id.
func checkUniqueIDs(t *testing.T, evs []schema.Event) {
	t.Helper()
	seen := map[string]bool{}
	for _, ev := range evs {
		for _, id := range []string{ev.EventID, ev.ExchangeID} {
			if id == "" || seen[id] {
				t.Errorf("empty or repeated id %q", id)
			}
			seen[id] = true
		}
	}
}

// checkScenario checks what every event must look like, then what each
// step of the scenario must have put on the wire.
func checkScenario(t *testing.T, sc Scenario, evs []schema.Event) {
	t.Helper()
	xs := make([]exchange, len(evs))
	for i, ev := range evs {
		xs[i] = view(ev)
		checkEvent(t, sc, xs[i])
	}
	checkSessions(t, sc, xs)
	for _, st := range sc.Steps {
		checkStep(t, sc, st, inStep(xs, st.Name), xs)
	}
}

func checkEvent(t *testing.T, sc Scenario, x exchange) {
	t.Helper()
	ev := x.ev
	at := x.step + " " + ev.HTTPMethod + " " + x.method + " " + x.tool
	if ev.V != 1 || ev.Kind != schema.KindExchange || ev.Source != schema.SourceGateway || ev.Observer != "mcptest" || ev.Server != "gosdk" {
		t.Errorf("%s: v/kind/source/observer/server = %d/%s/%s/%s/%s", at, ev.V, ev.Kind, ev.Source, ev.Observer, ev.Server)
	}
	if ev.TS.IsZero() || ev.TS.Location() != time.UTC || ev.DurationMS == nil || !strings.HasSuffix(ev.URL, "/mcp") {
		t.Errorf("%s: ts %v, duration %v, url %q", at, ev.TS, ev.DurationMS, ev.URL)
	}
	if ev.BodyTruncated {
		t.Errorf("%s: body_truncated", at)
	}
	if ev.HTTPStatus == 0 || ev.TransportError != "" {
		t.Errorf("%s: status %d, transport_error %q", at, ev.HTTPStatus, ev.TransportError)
	}
	for _, h := range []classify.Header{ev.RequestHeaders, ev.ResponseHeaders} {
		for _, f := range h {
			k := f.Name
			if k != strings.ToLower(k) {
				t.Errorf("%s: header %q not lower-case", at, k)
			}
		}
	}
	if isSSE := x.ctype == "text/event-stream"; isSSE != (ev.StreamComplete != nil) || isSSE != (ev.CloseReason != "") {
		t.Errorf("%s: content type %q with stream.complete %v, close_reason %q", at, x.ctype, ev.StreamComplete, ev.CloseReason)
	}
	if ev.HTTPStatus == 202 && ev.ResponseBody != "" {
		t.Errorf("%s: 202 with body %q", at, ev.ResponseBody)
	}
	wantClient := "mcptest-client" // initialize clientInfo, or the 2026 _meta clientInfo
	if x.method != "initialize" && x.method != "server/discover" && (!sc.Server.Stateless || !strings.Contains(ev.RequestBody, `"_meta"`)) {
		wantClient = "Go-http-client" // the User-Agent
	}
	if ev.ClientName != wantClient {
		t.Errorf("%s: client_name %q, want %q", at, ev.ClientName, wantClient)
	}
}

// checkSessions: a stateful server gives one session id to everything
// after server/discover; a stateless one none at all, and no GET or DELETE.
func checkSessions(t *testing.T, sc Scenario, xs []exchange) {
	t.Helper()
	var methods []string
	for _, x := range xs {
		methods = append(methods, x.ev.HTTPMethod)
		switch {
		case sc.Server.Stateless && x.ev.SessionID != "":
			t.Errorf("%s: stateless server, session id %q", x.step, x.ev.SessionID)
		case !sc.Server.Stateless && x.method != "server/discover" && x.ev.SessionID != xs[len(xs)-1].ev.SessionID:
			t.Errorf("%s %s: session id %q, want %q", x.step, x.method, x.ev.SessionID, xs[len(xs)-1].ev.SessionID)
		}
	}
	hasGET, hasDELETE := strings.Contains(strings.Join(methods, " "), "GET"), methods[len(methods)-1] == "DELETE"
	if hasGET == sc.Server.Stateless || hasDELETE == sc.Server.Stateless {
		t.Errorf("stateless=%v with methods %v", sc.Server.Stateless, methods)
	}
	if !sc.Server.Stateless {
		get := xs[slices.Index(methods, "GET")]
		if get.ev.HTTPStatus != 200 || get.ctype != "text/event-stream" || !strings.HasPrefix(get.ev.ResponseBody, ": ok\n\n") {
			t.Errorf("GET stream: %d %q %q", get.ev.HTTPStatus, get.ctype, get.ev.ResponseBody)
		}
		if del := xs[len(xs)-1].ev; del.HTTPStatus != 204 {
			t.Errorf("DELETE: status %d", del.HTTPStatus)
		}
	}
}

// checkStep checks the exchanges one step put on the wire.
func checkStep(t *testing.T, sc Scenario, st Step, xs, all []exchange) {
	t.Helper()
	calls := filter(xs, func(x exchange) bool { return x.method == string(orOp(st.Op)) && x.tool == st.Tool })
	if len(calls) == 0 {
		t.Errorf("%s: no %s %s exchange", st.Name, orOp(st.Op), st.Tool)
		return
	}
	first, last := calls[0], calls[len(calls)-1]
	okType := "text/event-stream"
	if sc.Server.JSONResponse {
		okType = "application/json"
	}
	expect := func(cond bool, format string, args ...any) {
		t.Helper()
		if !cond {
			t.Errorf(st.Name+": "+format, args...)
		}
	}
	body := last.ev.ResponseBody

	switch st.Name {
	case "unknown tool":
		if sc.Server.Stateless { // 2026-07-28: -32602 is an HTTP 400
			expect(last.ev.HTTPStatus == 400 && last.ctype == "application/json", "status %d %s", last.ev.HTTPStatus, last.ctype)
		} else {
			expect(last.ev.HTTPStatus == 200 && last.ctype == okType, "status %d %s", last.ev.HTTPStatus, last.ctype)
		}
		expect(strings.Contains(body, `"error":{"code":-32602`), "body %q", body)
	case "tool error":
		expect(strings.Contains(body, `"isError":true`), "body %q", body)
	case "invalid arguments":
		expect(strings.Contains(body, `"isError":true`) && strings.Contains(body, `validating \"arguments\"`), "body %q", body)
	case "progress":
		checkProgress(t, sc, st, last, all)
	case "approve":
		checkApprove(t, sc, calls, xs, all)
	case "cut stream":
		expect(last.ev.HTTPStatus == 200 && last.ctype == "text/event-stream", "status %d %s", last.ev.HTTPStatus, last.ctype)
		expect(last.ev.StreamComplete != nil && !*last.ev.StreamComplete && last.ev.CloseReason == "server_abort",
			"stream.complete %v close_reason %q", last.ev.StreamComplete, last.ev.CloseReason)
		expect(strings.Count(body, "event: message") == 1 && strings.Contains(body, "notifications/progress"), "body %q", body)
	case "client gives up":
		expect(last.ev.StreamComplete != nil && !*last.ev.StreamComplete && last.ev.CloseReason == "client_abort",
			"stream.complete %v close_reason %q", last.ev.StreamComplete, last.ev.CloseReason)
		cancelled := filter(xs, func(x exchange) bool { return x.method == "notifications/cancelled" })
		expect(len(cancelled) == 1 && cancelled[0].ev.HTTPStatus == 202, "notifications/cancelled exchanges %d", len(cancelled))
	case "rate limited", "rate limited then resent":
		expect(first.ev.HTTPStatus == 429 && first.ev.ResponseHeaders.Get("retry-after") == "2", "status %d headers %v", first.ev.HTTPStatus, first.ev.ResponseHeaders)
	case "unavailable then resent":
		expect(first.ev.HTTPStatus == 503 && first.ctype == "text/plain", "status %d %s", first.ev.HTTPStatus, first.ctype)
	case "unavailable json then resent":
		expect(first.ev.HTTPStatus == 503 && first.ctype == "application/json" && strings.Contains(first.ev.ResponseBody, `"code":-32603`),
			"status %d %s %q", first.ev.HTTPStatus, first.ctype, first.ev.ResponseBody)
	case "unauthorized":
		expect(last.ev.HTTPStatus == 401 && strings.HasPrefix(last.ev.ResponseHeaders.Get("www-authenticate"), `Bearer resource_metadata="`),
			"status %d headers %v", last.ev.HTTPStatus, last.ev.ResponseHeaders)
	case "malformed json", "malformed event":
		data := strings.TrimSpace(strings.TrimPrefix(body, "event: message\ndata: "))
		expect(last.ev.HTTPStatus == 200 && !json.Valid([]byte(data)), "status %d body %q", last.ev.HTTPStatus, body)
	default:
		expect(last.ev.HTTPStatus == 200 && last.ctype == okType && strings.Contains(body, `"result":`) && !strings.Contains(body, `"isError":true`),
			"status %d %s body %q", last.ev.HTTPStatus, last.ctype, body)
	}
	if st.Resend > 0 {
		// The application re-sent the same call: same params, new id.
		expect(len(calls) == 2 && bytes.Equal(first.params, last.params) && last.ev.HTTPStatus == 200 && strings.Contains(body, `"result":`),
			"%d attempts, params %s then %s, last status %d", len(calls), first.params, last.params, last.ev.HTTPStatus)
	}
}

// checkProgress: notifications travel on the call's SSE stream, on the GET
// stream of a stateful JSON-mode server, and nowhere on a stateless one.
func checkProgress(t *testing.T, sc Scenario, st Step, call exchange, all []exchange) {
	t.Helper()
	body := call.ev.ResponseBody
	switch {
	case !sc.Server.JSONResponse:
		p, r := strings.Index(body, "notifications/progress"), strings.Index(body, `"result":`)
		if p < 0 || r < p || strings.Count(body, "notifications/progress") != 3 {
			t.Errorf("%s: SSE body without progress before the result: %q", st.Name, body)
		}
		if call.ev.StreamComplete == nil || !*call.ev.StreamComplete || call.ev.CloseReason != "eof" {
			t.Errorf("%s: stream.complete %v close_reason %q", st.Name, call.ev.StreamComplete, call.ev.CloseReason)
		}
	case sc.Server.Stateless:
		if strings.Contains(body, "notifications/progress") {
			t.Errorf("%s: stateless JSON body carries progress: %q", st.Name, body)
		}
	default:
		if strings.Contains(body, "notifications/progress") || !strings.Contains(getStream(all).ev.ResponseBody, "notifications/progress") {
			t.Errorf("%s: progress not on the GET stream; call body %q", st.Name, body)
		}
	}
}

// checkApprove: a 2026-07-28 client sees input_required and re-sends with
// inputResponses; an older one answers an elicitation/create request with
// a POSTed JSON-RPC response (202) inside the same call.
func checkApprove(t *testing.T, sc Scenario, calls, xs, all []exchange) {
	t.Helper()
	if sc.Server.Stateless {
		if len(calls) != 2 {
			t.Errorf("approve: %d tools/call exchanges, want 2", len(calls))
			return
		}
		ask, answer := calls[0].ev, calls[1].ev
		if !strings.Contains(ask.ResponseBody, `"resultType":"input_required"`) || strings.Contains(ask.RequestBody, "inputResponses") {
			t.Errorf("approve round 1: request %q response %q", ask.RequestBody, ask.ResponseBody)
		}
		if !strings.Contains(answer.RequestBody, `"inputResponses":{"confirm":{"action":"accept"`) ||
			!strings.Contains(answer.RequestBody, `"requestState":"approve:invoice-7"`) ||
			!strings.Contains(answer.ResponseBody, `"resultType":"complete"`) {
			t.Errorf("approve round 2: request %q response %q", answer.RequestBody, answer.ResponseBody)
		}
		return
	}
	if len(calls) != 1 || strings.Contains(calls[0].ev.ResponseBody, "input_required") {
		t.Errorf("approve: %d tools/call exchanges, body %q", len(calls), calls[0].ev.ResponseBody)
	}
	carrier := calls[0] // the elicitation request travels on the call's stream...
	if sc.Server.JSONResponse {
		carrier = getStream(all) // ...or on the GET stream in JSON mode
	}
	if !strings.Contains(carrier.ev.ResponseBody, `"method":"elicitation/create"`) {
		t.Errorf("approve: no elicitation/create in %s body %q", carrier.ev.HTTPMethod, carrier.ev.ResponseBody)
	}
	replies := filter(xs, func(x exchange) bool { return x.method == "response" })
	if len(replies) != 1 || replies[0].ev.HTTPStatus != 202 || !strings.Contains(replies[0].ev.RequestBody, `"action":"accept"`) {
		t.Errorf("approve: elicitation replies %+v", replies)
	}
}

// getStream is the standalone GET stream of a stateful scenario.
func getStream(all []exchange) exchange {
	for _, x := range all {
		if x.ev.HTTPMethod == "GET" {
			return x
		}
	}
	return exchange{}
}

func orOp(op Op) Op {
	if op == "" {
		return OpCallTool
	}
	return op
}

func inStep(xs []exchange, step string) []exchange {
	return filter(xs, func(x exchange) bool { return x.step == step })
}

func filter(xs []exchange, keep func(exchange) bool) []exchange {
	var out []exchange
	for _, x := range xs {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}
