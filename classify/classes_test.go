package classify

import (
	"strings"
	"testing"
)

func errBody(code int, msg string) string {
	return `{"jsonrpc":"2.0","id":1,"error":{"code":` + itoa(code) + `,"message":"` + msg + `"}}`
}

func itoa(n int) string {
	neg := n < 0
	if neg {
		n = -n
	}
	b := []byte{}
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			break
		}
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

func toolErr(text string) string {
	return `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + text + `"}],"isError":true}}`
}

type classCase struct {
	name string
	ex   Exchange
	want want
}

// classCases has at least one case for every outcome and every error class;
// TestEveryOutcomeAndClass fails when one is missing.
func classCases() []classCase {
	withSession := func(ex Exchange) Exchange {
		ex.RequestHeaders = Header{{"mcp-session-id", "abc"}}
		return ex
	}
	withVersion := func(ex Exchange, v string) Exchange {
		ex.RequestHeaders = Header{{"mcp-protocol-version", v}}
		return ex
	}
	truncatedBody := func(ex Exchange) Exchange {
		ex.BodyTruncated = true
		return ex
	}
	get := func(status int, h Header, body string) Exchange {
		return Exchange{HTTPMethod: "GET", Status: status, ResponseHeaders: h, ResponseBody: []byte(body)}
	}
	sse := func(body string, end StreamEnd, reason string) Exchange {
		ex := post(callReq, 200, sseCT, body)
		ex.Stream, ex.CloseReason = end, reason
		return ex
	}
	transport := func(e string) Exchange {
		return Exchange{HTTPMethod: "POST", RequestBody: []byte(callReq), TransportError: e}
	}
	resourceReq := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///x"}}`
	batch := `[` + callReq + `,{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`
	return []classCase{
		// application
		{"tools/list result", post(listReq, 200, jsonCT, `{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}`), want{outcome: Success, advice: AdviceNone, risk: RiskNone}},
		{"tool success", post(callReq, 200, jsonCT, good), want{outcome: ToolSuccess}},
		{"tool failed", post(callReq, 200, jsonCT, toolErr("boom")), want{outcome: ToolError, class: ToolFailed}},
		{"go sdk invalid arguments", post(callReq, 200, jsonCT, toolErr(`validating \"arguments\": validating root: required: missing properties: [\"key\"]`)), want{outcome: ToolError, class: ToolInputValidation}},
		{"ts2 input validation", post(callReq, 200, jsonCT, toolErr("Input validation error: Invalid arguments for tool x: bad")), want{outcome: ToolError, class: ToolInputValidation}},
		{"fastmcp pydantic", post(callReq, 200, jsonCT, toolErr("Error executing tool x: 1 validation error for xArguments")), want{outcome: ToolError, class: ToolInputValidation}},
		{"output validation", post(callReq, 200, jsonCT, toolErr("MCP error -32602: Output validation error: Invalid structured content")), want{outcome: ToolError, class: ToolOutputValidation, advice: AdviceDoNotRetry}},
		{"python unknown tool", post(callReq, 200, jsonCT, toolErr("Unknown tool: nope")), want{outcome: ToolError, class: UnknownTool, advice: AdviceFixRequest, risk: RiskNone}},
		{"rmcp invalid arguments", post(callReq, 200, jsonCT, toolErr("failed to deserialize parameters: invalid type: integer `42`, expected a string")), want{outcome: ToolError, class: ToolInputValidation, advice: AdviceFixRequest, risk: RiskNone}},
		// interaction
		{"-32800 after the client cancelled", post(callReq, 200, sseCT, "event: message\r\ndata: "+errBody(-32800, "Request cancelled")+"\r\n\r\n"), want{outcome: Cancelled, class: RequestCancelled, advice: AdviceNone, risk: RiskUnknown, known: no(), code: code(-32800)}},
		{"-32800 in a cut body", truncatedBody(post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"Requ`)), want{outcome: Cancelled, class: RequestCancelled}},
		{"input_required with requestState", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"abc"}}`), want{outcome: InputRequired}},
		// transport
		{"202 for notification", post(noticeReq, 202, nil, ""), want{outcome: Accepted, advice: AdviceNone, risk: RiskNone}},
		{"202 for client response", post(`{"jsonrpc":"2.0","id":"s-1","result":{}}`, 202, nil, ""), want{outcome: Accepted}},
		{"legacy 202 Accepted text", post(noticeReq, 202, Header{{"content-type", "text/plain"}}, "Accepted"), want{outcome: Accepted}},
		{"401", post(callReq, 401, nil, ""), want{outcome: HTTPError, class: AuthRequired}},
		{"403", post(callReq, 403, nil, "Forbidden"), want{outcome: HTTPError, class: Forbidden, advice: AdviceReauthenticate, message: "Forbidden"}},
		{"403 insufficient scope", post(callReq, 403, Header{{"www-authenticate", `Bearer error="insufficient_scope", scope="files:write"`}}, ""), want{outcome: HTTPError, class: InsufficientScope, advice: AdviceReauthenticate}},
		{"404 with session (TS -32001)", withSession(post(callReq, 404, jsonCT, `{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}`)), want{outcome: HTTPError, class: SessionNotFound, advice: AdviceReinitialize, code: code(-32001)}},
		{"404 with session (Python)", withSession(post(callReq, 404, jsonCT, `{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Session not found"}}`)), want{outcome: HTTPError, class: SessionNotFound, code: code(-32600)}},
		{"400 Python unknown session text", withSession(post(callReq, 400, Header{{"content-type", "text/plain"}}, "Bad Request: No valid session ID provided")), want{outcome: HTTPError, class: SessionNotFound, advice: AdviceReinitialize}},
		{"404 2026 method not found", withSession(post(callReq, 404, jsonCT, errBody(-32601, "Method not found"))), want{outcome: HTTPError, class: MethodNotFound, advice: AdviceFixRequest}},
		{"404 no session", post(callReq, 404, nil, "Not Found"), want{outcome: HTTPError, class: NotFound}},
		{"405", post(callReq, 405, nil, ""), want{outcome: HTTPError, class: MethodNotAllowed}},
		{"400 accept text", post(callReq, 400, nil, "Client must accept text/event-stream"), want{outcome: HTTPError, class: NotAcceptable}},
		{"409", get(409, jsonCT, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Conflict: Only one SSE stream is allowed per session"},"id":null}`), want{outcome: HTTPError, class: Conflict}},
		{"413", post(callReq, 413, nil, ""), want{outcome: HTTPError, class: PayloadTooLarge}},
		{"415", post(callReq, 415, jsonCT, `{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Unsupported Media Type"}}`), want{outcome: HTTPError, class: UnsupportedMediaType}},
		{"429 with Retry-After", post(callReq, 429, Header{{"retry-after", "2"}}, ""), want{outcome: HTTPError, class: RateLimited, advice: AdviceRetryAfter}},
		{"400 generic", post(callReq, 400, nil, "nope"), want{outcome: HTTPError, class: BadRequest, advice: AdviceFixRequest}},
		{"400 -32600", post(callReq, 400, jsonCT, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Server already initialized"},"id":null}`), want{outcome: HTTPError, class: InvalidRequest}},
		{"400 -32602 missing _meta", post(callReq, 400, jsonCT, errBody(-32602, "missing _meta protocolVersion")), want{outcome: HTTPError, class: InvalidParams}},
		{"400 -32020", post(callReq, 400, jsonCT, errBody(-32020, "Mcp-Name header does not match")), want{outcome: HTTPError, class: HeaderMismatch, code: code(-32020)}},
		{"400 -32021", post(callReq, 400, jsonCT, errBody(-32021, "missing capability")), want{outcome: HTTPError, class: MissingCapability}},
		{"400 -32022", post(callReq, 400, jsonCT, errBody(-32022, "unsupported version")), want{outcome: HTTPError, class: UnsupportedVersion}},
		{"400 TS unsupported version text", post(callReq, 400, jsonCT, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Unsupported protocol version: 1999-01-01 (supported versions: 2025-06-18)"},"id":null}`), want{outcome: HTTPError, class: UnsupportedVersion}},
		{"rmcp 415 for an unparsable body", post(`{"jsonrpc":"2.0","id":1,"method":"tools/ca`, 415, nil, "Unsupported Media Type: failed to deserialize request body"), want{outcome: HTTPError, class: ParseError, advice: AdviceFixRequest}},
		{"rmcp 415 for a batch", post(batch, 415, nil, "Unsupported Media Type"), want{outcome: HTTPError, class: BatchRejected}},
		{"rmcp unsupported version text", post(callReq, 400, nil, "Bad Request: Unsupported MCP-Protocol-Version: 2099-01-01"), want{outcome: HTTPError, class: UnsupportedVersion, advice: AdviceFixRequest}},
		{"python 2.x unknown version header", withVersion(post(callReq, 400, jsonCT, errBody(-32602, "params._meta must be an object carrying the required 'io.modelcontextprotocol/protocolVersion' and 'io.modelcontextprotocol/clientCapabilities' envelope keys")), "2099-01-01"), want{outcome: HTTPError, class: UnsupportedVersion}},
		{"400 -32602 with a known version header", withVersion(post(callReq, 400, jsonCT, errBody(-32602, "missing _meta protocolVersion")), "2026-07-28"), want{outcome: HTTPError, class: InvalidParams}},
		{"400 malformed request", post(`not json`, 400, nil, "Could not parse message"), want{outcome: HTTPError, class: ParseError}},
		{"418", post(callReq, 418, nil, ""), want{outcome: HTTPError, class: ClientError}},
		{"500", post(callReq, 500, nil, ""), want{outcome: HTTPError, class: ServerError, risk: RiskUnknown}},
		{"502 for tools/list has no side effect", post(listReq, 502, nil, ""), want{outcome: HTTPError, class: ServerError, risk: RiskNone, known: no()}},
		{"408", post(callReq, 408, nil, ""), want{outcome: HTTPError, class: Timeout, advice: AdviceRetryIfSafe}},
		{"302", post(callReq, 302, Header{{"location", "/login"}}, ""), want{outcome: HTTPError, class: Redirect}},
		{"batch 400", post(batch, 400, jsonCT, `{"jsonrpc":"2.0","id":"server-error","error":{"code":-32602,"message":"Validation error"}}`), want{outcome: HTTPError, class: BatchRejected}},
		{"timeout", transport("timeout"), want{outcome: TransportError, class: Timeout, risk: RiskUnknown, known: no(), advice: AdviceRetryIfSafe}},
		{"reset", transport("connection_reset"), want{outcome: TransportError, class: ConnectionReset, risk: RiskUnknown}},
		{"refused", transport("connection_refused"), want{outcome: TransportError, class: ConnectionRefused, risk: RiskNone, known: yes()}},
		{"tls", transport("tls"), want{outcome: TransportError, class: TLSError, risk: RiskNone}},
		{"dns", transport("dns"), want{outcome: TransportError, class: DNSError}},
		{"client went away before a status", transport("client_abort"), want{outcome: TransportError, class: ClientAbort, risk: RiskUnknown, known: no()}},
		{"free text", transport("proxy exploded"), want{outcome: TransportError, class: NetworkError, message: "proxy exploded"}},
		{"go timeout text", transport("context deadline exceeded (Client.Timeout exceeded while awaiting headers)"), want{outcome: TransportError, class: Timeout}},
		{"no response", Exchange{HTTPMethod: "POST", RequestBody: []byte(callReq), NoResponse: true}, want{outcome: NoResponse, class: NoResponseWindow, risk: RiskUnknown, advice: AdviceRetryIfSafe}},
		{"evicted", Exchange{HTTPMethod: "POST", RequestBody: []byte(callReq), NoResponse: true, Evicted: true}, want{outcome: NoResponse, class: PendingEvicted}},
		// protocol
		{"-32700 at 200", post(`{bad`, 200, jsonCT, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`), want{outcome: JSONRPCError, class: ParseError}},
		{"-32600", post(callReq, 200, jsonCT, errBody(-32600, "Invalid Request")), want{outcome: JSONRPCError, class: InvalidRequest}},
		{"-32601", post(callReq, 200, jsonCT, errBody(-32601, "Method not found")), want{outcome: JSONRPCError, class: MethodNotFound}},
		{"-32602 go unknown tool", post(callReq, 200, jsonCT, errBody(-32602, `unknown tool \"nope\"`)), want{outcome: JSONRPCError, class: UnknownTool, advice: AdviceFixRequest}},
		{"-32602 ts2 tool not found", post(callReq, 200, jsonCT, errBody(-32602, "Tool nope not found")), want{outcome: JSONRPCError, class: UnknownTool}},
		{"-32602 init version", post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}`, 200, jsonCT, errBody(-32602, "Unsupported protocol version")), want{outcome: JSONRPCError, class: UnsupportedVersion}},
		{"-32603", post(callReq, 200, jsonCT, errBody(-32603, "Internal error")), want{outcome: JSONRPCError, class: InternalError, advice: AdviceRetryIfSafe, risk: RiskUnknown}},
		{"python code 0", post(callReq, 200, jsonCT, errBody(0, "division by zero")), want{outcome: JSONRPCError, class: InternalError, code: code(0)}},
		{"-32002", post(resourceReq, 200, jsonCT, errBody(-32002, "Resource not found")), want{outcome: JSONRPCError, class: ResourceNotFound}},
		{"2026 -32602 resource", post(resourceReq, 200, jsonCT, errBody(-32602, "Resource file:///x not found")), want{outcome: JSONRPCError, class: ResourceNotFound}},
		{"-32042", post(callReq, 200, jsonCT, errBody(-32042, "URL elicitation required")), want{outcome: JSONRPCError, class: URLElicitationRequired, advice: AdviceContinueInput}},
		{"-32020 at 200", post(callReq, 200, jsonCT, errBody(-32020, "HeaderMismatch")), want{outcome: JSONRPCError, class: HeaderMismatch}},
		{"-32021 at 200", post(callReq, 200, jsonCT, errBody(-32021, "x")), want{outcome: JSONRPCError, class: MissingCapability}},
		{"-32022 at 200", post(callReq, 200, jsonCT, errBody(-32022, "x")), want{outcome: JSONRPCError, class: UnsupportedVersion}},
		{"-32050", post(callReq, 200, jsonCT, errBody(-32050, "x")), want{outcome: JSONRPCError, class: ImplementationError, advice: AdviceDoNotRetry}},
		{"app code", post(callReq, 200, jsonCT, errBody(42, "x")), want{outcome: JSONRPCError, class: ApplicationDefinedError}},
		{"batch at 200 refused", post(batch, 200, jsonCT, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batches not supported"}}`), want{outcome: JSONRPCError, class: BatchRejected}},
		{"malformed", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0",`), want{outcome: MalformedJSON}},
		{"missing id", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","error":{"code":-32603,"message":"x"}}`), want{outcome: InvalidEnvelope, class: MissingID}},
		{"null id with result", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":null,"result":{"content":[]}}`), want{outcome: InvalidEnvelope, class: MissingID}},
		{"string id for number", post(callReq, 200, jsonCT, strings.Replace(good, `"id":1`, `"id":"1"`, 1)), want{outcome: InvalidEnvelope, class: IDMismatch}},
		{"result and error", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`), want{outcome: InvalidEnvelope, class: ResultAndError}},
		{"no result or error", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1}`), want{outcome: InvalidEnvelope, class: NoResultOrError}},
		{"jsonrpc 1.0", post(callReq, 200, jsonCT, strings.Replace(good, `"2.0"`, `"1.0"`, 1)), want{outcome: InvalidEnvelope, class: BadVersion}},
		{"code is a string", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"error":{"code":"E1","message":"x"}}`), want{outcome: InvalidEnvelope, class: BadErrorObject}},
		{"code not integer", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}`), want{outcome: InvalidEnvelope, class: BadErrorObject}},
		{"request instead of response", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"method":"ping"}`), want{outcome: InvalidEnvelope, class: NotAResponse}},
		{"array for single", post(callReq, 200, jsonCT, `[`+good+`]`), want{outcome: InvalidEnvelope, class: BatchMismatch}},
		{"list result not object", post(listReq, 200, jsonCT, `{"jsonrpc":"2.0","id":7,"result":[]}`), want{outcome: InvalidEnvelope, class: ResultNotObject}},
		{"tool result not object", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"result":"ok"}`), want{outcome: InvalidToolResult, class: ResultNotObject}},
		{"content missing", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"result":{"isError":false}}`), want{outcome: InvalidToolResult, class: ContentNotArray}},
		{"isError string", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":"true"}}`), want{outcome: InvalidToolResult, class: IsErrorNotBoolean}},
		{"unknown resultType", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"later","content":[]}}`), want{outcome: InvalidToolResult, class: UnknownResultType}},
		{"input_required without inputs", post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`), want{outcome: InvalidToolResult, class: BadInputRequest}},
		{"202 for request", post(callReq, 202, nil, ""), want{outcome: UnexpectedResponse, class: AcceptedRequest, advice: AdviceDoNotRetry, risk: RiskUnknown}},
		{"200 empty for request", post(callReq, 200, jsonCT, ""), want{outcome: UnexpectedResponse, class: EmptyBody}},
		{"body for notification", post(noticeReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"result":{}}`), want{outcome: UnexpectedResponse, class: BodyForNotice}},
		{"truncated body", func() Exchange {
			ex := post(callReq, 200, jsonCT, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"very long`)
			ex.BodyTruncated = true
			return ex
		}(), want{outcome: ToolSuccess, class: BodyTruncated}},
		// stream
		{"cut by reset", sse("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n", StreamCut, "reset"), want{outcome: StreamIncomplete, class: ConnectionReset, advice: AdviceRetryIfSafe, risk: RiskUnknown}},
		{"cut by timeout", sse(": keepalive\n\n", StreamCut, "timeout"), want{outcome: StreamIncomplete, class: Timeout}},
		{"client abort", sse("", StreamCut, "client_abort"), want{outcome: StreamIncomplete, class: ClientAbort}},
		{"server abort", sse("id: 1\ndata:\n\n", StreamCut, "server_abort"), want{outcome: StreamIncomplete, class: ServerAbort}},
		{"ended without final", sse("id: 1\ndata:\n\n", StreamComplete, "eof"), want{outcome: StreamIncomplete, class: StreamEndedEarly}},
		// a record without bodies
		{"status only 2xx", Exchange{HTTPMethod: "POST", Status: 200, Evidence: EvidenceStatusOnly}, want{outcome: Unverified, known: no()}},
	}
}

func TestEveryOutcomeAndClass(t *testing.T) {
	outcomes := map[Outcome]bool{}
	classes := map[ErrorClass]bool{}
	for _, c := range classCases() {
		check(t, c.name, c.ex, c.want)
		outcomes[c.want.outcome] = true
		classes[c.want.class] = true
	}
	for _, o := range Outcomes {
		if !outcomes[o] {
			t.Errorf("no case for outcome %s", o)
		}
	}
	for _, c := range ErrorClasses {
		if !classes[c] {
			t.Errorf("no case for error class %s", c)
		}
	}
}
