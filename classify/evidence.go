package classify

import (
	"cmp"
	"strconv"
	"strings"
)

// Evidence says how much of an exchange a record holds.
type Evidence string

// Evidence levels (the evidence column). The zero value means bodies.
const (
	// EvidenceBodies: the raw request and response bodies; every rule applies.
	EvidenceBodies Evidence = "bodies"
	// EvidenceEnvelope: no bodies, but what the observer knew of the
	// JSON-RPC exchange (OTel span attributes, a gateway's MCP fields):
	// method, tool, error code or type. Protocol-layer defects (malformed
	// JSON, a wrong id, an invalid result) cannot be seen.
	EvidenceEnvelope Evidence = "envelope"
	// EvidenceStatusOnly: an HTTP status and nothing more; what happened
	// behind a 2xx cannot be seen (outcome UNVERIFIED).
	EvidenceStatusOnly Evidence = "status_only"
)

// Level is the evidence level a record is classified with: envelope or
// status_only as given, bodies for anything else (the zero value, or a
// level this version does not know, whose record is read for its bodies).
func (e Evidence) Level() Evidence {
	if e == EvidenceEnvelope || e == EvidenceStatusOnly {
		return e
	}
	return EvidenceBodies
}

// Unverified is the outcome of a 2xx exchange whose record cannot show
// whether the call succeeded: a status-only record, or an envelope
// record that names neither an error nor success.
const Unverified Outcome = "UNVERIFIED"

// Envelope is what a record without bodies knows of the JSON-RPC exchange.
type Envelope struct {
	Method string // mcp.method.name
	Tool   string // gen_ai.tool.name
	ID     string // jsonrpc.request.id
	// Code is the JSON-RPC error code of the answer (rpc.response.status_code,
	// mcp.error.code), when the record has one.
	Code NullInt
	// ErrorType is error.type: "tool_error" for a result with isError, a
	// code, or an exception type; empty when no error was recorded.
	ErrorType string
	// Message is the error's text (span status description,
	// mcp.error.message).
	Message string
	// Answered is true when the record shows that an answer was sent
	// (a finished server span, a gateway's MCP fields of the response).
	Answered bool
}

// metadata classifies a record without bodies as far as its evidence goes
// and never further: transport failures and HTTP statuses as usual; behind
// a 2xx, a JSON-RPC error code, a tool error or a reported success when the
// envelope says so, else UNVERIFIED. It never calls an exchange malformed
// or invalid: that needs bodies.
func (c *classifier) metadata() {
	ex, r := c.ex, c.r
	env := ex.Envelope
	if env != nil {
		r.Method = cmp.Or(r.Method, env.Method)
		r.ToolName = cmp.Or(r.ToolName, env.Tool)
		r.JSONRPCID = cmp.Or(r.JSONRPCID, env.ID)
	}
	r.Transport = TransportNone
	switch {
	case notOffered(ex):
		c.set(Success, ClassNone, string(ex.Evidence)+"-http-"+strings.ToLower(ex.HTTPMethod)+"-405")
		return
	case ex.Status < 200 || ex.Status > 299:
		c.httpError(nil)
		r.Rule = string(ex.Evidence) + "-http-status"
		return
	case strings.EqualFold(ex.HTTPMethod, "GET") || strings.EqualFold(ex.HTTPMethod, "DELETE"):
		// The server's stream or a session end: no request to answer.
		c.set(Success, ClassNone, string(ex.Evidence)+"-http-"+strings.ToLower(ex.HTTPMethod))
		return
	case ex.Evidence == EvidenceStatusOnly || env == nil || !env.Answered:
		c.set(Unverified, ClassNone, string(ex.Evidence)+"-2xx")
		return
	}
	r.ErrorMessage = truncate(env.Message)
	switch {
	case env.Code.Valid:
		r.JSONRPCCode = env.Code
		c.set(JSONRPCError, c.codeClass(env.Code.V, env.Message), "envelope-jsonrpc-error")
	case env.ErrorType == "tool_error":
		c.set(ToolError, toolTextClass([]byte(env.Message)), "envelope-tool-error")
	case env.ErrorType != "":
		if code, err := strconv.ParseInt(env.ErrorType, 10, 64); err == nil {
			r.JSONRPCCode = Int(code)
			c.set(JSONRPCError, c.codeClass(code, env.Message), "envelope-jsonrpc-error")
			return
		}
		// An exception type: the handler failed and the SDK answered with
		// a JSON-RPC error whose code the record does not carry.
		c.set(JSONRPCError, ClassNone, "envelope-handler-error")
	case env.Method == "tools/call":
		c.set(ToolSuccess, ClassNone, "envelope-tool-success")
	default:
		c.set(Success, ClassNone, "envelope-success")
	}
}
