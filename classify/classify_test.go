package classify

import (
	"strings"
	"testing"
	"time"
)

const (
	callReq   = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"synthetic","arguments":{}}}`
	listReq   = `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`
	noticeReq = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	good      = `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"ok"}],"isError":false}}`
)

var jsonCT = Header{{"content-type", "application/json"}}
var sseCT = Header{{"content-type", "text/event-stream"}}

// want is the part of a Result a case asserts; empty fields are not checked.
type want struct {
	outcome Outcome
	class   ErrorClass
	code    *int64
	advice  Advice
	risk    Risk
	known   *bool
	message string // substring of error_message
}

func code(n int64) *int64 { return &n }
func yes() *bool          { b := true; return &b }
func no() *bool           { b := false; return &b }

func post(req string, status int, h Header, body string) Exchange {
	return Exchange{HTTPMethod: "POST", RequestBody: []byte(req), Status: status, ResponseHeaders: h, ResponseBody: []byte(body)}
}

func check(t *testing.T, name string, ex Exchange, w want) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Helper()
		r := Classify(&ex)
		if r.Outcome != w.outcome {
			t.Fatalf("outcome = %s (class %q, rule %s), want %s", r.Outcome, r.ErrorClass, r.Rule, w.outcome)
		}
		if r.Layer != w.outcome.Layer() {
			t.Errorf("layer = %s, want %s", r.Layer, w.outcome.Layer())
		}
		if r.ErrorClass != w.class {
			t.Errorf("error_class = %q, want %q (rule %s)", r.ErrorClass, w.class, r.Rule)
		}
		if w.code != nil && (!r.JSONRPCCode.Valid || r.JSONRPCCode.V != *w.code) {
			t.Errorf("jsonrpc_code = %+v, want %d", r.JSONRPCCode, *w.code)
		}
		if w.advice != "" && r.RetryAdvice != w.advice {
			t.Errorf("retry_advice = %s, want %s", r.RetryAdvice, w.advice)
		}
		if w.risk != "" && r.SideEffectRisk != w.risk {
			t.Errorf("side_effect_risk = %s, want %s", r.SideEffectRisk, w.risk)
		}
		if w.known != nil && r.OutcomeKnown != *w.known {
			t.Errorf("outcome_known = %v, want %v", r.OutcomeKnown, *w.known)
		}
		if !strings.Contains(r.ErrorMessage, w.message) {
			t.Errorf("error_message = %q, want it to contain %q", r.ErrorMessage, w.message)
		}
	})
}

// The eleven synthetic cases of the source article, as written there.
func TestArticleCases(t *testing.T) {
	rpcError := `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"synthetic invalid params"}}`
	toolError := `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"failed"}],"isError":true}}`
	check(t, "baseline", post(callReq, 200, jsonCT, good), want{outcome: ToolSuccess, advice: AdviceNone, risk: RiskPossible, known: yes()})
	check(t, "503 first", post(callReq, 503, jsonCT, `{"note":"synthetic outage"}`), want{outcome: HTTPError, class: ServerError, advice: AdviceRetryIfSafe, risk: RiskUnknown, known: no()})
	check(t, "then 200", post(callReq, 200, jsonCT, good), want{outcome: ToolSuccess})
	check(t, "jsonrpc error", post(callReq, 200, jsonCT, rpcError), want{outcome: JSONRPCError, class: InvalidParams, code: code(-32602), advice: AdviceFixRequest, risk: RiskNone})
	check(t, "tool isError", post(callReq, 200, jsonCT, toolError), want{outcome: ToolError, class: ToolFailed, advice: AdviceDoNotRetry, risk: RiskPossible, message: "failed"})
	check(t, "500 with success body", post(callReq, 500, jsonCT, good), want{outcome: HTTPError, class: ServerError})
	check(t, "malformed json", post(callReq, 200, jsonCT, `{unclosed`), want{outcome: MalformedJSON, advice: AdviceDoNotRetry, risk: RiskUnknown})
	check(t, "result and error", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[],"isError":false},"error":{"code":-32602,"message":"x"}}`), want{outcome: InvalidEnvelope, class: ResultAndError})
	check(t, "wrong id", post(callReq, 200, jsonCT, strings.Replace(good, `"id":1`, `"id":99`, 1)), want{outcome: InvalidEnvelope, class: IDMismatch})
	check(t, "input_required", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"approval":{"method":"elicitation/create","params":{"mode":"form","message":"synthetic input"}}}}}`), want{outcome: InputRequired, advice: AdviceContinueInput, risk: RiskNone})
	check(t, "legacy without resultType", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"legacy ok"}],"isError":false}}`), want{outcome: ToolSuccess})
	check(t, "content not an array", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":"not-an-array","isError":false}}`), want{outcome: InvalidToolResult, class: ContentNotArray})
}

// The examples of the provider's error page, as written there.
func TestProviderErrorPage(t *testing.T) {
	check(t, "tool's own error", post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"check_availability","arguments":{"domains":["!!!"]}}}`, 200, jsonCT,
		`{"result":{"content":[{"type":"text","text":"Invalid domain format"}],"isError":true},"jsonrpc":"2.0","id":4}`),
		want{outcome: ToolError, class: ToolFailed, message: "Invalid domain format"})
	check(t, "input validation", post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"compare_prices","arguments":{"domain":"kettlory"}}}`, 200, jsonCT,
		`{"result":{"content":[{"type":"text","text":"MCP error -32602: Input validation error: Invalid arguments for tool compare_prices: A full domain name is required at domain"}],"isError":true},"jsonrpc":"2.0","id":1}`),
		want{outcome: ToolError, class: ToolInputValidation, advice: AdviceFixRequest, risk: RiskNone})
	check(t, "too big", post(callReq, 200, jsonCT, `{"result":{"content":[{"type":"text","text":"MCP error -32602: Input validation error: Invalid arguments for tool check_availability: Too big: expected array to have <=20 items at domains"}],"isError":true},"jsonrpc":"2.0","id":1}`),
		want{outcome: ToolError, class: ToolInputValidation})
	check(t, "tool not found", post(callReq, 200, jsonCT, `{"result":{"content":[{"type":"text","text":"MCP error -32602: Tool check_availabilty not found"}],"isError":true},"jsonrpc":"2.0","id":1}`),
		want{outcome: ToolError, class: UnknownTool, advice: AdviceFixRequest})
	check(t, "other message", post(callReq, 200, jsonCT, `{"result":{"content":[{"type":"text","text":"WHOIS server did not answer"}],"isError":true},"jsonrpc":"2.0","id":1}`),
		want{outcome: ToolError, class: ToolFailed, advice: AdviceDoNotRetry})
	h401 := Header{{"content-type", "application/json"}, {"www-authenticate", `Bearer resource_metadata="https://example.com/.well-known/oauth-protected-resource"`}}
	check(t, "401", post(callReq, 401, h401, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Unauthorized"},"id":null}`),
		want{outcome: HTTPError, class: AuthRequired, code: code(-32000), advice: AdviceReauthenticate, risk: RiskNone, known: yes()})
	// A server without a GET stream (the TypeScript v2 SDK's stateless
	// default) answers GET with 405, as the spec says: not a failure. A
	// POST answered 405 is one.
	check(t, "405 GET", Exchange{HTTPMethod: "GET", Status: 405, ResponseHeaders: jsonCT, ResponseBody: []byte(`{"jsonrpc":"2.0","error":{"code":-32000,"message":"Method not allowed."},"id":null}`)},
		want{outcome: Success, advice: AdviceNone, risk: RiskNone})
	check(t, "405 DELETE", Exchange{HTTPMethod: "DELETE", Status: 405, ResponseHeaders: jsonCT, ResponseBody: []byte(`{"jsonrpc":"2.0","error":{"code":-32000,"message":"Method not allowed."},"id":null}`)},
		want{outcome: Success, advice: AdviceNone, risk: RiskNone})
	check(t, "405 GET status only", Exchange{HTTPMethod: "GET", Status: 405, Evidence: EvidenceStatusOnly},
		want{outcome: Success, advice: AdviceNone, risk: RiskNone})
	check(t, "405 POST", post(callReq, 405, jsonCT, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Method not allowed."},"id":null}`),
		want{outcome: HTTPError, class: MethodNotAllowed, code: code(-32000)})
	h429 := Header{{"content-type", "application/json"}, {"retry-after", "30"}}
	check(t, "429", post(callReq, 429, h429, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Quota exceeded"},"id":null}`),
		want{outcome: HTTPError, class: RateLimited, advice: AdviceRetryAfter})
	check(t, "406", post(callReq, 406, jsonCT, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Not Acceptable: Client must accept both application/json and text/event-stream"},"id":null}`),
		want{outcome: HTTPError, class: NotAcceptable, advice: AdviceFixRequest})
	check(t, "parse error", post(`{"jsonrpc":"2.0","id":1,"method":`, 400, jsonCT, `{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}`),
		want{outcome: HTTPError, class: ParseError, code: code(-32700)})
	check(t, "batch rejected", post(`[`+callReq+`,`+listReq+`]`, 400, jsonCT, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Batch requests are not supported"},"id":null}`),
		want{outcome: HTTPError, class: BatchRejected, code: code(-32600), advice: AdviceFixRequest})
}

func TestRetryAfter(t *testing.T) {
	at := time.Date(2026, 10, 18, 12, 0, 0, 0, time.UTC)
	f := func(h Header, at time.Time, want NullInt) {
		t.Helper()
		if got := retryAfter(h, at); got != want {
			t.Errorf("retryAfter(%v) = %+v, want %+v", h, got, want)
		}
	}
	f(Header{{"retry-after", "120"}}, at, Int(120))
	f(Header{{"retry-after", " 0 "}}, at, Int(0))
	f(Header{{"retry-after", "-5"}}, at, NullInt{})
	f(Header{{"retry-after", "soon"}}, at, NullInt{})
	f(Header{{"retry-after", "Sun, 18 Oct 2026 12:01:30 GMT"}}, at, Int(90))
	f(Header{{"retry-after", "Sun, 18 Oct 2026 11:00:00 GMT"}}, at, Int(0))
	f(Header{{"retry-after", "Sun, 18 Oct 2026 12:00:10 GMT"}, {"date", "Sun, 18 Oct 2026 12:00:00 GMT"}}, time.Time{}, Int(10))
	f(Header{{"retry-after", "Sun, 18 Oct 2026 12:00:10 GMT"}}, time.Time{}, NullInt{})
	f(nil, at, NullInt{})

	r := Classify(&Exchange{HTTPMethod: "POST", RequestBody: []byte(callReq), Status: 429, ResponseHeaders: Header{{"retry-after", "Sun, 18 Oct 2026 12:00:05 GMT"}}, ResponseTime: at})
	if r.RetryAfterS != Int(5) || r.RetryAdvice != AdviceRetryAfter {
		t.Errorf("429 with date: retry_after_s %+v advice %s", r.RetryAfterS, r.RetryAdvice)
	}
	r = Classify(&Exchange{HTTPMethod: "POST", RequestBody: []byte(callReq), Status: 429})
	if r.RetryAfterS.Valid || r.RetryAdvice != AdviceRetryAfter {
		t.Errorf("429 without Retry-After: retry_after_s %+v advice %s", r.RetryAfterS, r.RetryAdvice)
	}
}

// orphan is a response whose request no observer logged.
func orphan(status int, h Header, body string) Exchange {
	return Exchange{HTTPMethod: "POST", RequestUnseen: true, Status: status, ResponseHeaders: h, ResponseBody: []byte(body)}
}

// A response without its request is judged by what it holds: a tool
// result by isError or content, the first answer on a stream as final.
// With the request seen, the same bodies keep their strict rules.
func TestRequestUnseen(t *testing.T) {
	sse := func(data ...string) string {
		var b strings.Builder
		for _, d := range data {
			b.WriteString("event: message\ndata: " + d + "\n\n")
		}
		return b.String()
	}
	progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`
	toolError := `{"jsonrpc":"2.0","id":41,"result":{"content":[{"type":"text","text":"quota exceeded"}],"isError":true}}`
	check(t, "json tool success", orphan(200, jsonCT, strings.Replace(good, `"id":1`, `"id":41`, 1)), want{outcome: ToolSuccess})
	check(t, "json tool error", orphan(200, jsonCT, toolError), want{outcome: ToolError, class: ToolFailed, message: "quota"})
	check(t, "json isError alone", orphan(200, jsonCT, `{"jsonrpc":"2.0","id":"a","result":{"isError":false}}`), want{outcome: InvalidToolResult, class: ContentNotArray})
	check(t, "json other result", orphan(200, jsonCT, `{"jsonrpc":"2.0","id":41,"result":{"tools":[]}}`), want{outcome: Success})
	check(t, "json rpc error", orphan(200, jsonCT, `{"jsonrpc":"2.0","id":41,"error":{"code":-32601,"message":"no such method"}}`), want{outcome: JSONRPCError, class: MethodNotFound})
	check(t, "json without id", orphan(200, jsonCT, `{"jsonrpc":"2.0","result":{"content":[]}}`), want{outcome: InvalidEnvelope, class: MissingID})
	check(t, "sse tool success", orphan(200, sseCT, sse(progress, strings.Replace(good, `"id":1`, `"id":41`, 1))), want{outcome: ToolSuccess})
	check(t, "sse tool error", orphan(200, sseCT, sse(progress, toolError)), want{outcome: ToolError, class: ToolFailed})
	check(t, "sse progress only", orphan(200, sseCT, sse(progress)), want{outcome: StreamIncomplete, class: StreamEndedEarly})
	check(t, "sse other result", orphan(200, sseCT, sse(`{"jsonrpc":"2.0","id":3,"result":{}}`)), want{outcome: Success})
	check(t, "accepted", orphan(202, nil, ""), want{outcome: Accepted})
	check(t, "accepted with body", orphan(202, jsonCT, good), want{outcome: UnexpectedResponse, class: BodyForNotice})

	seen := func(ex Exchange) Exchange { ex.RequestUnseen = false; return ex }
	check(t, "seen empty request, tool error", seen(orphan(200, jsonCT, toolError)), want{outcome: Success})
	check(t, "seen empty request, sse", seen(orphan(200, sseCT, sse(toolError))), want{outcome: InvalidEnvelope, class: IDMismatch})
	check(t, "seen empty request, 202", seen(orphan(202, nil, "")), want{outcome: UnexpectedResponse, class: AcceptedRequest})
	// A request that was seen keeps its id rule even when flagged.
	flagged := post(callReq, 200, sseCT, sse(toolError))
	flagged.RequestUnseen = true
	check(t, "request body present", flagged, want{outcome: InvalidEnvelope, class: IDMismatch})
	listed := post(listReq, 200, jsonCT, `{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":true}}`)
	listed.RequestUnseen = true
	check(t, "request body present, not a call", listed, want{outcome: Success})
}
