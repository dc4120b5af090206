package shippers

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MCP log events: one OTel log record per JSON-RPC message that crossed
// HTTP, its raw HTTP body in the record body. Records with another event
// name are not MCP traffic and are dropped (filter processor).
const (
	EventRequest  = "mcp.request"
	EventResponse = "mcp.response"
)

// OTelAttrs are the MCP and JSON-RPC semantic-convention attributes kept
// under attrs, with their semconv names: the ingester reads method, id and
// error from the bodies and keeps these to cross-check the instrumentation.
var OTelAttrs = []string{
	"mcp.method.name", "mcp.protocol.version", "jsonrpc.request.id",
	"rpc.response.status_code", "error.type", "gen_ai.tool.name",
}

// OTelFields is the mapping from one OTel log record (with its resource) to
// one contract-v1 event. The transform processor in otelcol.yaml sets
// exactly these fields from exactly these inputs.
var OTelFields = []Field{
	{"v", nil, "1"},
	{"event_id", []string{"attributes[log.record.uid]", "trace_id", "span_id", "event_name"}, `log.record.uid, else "otel:" + trace_id + "-" + span_id + ":" + kind; absent without either (the ingester then hashes the line)`},
	{"ts", []string{"time", "observed_time"}, "time (observed_time when time is 0), RFC 3339 UTC, fraction to the nanosecond without trailing zeros"},
	{"kind", []string{"event_name"}, "mcp.request: request, mcp.response: response"},
	{"source", []string{"attributes[mcplens.source]"}, `mcplens.source (client, server or gateway), default "server"`},
	{"observer", []string{"resource[service.instance.id]", "resource[host.name]"}, "service.instance.id, else host.name"},
	{"server", []string{"resource[service.name]"}, "service.name of a server-side record"},
	{"client_name", []string{"resource[service.name]"}, "service.name of a client-side record"},
	{"client_version", []string{"resource[service.version]"}, "service.version of a client-side record"},
	{"exchange_id", []string{"trace_id", "span_id"}, `trace_id + "-" + span_id: the request and response records of one span`},
	{"session_id", []string{"attributes[mcp.session.id]"}, "mcp.session.id"},
	{"url", []string{"attributes[url.full]"}, "url.full"},
	{"http.method", []string{"attributes[http.request.method]"}, "http.request.method"},
	{"http.status", []string{"attributes[http.response.status_code]"}, "http.response.status_code, as an integer"},
	{"http.request_headers", []string{"attributes[http.request.header.*]"}, "http.request.header.<name>: a string, or the first of a string array; credentials dropped"},
	{"http.response_headers", []string{"attributes[http.response.header.*]"}, "http.response.header.<name>, likewise; set-cookie dropped"},
	{"request_body", []string{"body"}, "the record body (a string) of a request record"},
	{"response_body", []string{"body"}, "the record body (a string) of a response record"},
	{"transport_error", []string{"attributes[http.response.status_code]", "attributes[error.type]"}, "a response record without http.response.status_code: error.type, else no_response"},
	{"attrs", []string{"attributes[mcp.method.name]", "attributes[mcp.protocol.version]", "attributes[jsonrpc.request.id]", "attributes[rpc.response.status_code]", "attributes[error.type]", "attributes[gen_ai.tool.name]"}, "the OTelAttrs present, under their semconv names"},
}

// otlpLogs is the OTLP/JSON encoding of an ExportLogsServiceRequest (what
// the file exporter writes and what OTLP/HTTP with JSON carries).
type otlpLogs struct {
	ResourceLogs []struct {
		Resource struct {
			Attributes []otlpKV `json:"attributes"`
		} `json:"resource"`
		ScopeLogs []struct {
			LogRecords []otlpRecord `json:"logRecords"`
		} `json:"scopeLogs"`
	} `json:"resourceLogs"`
}

type otlpRecord struct {
	TimeUnixNano         json.Number `json:"timeUnixNano"`
	ObservedTimeUnixNano json.Number `json:"observedTimeUnixNano"`
	EventName            string      `json:"eventName"`
	Body                 otlpValue   `json:"body"`
	Attributes           []otlpKV    `json:"attributes"`
	TraceID              string      `json:"traceId"`
	SpanID               string      `json:"spanId"`
}

type otlpKV struct {
	Key   string    `json:"key"`
	Value otlpValue `json:"value"`
}

type otlpValue struct {
	StringValue *string      `json:"stringValue"`
	BoolValue   *bool        `json:"boolValue"`
	IntValue    *json.Number `json:"intValue"` // int64: a string in OTLP/JSON
	DoubleValue *float64     `json:"doubleValue"`
	ArrayValue  *struct {
		Values []otlpValue `json:"values"`
	} `json:"arrayValue"`
	KvlistValue *struct {
		Values []otlpKV `json:"values"`
	} `json:"kvlistValue"`
}

// value returns the Go value: string, bool, int64, float64, []any or
// map[string]any; nil when empty.
func (v otlpValue) value() any {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.BoolValue != nil:
		return *v.BoolValue
	case v.IntValue != nil:
		n, _ := strconv.ParseInt(v.IntValue.String(), 10, 64)
		return n
	case v.DoubleValue != nil:
		return *v.DoubleValue
	case v.ArrayValue != nil:
		out := make([]any, len(v.ArrayValue.Values))
		for i, e := range v.ArrayValue.Values {
			out[i] = e.value()
		}
		return out
	case v.KvlistValue != nil:
		return attrMap(v.KvlistValue.Values)
	}
	return nil
}

func attrMap(kvs []otlpKV) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		if v := kv.Value.value(); v != nil {
			m[kv.Key] = v
		}
	}
	return m
}

// OTel maps every MCP log record of an OTLP/JSON logs export to a
// contract-v1 event, in order, as OTelFields says; other records are
// skipped.
func OTel(data []byte) ([]map[string]any, error) {
	var req otlpLogs
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("decode OTLP/JSON logs: %w", err)
	}
	var out []map[string]any
	for _, rl := range req.ResourceLogs {
		res := attrMap(rl.Resource.Attributes)
		for _, sl := range rl.ScopeLogs {
			for _, rec := range sl.LogRecords {
				if ev := otelEvent(res, rec); ev != nil {
					out = append(out, ev)
				}
			}
		}
	}
	return out, nil
}

func otelEvent(res map[string]any, rec otlpRecord) map[string]any {
	var kind string
	switch rec.EventName {
	case EventRequest:
		kind = "request"
	case EventResponse:
		kind = "response"
	default:
		return nil
	}
	attrs := attrMap(rec.Attributes)
	ev := map[string]any{"v": 1, "kind": kind, "source": "server"}
	setIf(ev, "source", attrs["mcplens.source"])

	nanos, _ := strconv.ParseInt(rec.TimeUnixNano.String(), 10, 64)
	if nanos == 0 {
		nanos, _ = strconv.ParseInt(rec.ObservedTimeUnixNano.String(), 10, 64)
	}
	// OTTL's FormatTime "%Y-%m-%dT%H:%M:%S.%sZ" writes the fraction as Go's
	// .999999999 does: trailing zeros and an empty fraction dropped.
	ev["ts"] = time.Unix(0, nanos).UTC().Format(time.RFC3339Nano)

	setIf(ev, "observer", res["host.name"])
	setIf(ev, "observer", res["service.instance.id"])
	switch ev["source"] {
	case "server":
		setIf(ev, "server", res["service.name"])
	case "client":
		setIf(ev, "client_name", res["service.name"])
		setIf(ev, "client_version", res["service.version"])
	}
	traceID, spanID := strings.ToLower(rec.TraceID), strings.ToLower(rec.SpanID)
	if traceID != "" && spanID != "" {
		ev["exchange_id"] = traceID + "-" + spanID
		ev["event_id"] = "otel:" + traceID + "-" + spanID + ":" + kind
	}
	setIf(ev, "event_id", attrs["log.record.uid"])
	setIf(ev, "session_id", attrs["mcp.session.id"])
	setIf(ev, "url", attrs["url.full"])
	setIf(ev, "http.method", attrs["http.request.method"])
	if h := otelHeaders(attrs, "http.request.header.", DroppedRequestHeaders); len(h) > 0 {
		ev["http.request_headers"] = h
	}
	if h := otelHeaders(attrs, "http.response.header.", DroppedResponseHeaders); len(h) > 0 {
		ev["http.response_headers"] = h
	}
	if body, ok := rec.Body.value().(string); ok {
		ev[kind+"_body"] = body
	}
	if status, ok := attrs["http.response.status_code"]; ok {
		ev["http.status"] = ottlInt(status)
	} else if kind == "response" {
		ev["transport_error"] = "no_response"
		setIf(ev, "transport_error", attrs["error.type"])
	}
	kept := map[string]any{}
	for _, name := range OTelAttrs {
		if v, ok := attrs[name]; ok {
			kept[name] = v
		}
	}
	if len(kept) > 0 {
		ev["attrs"] = kept
	}
	return ev
}

// otelHeaders collects the attributes prefix+NAME as NAME: a scalar as it
// is, an array as its first element (the transform processor flattens the
// array and keeps NAME.0).
func otelHeaders(attrs map[string]any, prefix string, drop []string) map[string]any {
	h := map[string]any{}
	for k, v := range attrs {
		name, ok := strings.CutPrefix(k, prefix)
		if !ok || slices.Contains(drop, name) {
			continue
		}
		if arr, isArr := v.([]any); isArr {
			if len(arr) == 0 {
				continue
			}
			v = arr[0]
		}
		h[name] = v
	}
	return h
}

// ottlInt converts like OTTL's Int: int64 as is, float64 truncated, a
// string parsed; nil otherwise.
func ottlInt(v any) any {
	switch v := v.(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	case bool:
		if v {
			return int64(1)
		}
		return int64(0)
	case string:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return nil
}

// setIf sets a string value, as the processor's IsString conditions do.
func setIf(ev map[string]any, name string, v any) {
	if s, ok := v.(string); ok {
		ev[name] = s
	}
}
