// Package otlpsource reads OpenTelemetry traces (OTLP, protobuf or JSON, as
// the OpenTelemetry Collector's Kafka exporter writes them with otlp_proto
// or otlp_json, and as its file exporter writes them, one JSON request per
// line) and turns each MCP span (one with mcp.method.name, the MCP semantic
// conventions) into a contract-v1 exchange event with evidence "envelope":
// the span carries the method, the tool, the JSON-RPC id and error code or
// type, never the bodies, and the classifier goes no further than that.
// Spans of other traffic are skipped.
package otlpsource

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/mcplens/mcplens/pipeline"
)

// Format is the pipeline.Format of OTLP traces. The zero value is ready;
// it is safe for concurrent use.
type Format struct{}

// Attributes kept under attrs, with their semantic-convention names.
var keptAttrs = []string{
	"mcp.method.name", "mcp.protocol.version", "mcp.session.id", "mcp.resource.uri",
	"jsonrpc.request.id", "rpc.response.status_code", "error.type",
	"gen_ai.tool.name", "gen_ai.prompt.name", "gen_ai.operation.name",
	"gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
}

// Expand decodes one ExportTraceServiceRequest (JSON when it starts with
// "{", else protobuf) and emits one event per MCP span. A message that
// does not decode is quarantined whole.
func (Format) Expand(value []byte, emit func(line []byte, err error)) {
	var (
		td  ptrace.Traces
		err error
	)
	if trimmed := bytes.TrimSpace(value); len(trimmed) > 0 && trimmed[0] == '{' {
		td, err = (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(trimmed)
	} else {
		td, err = (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(value)
	}
	if err != nil {
		emit(value, fmt.Errorf("not an OTLP trace export (protobuf or JSON): %w", err))
		return
	}
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		res := rs.Resource().Attributes()
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				sp := spans.At(k)
				if _, ok := sp.Attributes().Get("mcp.method.name"); !ok {
					continue
				}
				line, err := event(res, sp)
				if err != nil {
					emit(spanJSON(sp), err)
					continue
				}
				emit(line, nil)
			}
		}
	}
}

// event maps one MCP span.
func event(res pcommon.Map, sp ptrace.Span) ([]byte, error) {
	if sp.TraceID().IsEmpty() || sp.SpanID().IsEmpty() {
		return nil, errors.New("MCP span without trace or span id")
	}
	if sp.StartTimestamp() == 0 {
		return nil, errors.New("MCP span without a start time")
	}
	attrs := sp.Attributes()
	tid, sid := sp.TraceID(), sp.SpanID()
	id := hex.EncodeToString(tid[:]) + "-" + hex.EncodeToString(sid[:])
	start := sp.StartTimestamp().AsTime().UTC()
	out := map[string]any{
		"v": 1, "event_id": "otlp:" + id, "exchange_id": exchangeOf(sp), "kind": "exchange",
		"ts": start.Format(time.RFC3339Nano), "evidence": "envelope",
		"http.method": "POST", "request_body": "", "response_body": "",
	}
	service := str(res, "service.name")
	method := str(attrs, "mcp.method.name")
	unseen := false
	switch sp.Kind() {
	case ptrace.SpanKindClient:
		out["source"] = "client"
		setIf(out, "client_name", service)
		setIf(out, "client_version", str(res, "service.version"))
		setIf(out, "server", str(attrs, "server.address"))
		// A tool error is a result with isError, which a client span need
		// not mark (the Python SDK's does not): without error.type the
		// span shows the call was answered, not that the tool succeeded.
		unseen = method == "tools/call" && str(attrs, "error.type") == ""
	default:
		out["source"] = "server"
		setIf(out, "server", service)
	}
	setIf(out, "observer", cmpOr(str(res, "service.instance.id"), str(res, "host.name")))
	setIf(out, "session_id", str(attrs, "mcp.session.id"))
	if end := sp.EndTimestamp(); end >= sp.StartTimestamp() && end > 0 {
		out["duration_ms"] = float64(end.AsTime().Sub(start).Microseconds()) / 1000
	}
	// The span says an answer was produced; an HTTP status, when the span
	// has one, is the status, else 200 stands for "answered" (stdio and
	// in-process transports have none). A client span whose error.type
	// names a timeout got no answer at all.
	status := 200
	if v, ok := attrs.Get("http.response.status_code"); ok {
		status = int(v.Int())
	}
	errType := str(attrs, "error.type")
	if sp.Kind() == ptrace.SpanKindClient && (errType == "TimeoutError" || errType == "timeout") {
		out["transport_error"] = "timeout"
	} else {
		out["http.status"] = status
	}
	kept := map[string]any{}
	for _, k := range keptAttrs {
		if v, ok := attrs.Get(k); ok {
			kept[k] = v.AsString()
		}
	}
	if _, ok := kept["gen_ai.tool.name"]; !ok && method == "tools/call" {
		// The span name is "{method} {target}" (the MCP semantic
		// conventions; the Python SDK's client writes "MCP send {method}
		// {target}"): the tool a client span does not name otherwise.
		if _, target, ok := strings.Cut(sp.Name(), method+" "); ok && target != "" && !strings.Contains(target, " ") {
			kept["gen_ai.tool.name"] = target
		}
	}
	if unseen {
		kept[pipeline.AttrResultUnseen] = "true"
	}
	if msg := sp.Status().Message(); msg != "" {
		kept["mcp.error.message"] = msg
	}
	if sp.Status().Code() == ptrace.StatusCodeError {
		kept["otel.status_code"] = "ERROR"
	}
	out["attrs"] = kept
	return json.Marshal(out)
}

// exchangeOf is the exchange id of an MCP span: trace id and span id. A
// server span whose parent is the client span of the same request (the SDKs
// inject the client span's trace context into the request, SEP-414) takes
// the id the client span has, so that both views of one call are one
// exchange seen by two observers; the request id keeps apart what two
// server spans under one parent handled (a batch under an HTTP span).
func exchangeOf(sp ptrace.Span) string {
	tid, sid, parent := sp.TraceID(), sp.SpanID(), sp.ParentSpanID()
	reqID := str(sp.Attributes(), "jsonrpc.request.id")
	switch {
	case sp.Kind() == ptrace.SpanKindServer && !parent.IsEmpty() && reqID != "":
		return hex.EncodeToString(tid[:]) + "-" + hex.EncodeToString(parent[:]) + "-" + reqID
	case sp.Kind() == ptrace.SpanKindClient && reqID != "":
		return hex.EncodeToString(tid[:]) + "-" + hex.EncodeToString(sid[:]) + "-" + reqID
	}
	return hex.EncodeToString(tid[:]) + "-" + hex.EncodeToString(sid[:])
}

func str(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok {
		return v.AsString()
	}
	return ""
}

func setIf(out map[string]any, k, v string) {
	if v != "" {
		out[k] = v
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// spanJSON is the raw form of a span for a quarantine row.
func spanJSON(sp ptrace.Span) []byte {
	td := ptrace.NewTraces()
	sp.CopyTo(td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty())
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		return []byte(sp.Name())
	}
	return b
}
