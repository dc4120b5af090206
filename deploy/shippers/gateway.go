package shippers

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// GatewayFields is the mapping from one gateway access-log record (the
// Envoy-style JSON line documented in README.md) to one contract-v1
// "exchange" event. gateway.vrl and gateway.lua assign exactly these fields
// and read exactly these inputs.
var GatewayFields = []Field{
	{"v", nil, "1"},
	{"event_id", []string{"request_id"}, `"gateway:" + request_id; absent without request_id (the ingester then hashes the line)`},
	{"ts", []string{"start_time"}, "start_time as written (RFC 3339, the request's start); required"},
	{"kind", nil, `"exchange": one line carries both halves`},
	{"source", nil, `"gateway"`},
	{"observer", []string{"gateway"}, "gateway (the proxy instance)"},
	{"exchange_id", []string{"request_id"}, "request_id (x-request-id)"},
	{"server", []string{"upstream_cluster"}, "upstream_cluster (the logical MCP server)"},
	{"url", []string{"scheme", "authority", "path"}, `scheme (default "http") + "://" + authority + path, when authority is set`},
	{"client_name", []string{"request_headers"}, `the user-agent request header's first product, up to its "/"`},
	{"client_version", []string{"request_headers"}, `the same product after its "/"`},
	{"session_id", []string{"request_headers", "response_headers"}, "mcp-session-id request header, else the response header (initialize)"},
	{"http.method", []string{"method"}, "method; required"},
	{"http.status", []string{"status", "response_flags"}, "status (a number, or digits in a string as nginx's escape=json writes it) when above 0 and no TransportFlags rule applies; required"},
	{"http.request_headers", []string{"request_headers"}, "request_headers, names lower-cased, string values only, credentials dropped; absent when empty"},
	{"http.response_headers", []string{"response_headers"}, "response_headers, names lower-cased, string values only, set-cookie dropped; absent when empty"},
	{"request_body", []string{"request_body"}, `request_body, "" when absent`},
	{"response_body", []string{"response_body", "status"}, `response_body ("" when absent) when http.status is set`},
	{"body_truncated", []string{"request_body_truncated", "response_body_truncated"}, "either body was cut by the gateway"},
	{"duration_ms", []string{"duration_ms", "request_time"}, "duration_ms (a number or digits), else request_time in seconds (nginx) times 1000"},
	{"transport_error", []string{"status", "response_flags"}, "status 0, 499 (nginx: the client closed the request) or a status the gateway answered itself: the first of TransportFlags found in response_flags (status 499: timeout), else for status 0 the flags as text, else no_response"},
	{"stream.complete", []string{"status", "response_headers", "response_flags"}, "2xx text/event-stream response: true when response_flags is empty"},
	{"stream.close_reason", []string{"status", "response_headers", "response_flags"}, "2xx text/event-stream response: eof when complete, else the first of StreamFlags found, else server_abort"},
	{"attrs", []string{"route", "response_flags", "status"}, "route, response_flags (when set), gateway_status (the status the gateway answered itself when transport_error is set) and aborted_by (\"client\" for DC and 499) under attrs; absent when none is"},
	{"unmappable", []string{"status", "method", "start_time"}, "set instead of every other field, with raw (the whole input record), when status is not a number, or method or start_time is missing: the ingester quarantines the event with this reason"},
	{"raw", nil, "the input record, beside unmappable"},
}

// FlagRule maps one Envoy response flag to a contract value.
type FlagRule struct{ Flag, Value string }

// TransportFlags decide transport_error when the gateway sent no response
// (status 0) or answered itself (Envoy's 503 for UF/UH, its 504 for UT):
// the first rule whose flag is present wins, and the gateway's status goes
// to attrs.gateway_status. UF and UH mean the request never reached the
// server, so connection_refused, which the classifier reads as "the tool
// did not run". DC is the client giving up: its timeout.
var TransportFlags = []FlagRule{
	{"DC", "timeout"},            // downstream (the MCP client) went away
	{"UF", "connection_refused"}, // upstream connection failure
	{"UH", "connection_refused"}, // no healthy upstream host
	{"UT", "timeout"},            // upstream request timeout
	{"UC", "connection_reset"},   // upstream connection termination
	{"UR", "connection_reset"},   // upstream remote reset
}

// StreamFlags decide stream.close_reason of an event stream that did not end
// cleanly; the first rule whose flag is present wins, else server_abort.
var StreamFlags = []FlagRule{
	{"DC", "client_abort"},
	{"UT", "timeout"},
	{"SI", "timeout"}, // stream idle timeout
	{"UC", "server_abort"},
	{"UR", "reset"},
	{"UPE", "server_abort"}, // upstream protocol error
}

// Header names the shippers drop before an event leaves the host. The
// ingester redacts again (--redact-header); these never reach Kafka.
var (
	DroppedRequestHeaders  = []string{"authorization", "cookie", "proxy-authorization", "x-api-key"}
	DroppedResponseHeaders = []string{"set-cookie"}
)

// ErrNotAccessLog is returned for a line that is not a JSON object.
var ErrNotAccessLog = errors.New("not a gateway access-log record")

// Gateway maps one gateway access-log line to a contract-v1 event, as
// GatewayFields says. Values of the wrong type count as absent, as they do
// in the VRL and Lua programs. A record that cannot be mapped gives an
// event with unmappable and raw only; an error is returned only for a line
// that is not a JSON object at all.
func Gateway(line []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var in map[string]any
	if err := dec.Decode(&in); err != nil || in == nil {
		return nil, fmt.Errorf("%w: %.80q", ErrNotAccessLog, line)
	}
	// One object and nothing after it: "{}0" is not an access-log line
	// (and its raw bytes are no JSON value to keep beside unmappable).
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the object: %.80q", ErrNotAccessLog, line)
	}
	status, ok := statusOf(in["status"])
	switch {
	case !ok && in["status"] == nil:
		return unmappable("status missing", line), nil
	case !ok:
		return unmappable(fmt.Sprintf("status %v is not an HTTP status", in["status"]), line), nil
	case !isString(in["method"]):
		return unmappable("method missing", line), nil
	case !isString(in["start_time"]):
		return unmappable("start_time missing", line), nil
	}
	reqH := headers(in["request_headers"], DroppedRequestHeaders)
	respH := headers(in["response_headers"], DroppedResponseHeaders)
	var flags []string
	if s, ok := in["response_flags"].(string); ok {
		for f := range strings.SplitSeq(s, ",") {
			if f != "" && f != "-" {
				flags = append(flags, f)
			}
		}
	}

	out := map[string]any{"v": 1, "kind": "exchange", "source": "gateway"}
	if id, ok := in["request_id"].(string); ok && id != "" {
		out["event_id"] = "gateway:" + id
		out["exchange_id"] = id
	}
	copyString(out, "ts", in["start_time"])
	copyString(out, "observer", in["gateway"])
	copyString(out, "server", in["upstream_cluster"])
	copyString(out, "http.method", in["method"])
	if authority, ok := in["authority"].(string); ok {
		scheme, ok := in["scheme"].(string)
		if !ok {
			scheme = "http"
		}
		path, _ := in["path"].(string)
		out["url"] = scheme + "://" + authority + path
	}
	if ua := reqH["user-agent"]; ua != "" {
		product, _, _ := strings.Cut(ua, " ")
		name, version, _ := strings.Cut(product, "/")
		out["client_name"] = name
		if version != "" {
			out["client_version"] = version
		}
	}
	if id, ok := reqH["mcp-session-id"]; ok {
		out["session_id"] = id
	} else if id, ok := respH["mcp-session-id"]; ok {
		out["session_id"] = id
	}
	if len(reqH) > 0 {
		out["http.request_headers"] = reqH
	}
	if len(respH) > 0 {
		out["http.response_headers"] = respH
	}
	out["request_body"], _ = in["request_body"].(string)
	out["body_truncated"] = in["request_body_truncated"] == true || in["response_body_truncated"] == true
	if ms, ok := number(in["duration_ms"]); ok {
		out["duration_ms"] = ms
	} else if s, ok := number(in["request_time"]); ok {
		out["duration_ms"] = s * 1000
	}

	attrs := map[string]any{}
	transport := firstFlag(flags, TransportFlags, "")
	if status == 499 && transport == "" {
		transport = "timeout" // nginx: the client closed the request
	}
	switch {
	case status > 0 && status < 300:
		out["http.status"] = status
		out["response_body"], _ = in["response_body"].(string)
		if strings.HasPrefix(respH["content-type"], "text/event-stream") {
			complete := len(flags) == 0
			out["stream.complete"] = complete
			out["stream.close_reason"] = "eof"
			if !complete {
				out["stream.close_reason"] = firstFlag(flags, StreamFlags, "server_abort")
			}
		}
	case status > 0 && transport == "":
		out["http.status"] = status
		out["response_body"], _ = in["response_body"].(string)
	default:
		fallback := "no_response"
		if len(flags) > 0 {
			fallback = strings.Join(flags, ",")
		}
		out["transport_error"] = cmp.Or(transport, fallback)
		if status > 0 {
			attrs["gateway_status"] = status
		}
	}
	if slices.Contains(flags, "DC") || status == 499 {
		attrs["aborted_by"] = "client"
	}
	copyString(attrs, "route", in["route"])
	if len(flags) > 0 {
		attrs["response_flags"] = strings.Join(flags, ",")
	}
	if len(attrs) > 0 {
		out["attrs"] = attrs
	}
	return out, nil
}

// unmappable is the event for a record the mapping cannot turn into an
// exchange: the ingester quarantines it with reason.
func unmappable(reason string, line []byte) map[string]any {
	return map[string]any{"v": 1, "unmappable": reason, "raw": json.RawMessage(line)}
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// statusOf reads an HTTP status: a JSON number with no fraction, or the
// same as a string (nginx's escape=json quotes $status). 0 is Envoy's "no
// response was sent"; anything else is not a status.
func statusOf(v any) (int, bool) {
	f, ok := number(v)
	if !ok || f != math.Trunc(f) || f > 999 {
		return 0, false
	}
	return int(f), true
}

// number reads a JSON number or a string holding one.
func number(v any) (float64, bool) {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = v.String()
	case string:
		s = v
	default:
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil && f >= 0 && !math.IsInf(f, 0)
}

// headers lower-cases the names of a header object, keeps string values and
// drops the names in drop.
func headers(v any, drop []string) map[string]string {
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, v := range m {
		s, ok := v.(string)
		name := strings.ToLower(k)
		if ok && !slices.Contains(drop, name) {
			out[name] = s
		}
	}
	return out
}

func copyString(out map[string]any, name string, v any) {
	if s, ok := v.(string); ok {
		out[name] = s
	}
}

func firstFlag(flags []string, rules []FlagRule, fallback string) string {
	for _, r := range rules {
		if slices.Contains(flags, r.Flag) {
			return r.Value
		}
	}
	return fallback
}
