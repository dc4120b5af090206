package pipeline

import (
	"cmp"
	"encoding/json"
	"strconv"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// Attribute names (OTel MCP semantic conventions, as the OTLP and
// agentgateway formats keep them under attrs) that make up the envelope of
// a record without bodies.
const (
	attrEvidence     = "evidence"
	attrMethod       = "mcp.method.name"
	attrTool         = "gen_ai.tool.name"
	attrRequestID    = "jsonrpc.request.id"
	attrRPCStatus    = "rpc.response.status_code"
	attrMCPErrorCode = "mcp.error.code"
	attrErrorType    = "error.type"
	attrErrorMessage = "mcp.error.message"
)

// AttrResultUnseen ("true") marks a record without bodies whose answer
// arrived but whose content the observer did not record: a client span of a
// tools/call without error.type, since a tool error is a result with
// isError that a client span need not mark. Its envelope shows no answer,
// so a 2xx is UNVERIFIED instead of a success.
const AttrResultUnseen = "mcplens.result_unseen"

// evidenceOf reads the evidence level of an observation's events (the
// contract field "evidence", kept under attrs) and, for a record without
// bodies, its envelope. answered: a response was recorded.
func evidenceOf(req, resp *schema.Event) (classify.Evidence, *classify.Envelope) {
	var ev classify.Evidence
	for _, e := range []*schema.Event{req, resp} {
		if e != nil && ev == "" {
			ev = classify.Evidence(attrString(e, attrEvidence))
		}
	}
	if ev != classify.EvidenceEnvelope {
		return ev, nil
	}
	env := &classify.Envelope{Answered: resp != nil && resp.HTTPStatus > 0 && attrString(resp, AttrResultUnseen) != "true"}
	for _, e := range []*schema.Event{req, resp} {
		if e == nil {
			continue
		}
		env.Method = cmp.Or(env.Method, attrString(e, attrMethod))
		env.Tool = cmp.Or(env.Tool, attrString(e, attrTool))
		env.ID = cmp.Or(env.ID, attrString(e, attrRequestID))
		env.ErrorType = cmp.Or(env.ErrorType, attrString(e, attrErrorType))
		env.Message = cmp.Or(env.Message, attrString(e, attrErrorMessage))
		for _, k := range []string{attrRPCStatus, attrMCPErrorCode} {
			if c, err := strconv.ParseInt(attrString(e, k), 10, 64); err == nil && !env.Code.Valid {
				env.Code = classify.Int(c)
			}
		}
	}
	return ev, env
}

// attrString reads attrs[name] as a string; a JSON number is given as its
// text.
func attrString(e *schema.Event, name string) string {
	raw, ok := e.Attrs[name]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}
