package classify_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// toExchange turns a recorded exchange event into the classifier's input,
// as the pipeline does.
func toExchange(ev *schema.Event) classify.Exchange {
	ex := classify.Exchange{
		HTTPMethod: ev.HTTPMethod, RequestHeaders: ev.RequestHeaders, RequestBody: []byte(ev.RequestBody),
		Status: ev.HTTPStatus, ResponseHeaders: ev.ResponseHeaders, ResponseBody: []byte(ev.ResponseBody),
		CloseReason: ev.CloseReason, TransportError: ev.TransportError, BodyTruncated: ev.BodyTruncated, ResponseTime: ev.TS,
	}
	if ev.StreamComplete != nil {
		ex.Stream = classify.StreamCut
		if *ev.StreamComplete {
			ex.Stream = classify.StreamComplete
		}
	}
	return ex
}

type realWant struct {
	outcome classify.Outcome
	class   classify.ErrorClass
}

// expectRecorded says what each step of the mcptest scenarios must be
// classified as. Only 2026-07-28 clients (the "modern" scenarios) see
// input_required; older ones get the elicitation inside the call.
func expectRecorded(scenario, step string, ev *schema.Event) realWant {
	switch {
	case ev.HTTPMethod == "GET" || ev.HTTPMethod == "DELETE":
		return realWant{classify.Success, ""}
	case ev.HTTPStatus == 202:
		return realWant{classify.Accepted, ""}
	}
	switch step {
	case "connect", "list tools":
		return realWant{classify.Success, ""}
	case "lookup", "delete item", "progress":
		return realWant{classify.ToolSuccess, ""}
	case "tool error":
		return realWant{classify.ToolError, classify.ToolFailed}
	case "unknown tool":
		if ev.HTTPStatus == 400 { // 2026-07-28: HTTP 400 carrying -32602
			return realWant{classify.HTTPError, classify.UnknownTool}
		}
		return realWant{classify.JSONRPCError, classify.UnknownTool}
	case "invalid arguments":
		return realWant{classify.ToolError, classify.ToolInputValidation}
	case "approve":
		var req struct {
			Params map[string]json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal([]byte(ev.RequestBody), &req)
		if strings.HasPrefix(scenario, "modern") && req.Params["inputResponses"] == nil {
			return realWant{classify.InputRequired, ""}
		}
		return realWant{classify.ToolSuccess, ""}
	case "unavailable then resent", "unavailable json then resent", "rate limited then resent":
		switch ev.HTTPStatus {
		case 503:
			return realWant{classify.HTTPError, classify.ServerError}
		case 429:
			return realWant{classify.HTTPError, classify.RateLimited}
		}
		return realWant{classify.ToolSuccess, ""}
	case "rate limited":
		return realWant{classify.HTTPError, classify.RateLimited}
	case "unauthorized":
		return realWant{classify.HTTPError, classify.AuthRequired}
	case "cut stream":
		return realWant{classify.StreamIncomplete, classify.ServerAbort}
	case "client gives up":
		if ev.RequestHeaders.Get("mcp-protocol-version") >= "2026-07-28" {
			// Closing the stream is the cancel on this revision.
			return realWant{classify.Cancelled, classify.RequestCancelled}
		}
		return realWant{classify.StreamIncomplete, classify.ClientAbort}
	case "malformed json", "malformed event":
		return realWant{classify.MalformedJSON, ""}
	}
	return realWant{"?", ""}
}

// TestRealSDKTraffic classifies exchanges recorded between the official Go
// SDK's clients and servers (testdata/real/gosdk.ndjson, refreshed by
// `go test ./mcptest -run TestCorpus -update`).
func TestRealSDKTraffic(t *testing.T) {
	f, err := os.Open("../testdata/real/gosdk.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	seen := map[classify.Outcome]int{}
	line := 0
	for sc.Scan() {
		line++
		var ev schema.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		var scenario, step string
		_ = json.Unmarshal(ev.Attrs["scenario"], &scenario)
		_ = json.Unmarshal(ev.Attrs["step"], &step)
		key := scenario + "/" + step
		want := expectRecorded(scenario, step, &ev)
		ex := toExchange(&ev)
		got := classify.Classify(&ex)
		// The "client gives up" body may hold the server's late isError
		// result; then the client's abort came after the answer.
		if step == "client gives up" && got.Outcome == classify.ToolError {
			want = realWant{classify.ToolError, classify.ToolFailed}
		}
		if got.Outcome != want.outcome || got.ErrorClass != want.class {
			t.Errorf("line %d %s (%s %d): %s/%q (rule %s), want %s/%q", line, key, ev.HTTPMethod, ev.HTTPStatus, got.Outcome, got.ErrorClass, got.Rule, want.outcome, want.class)
		}
		if got.Layer != got.Outcome.Layer() {
			t.Errorf("line %d: layer %s for %s", line, got.Layer, got.Outcome)
		}
		seen[got.Outcome]++
	}
	if line < 60 {
		t.Fatalf("only %d recorded exchanges", line)
	}
	for _, o := range []classify.Outcome{classify.Success, classify.ToolSuccess, classify.ToolError, classify.InputRequired, classify.Accepted,
		classify.HTTPError, classify.JSONRPCError, classify.MalformedJSON, classify.StreamIncomplete} {
		if seen[o] == 0 {
			t.Errorf("no recorded exchange classified %s", o)
		}
	}
	t.Logf("outcomes over %d recorded exchanges: %v", line, seen)
}
