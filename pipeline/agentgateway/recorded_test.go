package agentgateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/pipeline/agentgateway"
	"github.com/mcplens/mcplens/pipeline/enginetest"
	"github.com/mcplens/mcplens/schema"
)

// seen is a line of testdata/recorded/client.json: what the Go SDK client
// saw for one step of the recording (mcptest/agwrec).
type seen struct {
	Run, Step, Got, Detail string
	Code                   int64
	HTTP                   []string
}

// recordedLine is what the test needs of a raw access-log line: the step
// that caused it (the x-mcplens-step header the recorder sent) and its MCP
// method.
type recordedLine struct {
	ts                          time.Time
	step, mcpMethod, httpMethod string
}

func readRecorded(t *testing.T) ([][]byte, []recordedLine, map[string]seen) {
	t.Helper()
	raw, err := os.ReadFile("testdata/recorded/access.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	var reqs []recordedLine
	for _, l := range lines {
		var in struct {
			Scope   string            `json:"scope"`
			Time    time.Time         `json:"time"`
			Method  string            `json:"mcp.method.name"`
			HTTP    string            `json:"http.method"`
			Headers map[string]string `json:"rq.headers.all"`
		}
		if err := json.Unmarshal(l, &in); err != nil {
			t.Fatalf("not a JSON line: %s", l)
		}
		if in.Scope == "request" {
			reqs = append(reqs, recordedLine{ts: in.Time, step: in.Headers["x-mcplens-step"], mcpMethod: in.Method, httpMethod: in.HTTP})
		}
	}
	f, err := os.Open("testdata/recorded/client.json")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	client := map[string]seen{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s seen
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		client[s.Run+"/"+s.Step] = s
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines, reqs, client
}

// TestRecordedAccessLog runs the lines a real agentgateway wrote
// (testdata/recorded, see its README) through the pipeline and requires,
// for every call of the recording, the record of what the client saw.
func TestRecordedAccessLog(t *testing.T) {
	lines, reqs, client := readRecorded(t)
	res := enginetest.Run(t, agentgateway.Format{}, lines...)
	if len(res.Quarantine) != 0 {
		t.Errorf("%d real lines quarantined: %+v", len(res.Quarantine), res.Quarantine)
	}
	// Without tracing agentgateway logs no trace.id/span.id, so the
	// exchange of a line is found by its time (unique in the recording).
	byTS := map[int64]schema.Exchange{}
	for _, ex := range res.Exchanges {
		byTS[ex.TS.UnixNano()] = ex
	}
	if len(byTS) != len(reqs) || len(res.Exchanges) != len(reqs) {
		t.Errorf("%d exchanges (%d times) for %d request lines", len(res.Exchanges), len(byTS), len(reqs))
	}
	for _, w := range recordedWants {
		c, ok := client[w.step]
		if !ok {
			t.Errorf("%s: not in client.json", w.step)
			continue
		}
		if c.Got != w.clientGot {
			t.Errorf("%s: the client saw %s (%s), the test expects %s: re-recorded?", w.step, c.Got, c.Detail, w.clientGot)
		}
		n := 0
		for _, r := range reqs {
			if r.step != w.step || r.mcpMethod != w.mcpMethod {
				continue
			}
			n++
			ex, ok := byTS[r.ts.UnixNano()]
			if !ok {
				t.Errorf("%s: no exchange at %s", w.step, r.ts)
				continue
			}
			if ex.Outcome != w.outcome || ex.ErrorClass != w.class {
				t.Errorf("%s (%s, client saw %s %d %q): %s/%s rule %s, want %s/%s", w.step, w.mcpMethod, c.Got, c.Code, c.Detail,
					ex.Outcome, ex.ErrorClass, ex.Rule, w.outcome, w.class)
			}
			// A call that got no answer has no response body to log.
			if ex.Evidence != classify.EvidenceBodies && ex.HTTPStatus != 0 {
				t.Errorf("%s: evidence %s, want bodies (the shipped config captures them)", w.step, ex.Evidence)
			}
		}
		if n != 1 {
			t.Errorf("%s: %d %s lines, want 1", w.step, n, w.mcpMethod)
		}
	}
}

type recordedWant struct {
	step      string // run/step
	clientGot string // what the client saw (client.json)
	mcpMethod string
	outcome   classify.Outcome
	class     classify.ErrorClass
}

// recordedWants: per call of the recording, what the Go SDK client saw
// (client.json) and the record that says the same.
var recordedWants = []recordedWant{
	// A session set up: initialize answered over SSE.
	{"shipped/connect", "none", "initialize", classify.Success, ""},
	{"shipped/list_tools", "result", "tools/list", classify.Success, ""},
	{"shipped/call_ok", "result", "tools/call", classify.ToolSuccess, ""},
	// always_fails: a result with isError true.
	{"shipped/tool_error", "tool_error", "tools/call", classify.ToolError, classify.ToolFailed},
	// -32602 unknown tool "no_such_tool", from the Go SDK server through agentgateway.
	{"shipped/unknown_tool", "jsonrpc_error", "tools/call", classify.JSONRPCError, classify.UnknownTool},
	// The Go SDK answers a schema violation with isError true, not -32602.
	{"shipped/invalid_params", "tool_error", "tools/call", classify.ToolError, classify.ToolInputValidation},
	// Progress notifications, then the result, on one SSE stream.
	{"shipped/sse_progress", "result", "tools/call", classify.ToolSuccess, ""},
	// The client gave up after 200 ms (context deadline exceeded), closed
	// the request and sent notifications/cancelled; agentgateway logged
	// the call with neither a status nor an error.
	{"shipped/client_abort", "call_error", "tools/call", classify.TransportError, classify.ClientAbort},
	{"shipped/client_abort", "call_error", "notifications/cancelled", classify.Accepted, ""},
	{"shipped/call_after_abort", "result", "tools/call", classify.ToolSuccess, ""},
	// The upstream stopped: the client got agentgateway's own 500.
	{"shipped/upstream_down_call", "call_error", "tools/call", classify.TransportError, classify.ConnectionRefused},
	// A new session with the upstream down: 500 to initialize, which the
	// Go SDK reports as -32005 "rejected by transport".
	{"shipped/connect_upstream_down", "jsonrpc_error", "initialize", classify.TransportError, classify.ConnectionRefused},
	{"timeout/call_ok", "result", "tools/call", classify.ToolSuccess, ""},
	// count_slowly for 2 s behind a 1 s requestTimeout: agentgateway's own
	// 504 "request timeout", -32005 in the Go SDK.
	{"timeout/route_timeout", "jsonrpc_error", "tools/call", classify.TransportError, classify.Timeout},
}
