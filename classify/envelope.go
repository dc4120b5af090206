package classify

import (
	"github.com/valyala/fastjson"
)

// message classifies one JSON-RPC message that should answer the request:
// first the envelope (jsonrpc version, exactly one of result and error, a
// well-formed error object, the id), then the error code or the result.
func (c *classifier) message(v *fastjson.Value, via string) {
	if v.Type() != fastjson.TypeObject {
		c.set(InvalidEnvelope, NotAResponse, rule(via, "not-object"))
		return
	}
	if class, ok := c.envelope(v); !ok {
		c.set(InvalidEnvelope, class, rule(via, "envelope"))
		return
	}
	if e := v.Get("error"); e != nil {
		c.rpcError(e)
		c.r.Rule = rule(via, "jsonrpc-error")
		return
	}
	c.result(v.Get("result"), via)
}

// envelope checks the JSON-RPC 2.0 response rules against the request.
func (c *classifier) envelope(v *fastjson.Value) (ErrorClass, bool) {
	if jv := v.Get("jsonrpc"); jv == nil || jv.Type() != fastjson.TypeString || string(jv.GetStringBytes()) != "2.0" {
		return BadVersion, false
	}
	hasResult, hasError := v.Exists("result"), v.Exists("error")
	switch {
	case hasResult && hasError:
		return ResultAndError, false
	case !hasResult && !hasError:
		if v.Exists("method") {
			return NotAResponse, false
		}
		return NoResultOrError, false
	}
	if hasError {
		e := v.Get("error")
		if e.Type() != fastjson.TypeObject {
			return BadErrorObject, false
		}
		code, msg := e.Get("code"), e.Get("message")
		if code == nil || code.Type() != fastjson.TypeNumber || msg == nil || msg.Type() != fastjson.TypeString {
			return BadErrorObject, false
		}
		if _, err := code.Int64(); err != nil {
			return BadErrorObject, false
		}
	}
	id := idOf(v.Get("id"))
	if !id.present() {
		// An error may go without id only when the request could not be
		// read (2025-11-25 and later say so; earlier revisions imply it).
		if hasError && (c.q.shape == reqMalformed || c.q.shape == reqEmpty) {
			return ClassNone, true
		}
		if id.kind != fastjson.TypeNull {
			return IDMismatch, false
		}
		return MissingID, false
	}
	if c.q.shape == reqSingle && !c.q.id.equal(id) {
		return IDMismatch, false
	}
	if c.q.shape == reqMalformed && hasResult {
		return IDMismatch, false
	}
	return ClassNone, true
}

// rpcError fills the outcome of a JSON-RPC error object that passed the
// envelope check.
func (c *classifier) rpcError(e *fastjson.Value) {
	code, _ := e.Get("code").Int64()
	msg := string(e.GetStringBytes("message"))
	c.r.JSONRPCCode = Int(code)
	c.r.ErrorMessage = truncate(msg)
	if code == codeRequestCancelled {
		c.set(Cancelled, RequestCancelled, "")
		return
	}
	c.set(JSONRPCError, c.codeClass(code, msg), "")
}

// codeRequestCancelled is the code SDKs answer a cancelled request with
// (Python and TypeScript "Request cancelled"; LSP's RequestCancelled). On
// the 2026-07-28 wire a cancelled request gets no answer at all, so this
// only follows the client's notifications/cancelled on older revisions.
const codeRequestCancelled = -32800

// codeClass maps a JSON-RPC error code, and for -32602 its message, to an
// error class.
func (c *classifier) codeClass(code int64, msg string) ErrorClass {
	switch code {
	case -32700:
		return ParseError
	case -32600:
		if c.q.shape == reqBatch {
			return BatchRejected
		}
		return InvalidRequest
	case -32601:
		return MethodNotFound
	case -32602:
		switch {
		case unknownToolText(msg):
			return UnknownTool
		case containsFold(msg, "unsupported protocol version"):
			// Before 2026-07-28 initialize refuses a version with -32602.
			return UnsupportedVersion
		case string(c.q.method) == "resources/read" && containsFold(msg, "not found"):
			// 2026-07-28 moved resource-not-found from -32002 to -32602.
			return ResourceNotFound
		}
		return InvalidParams
	case -32603:
		return InternalError
	case 0:
		// Python SDK handlers send code 0 for an unhandled exception.
		return InternalError
	case -32002:
		return ResourceNotFound
	case -32042:
		return URLElicitationRequired
	case -32020:
		return HeaderMismatch
	case -32021:
		return MissingCapability
	case -32022:
		return UnsupportedVersion
	}
	if code <= -32000 && code >= -32099 {
		return ImplementationError
	}
	return ApplicationDefinedError
}

var toolsCall = []byte("tools/call")

// looksLikeToolResult: a result with isError or a content array, the
// members only a CallToolResult has among the server's answers.
func looksLikeToolResult(res *fastjson.Value) bool {
	if res.Exists("isError") {
		return true
	}
	content := res.Get("content")
	return content != nil && content.Type() == fastjson.TypeArray
}

// result classifies a result member: tools/call by the CallToolResult
// rules, any other method as SUCCESS when it is an object with a known
// resultType.
func (c *classifier) result(res *fastjson.Value, via string) {
	if res.Type() != fastjson.TypeObject {
		if c.q.isToolCall() {
			c.set(InvalidToolResult, ResultNotObject, rule(via, "tool-result-not-object"))
		} else {
			c.set(InvalidEnvelope, ResultNotObject, rule(via, "result-not-object"))
		}
		return
	}
	if c.unseen() && looksLikeToolResult(res) {
		c.q.method = toolsCall // the answer tells what was asked
	}
	tool := c.q.isToolCall()
	invalid := InvalidEnvelope
	if tool {
		invalid = InvalidToolResult
	}
	// resultType (2026-07-28): absent means "complete".
	if rt := res.Get("resultType"); rt != nil {
		if rt.Type() != fastjson.TypeString {
			c.set(invalid, UnknownResultType, rule(via, "result-type"))
			return
		}
		switch string(rt.GetStringBytes()) {
		case "complete":
		case "input_required":
			if !res.Exists("inputRequests") && !res.Exists("requestState") {
				c.set(invalid, BadInputRequest, rule(via, "input-required-empty"))
				return
			}
			c.set(InputRequired, ClassNone, rule(via, "input-required"))
			return
		default:
			c.set(invalid, UnknownResultType, rule(via, "result-type"))
			return
		}
	}
	if string(c.q.method) == "initialize" {
		if pv := res.Get("protocolVersion"); pv != nil && pv.Type() == fastjson.TypeString {
			c.r.ProtocolVersion = string(pv.GetStringBytes())
		}
	}
	if !tool {
		c.set(Success, ClassNone, rule(via, "result"))
		return
	}
	content := res.Get("content")
	if content == nil || content.Type() != fastjson.TypeArray {
		c.set(InvalidToolResult, ContentNotArray, rule(via, "content-not-array"))
		return
	}
	isErr := res.Get("isError")
	if isErr != nil && isErr.Type() != fastjson.TypeTrue && isErr.Type() != fastjson.TypeFalse {
		c.set(InvalidToolResult, IsErrorNotBoolean, rule(via, "iserror-not-boolean"))
		return
	}
	if isErr == nil || isErr.Type() == fastjson.TypeFalse {
		c.set(ToolSuccess, ClassNone, rule(via, "tool-result"))
		return
	}
	text := firstText(content)
	c.r.ErrorMessage = truncateBytes(text)
	c.set(ToolError, toolTextClass(text), rule(via, "tool-iserror"))
}

// firstText returns the text of the first text content block.
func firstText(content *fastjson.Value) []byte {
	items, _ := content.Array()
	for _, it := range items {
		if string(it.GetStringBytes("type")) == "text" {
			return it.GetStringBytes("text")
		}
	}
	return nil
}

// batchResponse classifies an array of responses. Against a batch request
// every element must answer one of its requests; the batch fails with the
// first failing element. Against a single request an array is invalid.
func (c *classifier) batchResponse(v *fastjson.Value) {
	if c.q.shape != reqBatch {
		c.set(InvalidEnvelope, BatchMismatch, "json-array-for-single")
		return
	}
	items, _ := v.Array()
	if len(items) == 0 {
		c.set(InvalidEnvelope, BatchMismatch, "json-batch-empty")
		return
	}
	var worst Outcome
	for _, it := range items {
		if it.Type() != fastjson.TypeObject {
			c.set(InvalidEnvelope, NotAResponse, "json-batch-element")
			return
		}
		idv := idOf(it.Get("id"))
		i := -1
		for j, want := range c.q.batchIDs {
			if want.equal(idv) {
				i = j
				break
			}
		}
		one := request{shape: reqSingle, notification: false}
		if i >= 0 {
			one.id, one.method = c.q.batchIDs[i], c.q.batchMethods[i]
		} else if it.Exists("result") || idv.present() {
			c.set(InvalidEnvelope, IDMismatch, "json-batch-id")
			return
		}
		sub := classifier{ex: c.ex, q: &one, r: &Result{}, p: c.p}
		sub.message(it, "json-batch")
		o := sub.r.Outcome
		if o != Success && o != ToolSuccess && worst == "" {
			worst = o
			c.r.ErrorClass, c.r.JSONRPCCode, c.r.ErrorMessage = sub.r.ErrorClass, sub.r.JSONRPCCode, sub.r.ErrorMessage
		}
	}
	if worst == "" {
		c.r.Outcome, c.r.Rule = Success, "json-batch"
		return
	}
	c.r.Outcome, c.r.Rule = worst, "json-batch-failed"
}
