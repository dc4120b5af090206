// Package agentgateway reads agentgateway's JSON access log (one line per
// request, scope "request") and turns each MCP request into a contract-v1
// exchange event. agentgateway logs the MCP fields natively (mcp.method,
// or mcp.method.name in newer versions, mcp.target, the tool as
// mcp.resource.name or gen_ai.tool.name, mcp.session.id, mcp.error.code,
// mcp.error.message); deploy/agentgateway/config.yaml adds the bodies it
// captured as mcplens.request_body and mcplens.response_body. With bodies
// the record has evidence "bodies"; without, "envelope" when MCP fields
// are there, else "status_only".
package agentgateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Format is the pipeline.Format of agentgateway access-log lines. The zero
// value is ready; it is safe for concurrent use.
type Format struct{}

// Expand maps one log line. Lines of other scopes (agentgateway's own
// logs) hold no exchange; a request line without its time or HTTP method
// is quarantined.
func (Format) Expand(value []byte, emit func(line []byte, err error)) {
	ev, err := Event(value)
	switch {
	case errors.Is(err, errNotRequest):
	case err != nil:
		emit(value, err)
	default:
		emit(ev, nil)
	}
}

var errNotRequest = errors.New("not a request log line")

// Event maps one agentgateway access-log line to a contract-v1 event line.
func Event(line []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var in map[string]any
	if err := dec.Decode(&in); err != nil || in == nil {
		return nil, fmt.Errorf("agentgateway: not a JSON log line: %.60q", line)
	}
	if s, _ := in["scope"].(string); s != "request" {
		return nil, errNotRequest
	}
	ts, _ := in["time"].(string)
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		return nil, fmt.Errorf("agentgateway: time %v is not RFC 3339", in["time"])
	}
	method, _ := in["http.method"].(string)
	if method == "" {
		return nil, errors.New("agentgateway: http.method missing")
	}
	status, ok := number(in["http.status"])
	if !ok && in["http.status"] != nil {
		return nil, fmt.Errorf("agentgateway: http.status %v is not a number", in["http.status"])
	}
	s := func(k string) string { v, _ := in[k].(string); return v }
	first := func(ks ...string) string {
		for _, k := range ks {
			if v := s(k); v != "" {
				return v
			}
		}
		return ""
	}
	out := map[string]any{"v": 1, "kind": "exchange", "source": "gateway", "ts": ts, "http.method": method}
	if tid, sid := s("trace.id"), s("span.id"); tid != "" && sid != "" {
		out["exchange_id"] = tid + "-" + sid
		out["event_id"] = "agentgateway:" + tid + "-" + sid
	}
	setIf(out, "observer", s("gateway"))
	setIf(out, "server", first("mcp.target", "route"))
	if host := s("http.host"); host != "" {
		out["url"] = "http://" + host + s("http.path")
	}
	setIf(out, "session_id", s("mcp.session.id"))
	reqH := headers(in["rq.headers.all"])
	if len(reqH) > 0 {
		out["http.request_headers"] = reqH
		if sid := reqH["mcp-session-id"]; sid != "" && out["session_id"] == nil {
			out["session_id"] = sid
		}
		if ua := reqH["user-agent"]; ua != "" {
			product, _, _ := strings.Cut(ua, " ")
			name, version, _ := strings.Cut(product, "/")
			setIf(out, "client_name", name)
			setIf(out, "client_version", version)
		}
	}
	if d := s("duration"); strings.HasSuffix(d, "ms") {
		if ms, err := strconv.ParseFloat(strings.TrimSuffix(d, "ms"), 64); err == nil {
			out["duration_ms"] = ms
		}
	}
	reqBody, haveReq := in["mcplens.request_body"].(string)
	respBody, haveResp := in["mcplens.response_body"].(string)
	out["request_body"], out["response_body"] = reqBody, respBody
	if ct := s("mcplens.response_content_type"); ct != "" {
		out["http.response_headers"] = map[string]string{"content-type": ct}
	}
	attrs := map[string]any{}
	switch {
	case status >= 500 && s("error") != "":
		// The gateway's own answer: the backend failed before answering.
		out["transport_error"] = s("error")
		attrs["gateway_status"] = int(status)
	case status > 0:
		out["http.status"] = int(status)
	case s("error") != "":
		out["transport_error"] = s("error")
	default:
		// Neither a status nor an error: agentgateway never answered
		// because the client went away (a real one logs a client that gave
		// up mid-call so), which is a client abort as Envoy's DC is.
		out["transport_error"] = "timeout"
		attrs["aborted_by"] = "client"
	}

	mcpMethod := first("mcp.method.name", "mcp.method")
	tool := first("gen_ai.tool.name")
	if tool == "" && first("mcp.resource.type", "mcp.resource") == "tool" {
		tool = s("mcp.resource.name")
	}
	setIf(attrs, "mcp.method.name", mcpMethod)
	setIf(attrs, "gen_ai.tool.name", tool)
	setIf(attrs, "mcp.error.message", s("mcp.error.message"))
	if c, ok := number(in["mcp.error.code"]); ok && math.Abs(c) < 1<<53 {
		attrs["mcp.error.code"] = strconv.FormatInt(int64(c), 10)
	} else if c := s("mcp.error.code"); c != "" {
		attrs["mcp.error.code"] = c
	}
	setIf(attrs, "route", s("route"))
	setIf(attrs, "reason", s("reason"))
	switch {
	case haveReq && haveResp:
		out["evidence"] = "bodies"
	case mcpMethod != "":
		out["evidence"] = "envelope"
	default:
		out["evidence"] = "status_only"
	}
	if len(attrs) > 0 {
		out["attrs"] = attrs
	}
	return json.Marshal(out)
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	}
	return 0, false
}

func setIf(out map[string]any, k, v string) {
	if v != "" {
		out[k] = v
	}
}

// droppedHeaders are credentials: not shipped, not stored (the shippers'
// gateway mappings drop the same).
var droppedHeaders = map[string]bool{"authorization": true, "cookie": true, "proxy-authorization": true, "x-api-key": true}

// headers lower-cases the names of the logged request headers and keeps
// the string values but credentials.
func headers(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok && !droppedHeaders[strings.ToLower(k)] {
			out[strings.ToLower(k)] = s
		}
	}
	return out
}
