package otlpsource_test

import (
	"os"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/pipeline/enginetest"
	"github.com/mcplens/mcplens/pipeline/otlpsource"
	"github.com/mcplens/mcplens/schema"
)

// TestPythonSDKSpans runs the spans the official Python SDK's
// instrumentation emitted (testdata/record_spans.py) through the pipeline,
// in both encodings the Collector's Kafka exporter writes, and checks each
// exchange is classified as far as a span can show and no further.
func TestPythonSDKSpans(t *testing.T) {
	for _, file := range []string{"testdata/python-sdk.pb", "testdata/python-sdk.json"} {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			res := enginetest.Run(t, otlpsource.Format{}, raw)
			if len(res.Quarantine) != 0 {
				t.Fatalf("quarantined: %+v", res.Quarantine)
			}
			type key struct{ method, tool, id string }
			got := map[key]schema.Exchange{}
			for _, ex := range res.Exchanges {
				got[key{ex.Method, ex.ToolName, ex.JSONRPCID}] = ex
				if ex.Server != "python-mcp-demo" || ex.Source != "server" || ex.ExchangeID == "" || ex.Evidence != classify.EvidenceEnvelope {
					t.Errorf("exchange %+v: want server python-mcp-demo from a server span, evidence envelope", ex)
				}
			}
			f := func(method, tool, id string, outcome classify.Outcome, class classify.ErrorClass, rule string) {
				t.Helper()
				ex, ok := got[key{method, tool, id}]
				if !ok {
					t.Errorf("no exchange for %s %s id %s in %d", method, tool, id, len(got))
					return
				}
				if ex.Outcome != outcome || ex.ErrorClass != class || ex.Rule != rule {
					t.Errorf("%s %s id %s: %s/%s rule %s, want %s/%s rule %s", method, tool, id, ex.Outcome, ex.ErrorClass, ex.Rule, outcome, class, rule)
				}
			}
			f("tools/list", "", "2", classify.Success, "", "envelope-success")
			f("tools/call", "add", "3", classify.ToolSuccess, "", "envelope-tool-success")
			f("tools/call", "explode", "4", classify.ToolError, classify.ToolFailed, "envelope-tool-error")
			f("tools/call", "refuse", "5", classify.ToolError, classify.ToolFailed, "envelope-tool-error")
			f("tools/call", "add", "6", classify.ToolError, classify.ToolFailed, "envelope-tool-error")
			f("tools/call", "no_such_tool", "7", classify.ToolError, classify.ToolFailed, "envelope-tool-error")
			f("prompts/get", "", "8", classify.JSONRPCError, "", "envelope-handler-error")
			if len(res.Exchanges) != 8 {
				t.Errorf("%d exchanges, want 8 (one per server span)", len(res.Exchanges))
			}
		})
	}
}

// TestNotOTLP: a message that is not an export request is quarantined,
// whole, with the reason; spans without MCP attributes are skipped.
func TestNotOTLP(t *testing.T) {
	res := enginetest.Run(t, otlpsource.Format{}, []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"GET /","startTimeUnixNano":"1"}]}]}]}`), []byte("\x00\x01garbage"), []byte(`{"resourceSpans":"no"}`))
	if len(res.Exchanges) != 0 || len(res.Quarantine) != 2 {
		t.Fatalf("exchanges %d, quarantined %+v: want 0 and the two bad messages", len(res.Exchanges), res.Quarantine)
	}
	for _, q := range res.Quarantine {
		if q.Position == "" || q.Reason == "" {
			t.Errorf("quarantine row without position or reason: %+v", q)
		}
	}
}

func FuzzExpand(f *testing.F) {
	for _, file := range []string{"testdata/python-sdk.pb", "testdata/python-sdk.json"} {
		raw, _ := os.ReadFile(file)
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		otlpsource.Format{}.Expand(b, func([]byte, error) {})
	})
}

// TestPythonSDKClientAndServerSpans: the Python SDK over Streamable HTTP
// (testdata/record_http_spans.py) makes a client span per request sent and
// a server span per request handled, the server span a child of the client
// span. Both views of a call are one exchange seen by two observers, with
// the client's name and the server's verdict; client spans alone name the
// tool from the span name, and a tools/call without error.type (the client
// does not mark isError) is UNVERIFIED, not a success.
func TestPythonSDKClientAndServerSpans(t *testing.T) {
	type want struct {
		outcome classify.Outcome
		class   classify.ErrorClass
		rule    string
	}
	type key struct{ method, tool, id string }
	both := map[key]want{
		{"server/discover", "", "1"}:        {classify.Success, "", "envelope-success"},
		{"tools/list", "", "2"}:             {classify.Success, "", "envelope-success"},
		{"tools/call", "add", "3"}:          {classify.ToolSuccess, "", "envelope-tool-success"},
		{"tools/call", "explode", "4"}:      {classify.ToolError, classify.ToolFailed, "envelope-tool-error"},
		{"tools/call", "refuse", "5"}:       {classify.ToolError, classify.ToolFailed, "envelope-tool-error"},
		{"tools/call", "add", "6"}:          {classify.ToolError, classify.ToolFailed, "envelope-tool-error"},
		{"tools/call", "no_such_tool", "7"}: {classify.ToolError, classify.ToolFailed, "envelope-tool-error"},
		{"prompts/get", "", "8"}:            {classify.JSONRPCError, "", "envelope-handler-error"},
	}
	clientOnly := map[key]want{
		{"server/discover", "", "1"}:        {classify.Success, "", "envelope-success"},
		{"tools/list", "", "2"}:             {classify.Success, "", "envelope-success"},
		{"tools/call", "add", "3"}:          {classify.Unverified, "", "envelope-2xx"},
		{"tools/call", "explode", "4"}:      {classify.Unverified, "", "envelope-2xx"},
		{"tools/call", "refuse", "5"}:       {classify.Unverified, "", "envelope-2xx"},
		{"tools/call", "add", "6"}:          {classify.Unverified, "", "envelope-2xx"},
		{"tools/call", "no_such_tool", "7"}: {classify.Unverified, "", "envelope-2xx"},
		{"prompts/get", "", "8"}:            {classify.JSONRPCError, classify.InternalError, "envelope-jsonrpc-error"},
	}
	check := func(t *testing.T, res enginetest.Result, wants map[key]want, sources []string) {
		t.Helper()
		if len(res.Quarantine) != 0 || len(res.Exchanges) != len(wants) {
			t.Fatalf("%d exchanges, %d quarantined; want %d exchanges, one per call", len(res.Exchanges), len(res.Quarantine), len(wants))
		}
		for _, ex := range res.Exchanges {
			k := key{ex.Method, ex.ToolName, ex.JSONRPCID}
			w, ok := wants[k]
			if !ok {
				t.Errorf("unexpected exchange %+v", k)
				continue
			}
			if ex.Outcome != w.outcome || ex.ErrorClass != w.class || ex.Rule != w.rule {
				t.Errorf("%v: %s/%s rule %s, want %s/%s rule %s", k, ex.Outcome, ex.ErrorClass, ex.Rule, w.outcome, w.class, w.rule)
			}
			if !slices.Equal(ex.Sources, sources) || ex.ClientName != "python-mcp-client" || ex.Evidence != classify.EvidenceEnvelope {
				t.Errorf("%v: sources %v client %q evidence %s, want %v python-mcp-client envelope", k, ex.Sources, ex.ClientName, ex.Evidence, sources)
			}
			if slices.Contains(sources, "server") && ex.Server != "python-mcp-demo" {
				t.Errorf("%v: server %q, want python-mcp-demo from the server span", k, ex.Server)
			}
		}
	}
	for _, file := range []string{"testdata/python-sdk-http.pb", "testdata/python-sdk-http.json"} {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			check(t, enginetest.Run(t, otlpsource.Format{}, raw), both, []string{"client", "server"})
		})
	}
	t.Run("client spans alone", func(t *testing.T) {
		raw, err := os.ReadFile("testdata/python-sdk-http.pb")
		if err != nil {
			t.Fatal(err)
		}
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(raw)
		if err != nil {
			t.Fatal(err)
		}
		td.ResourceSpans().RemoveIf(func(rs ptrace.ResourceSpans) bool {
			name, _ := rs.Resource().Attributes().Get("service.name")
			return name.AsString() != "python-mcp-client"
		})
		only, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		check(t, enginetest.Run(t, otlpsource.Format{}, only), clientOnly, []string{"client"})
	})
}
