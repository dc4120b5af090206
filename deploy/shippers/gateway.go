package shippers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// GatewayFields is the mapping from one gateway access-log record (the
// Envoy-style JSON line documented in README.md) to one contract-v1
// "exchange" event. gateway.vrl and gateway.lua assign exactly these fields
// and read exactly these inputs.
var GatewayFields = []Field{
	{"v", nil, "1"},
	{"event_id", []string{"request_id"}, `"gateway:" + request_id; absent without request_id (the ingester then hashes the line)`},
	{"ts", []string{"start_time"}, "start_time as written (RFC 3339, the request's start)"},
	{"kind", nil, `"exchange": one line carries both halves`},
	{"source", nil, `"gateway"`},
	{"observer", []string{"gateway"}, "gateway (the proxy instance)"},
	{"exchange_id", []string{"request_id"}, "request_id (x-request-id)"},
	{"server", []string{"upstream_cluster"}, "upstream_cluster (the logical MCP server)"},
	{"url", []string{"scheme", "authority", "path"}, `scheme (default "http") + "://" + authority + path, when authority is set`},
	{"session_id", []string{"request_headers", "response_headers"}, "mcp-session-id request header, else the response header (initialize)"},
	{"http.method", []string{"method"}, "method"},
	{"http.status", []string{"status"}, "status when above 0 (0: no response was sent)"},
	{"http.request_headers", []string{"request_headers"}, "request_headers, names lower-cased, string values only, credentials dropped; absent when empty"},
	{"http.response_headers", []string{"response_headers"}, "response_headers, names lower-cased, string values only, set-cookie dropped; absent when empty"},
	{"request_body", []string{"request_body"}, `request_body, "" when absent`},
	{"response_body", []string{"response_body", "status"}, `response_body ("" when absent) when status is above 0`},
	{"body_truncated", []string{"request_body_truncated", "response_body_truncated"}, "either body was cut by the gateway"},
	{"duration_ms", []string{"duration_ms"}, "duration_ms when it is a number"},
	{"transport_error", []string{"status", "response_flags"}, "status 0: the first of TransportFlags found in response_flags, else the flags as text, else no_response"},
	{"stream.complete", []string{"status", "response_headers", "response_flags"}, "2xx text/event-stream response: true when response_flags is empty"},
	{"stream.close_reason", []string{"status", "response_headers", "response_flags"}, "2xx text/event-stream response: eof when complete, else the first of StreamFlags found, else server_abort"},
	{"attrs", []string{"route", "response_flags"}, "route and response_flags (when set) under attrs; absent when both are"},
}

// FlagRule maps one Envoy response flag to a contract value.
type FlagRule struct{ Flag, Value string }

// TransportFlags decide transport_error when the gateway answered nothing
// (status 0); the first rule whose flag is present wins.
var TransportFlags = []FlagRule{
	{"DC", "client_abort"},       // downstream (the MCP client) went away
	{"UT", "timeout"},            // upstream request timeout
	{"UF", "connection_refused"}, // upstream connection failure
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
// in the VRL and Lua programs.
func Gateway(line []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var in map[string]any
	if err := dec.Decode(&in); err != nil || in == nil {
		return nil, fmt.Errorf("%w: %.80q", ErrNotAccessLog, line)
	}
	reqH := headers(in["request_headers"], DroppedRequestHeaders)
	respH := headers(in["response_headers"], DroppedResponseHeaders)
	status := integer(in["status"])
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
	if n, ok := in["duration_ms"].(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			out["duration_ms"] = f
		}
	}

	if status > 0 {
		out["http.status"] = status
		out["response_body"], _ = in["response_body"].(string)
		if status < 300 && strings.HasPrefix(respH["content-type"], "text/event-stream") {
			complete := len(flags) == 0
			out["stream.complete"] = complete
			out["stream.close_reason"] = "eof"
			if !complete {
				out["stream.close_reason"] = firstFlag(flags, StreamFlags, "server_abort")
			}
		}
	} else {
		fallback := "no_response"
		if len(flags) > 0 {
			fallback = strings.Join(flags, ",")
		}
		out["transport_error"] = firstFlag(flags, TransportFlags, fallback)
	}

	attrs := map[string]any{}
	copyString(attrs, "route", in["route"])
	if len(flags) > 0 {
		attrs["response_flags"] = strings.Join(flags, ",")
	}
	if len(attrs) > 0 {
		out["attrs"] = attrs
	}
	return out, nil
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

// integer reads a JSON number as an int, truncating a fraction; anything
// else is 0.
func integer(v any) int {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	if i, err := n.Int64(); err == nil {
		return int(i)
	}
	f, err := n.Float64()
	if err != nil {
		return 0
	}
	return int(f)
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
