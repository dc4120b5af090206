package classify_test

import (
	"fmt"
	"testing"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/mcptest"
)

// TestOtherSDKsTraffic classifies the traffic recorded between the Python
// (mcp 2.3.0), Rust (rmcp 3.11.0) and TypeScript (1.32.2, and v2 2.4.0)
// SDKs' own
// clients and servers (testdata/real, re-recorded by
// mcptest/sdkrec/record.sh) and checks every exchange against the
// manifest written from what each SDK did on the wire.
func TestOtherSDKsTraffic(t *testing.T) {
	m, err := mcptest.ReadManifest("../testdata/real/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[classify.Outcome]int{}
	for _, sdk := range mcptest.SDKRecordings {
		evs, err := mcptest.ReadEvents("../testdata/real/" + sdk + ".ndjson")
		if err != nil {
			t.Fatal(err)
		}
		next := map[string]int{}
		seen[sdk] = map[classify.Outcome]int{}
		for i, ev := range evs {
			scenario := mcptest.Attr(ev, "scenario")
			rows := m.Exchanges[sdk][scenario]
			n := next[scenario]
			next[scenario]++
			if n >= len(rows) {
				t.Fatalf("%s line %d: %s has %d exchanges in the manifest", sdk, i+1, scenario, len(rows))
			}
			want := rows[n]
			ex := toExchange(&ev)
			got := classify.Classify(&ex)
			where := fmt.Sprintf("%s line %d %s/%s", sdk, i+1, scenario, want.Step)
			if mcptest.Attr(ev, "step") != want.Step || ev.HTTPMethod != want.HTTPMethod || got.Method != want.Method || ev.HTTPStatus != want.Status {
				t.Fatalf("%s: recorded %s %s %q %d, the manifest says %s %s %q %d: re-record both together", where,
					mcptest.Attr(ev, "step"), ev.HTTPMethod, got.Method, ev.HTTPStatus, want.Step, want.HTTPMethod, want.Method, want.Status)
			}
			if string(got.Outcome) != want.Outcome || string(got.ErrorClass) != want.Class || string(got.RetryAdvice) != want.Advice {
				t.Errorf("%s (%s %d): %s/%s/%s (rule %s), want %s/%s/%s", where, want.Method, want.Status,
					got.Outcome, got.ErrorClass, got.RetryAdvice, got.Rule, want.Outcome, want.Class, want.Advice)
			}
			if got.Layer != got.Outcome.Layer() {
				t.Errorf("%s: layer %s for %s", where, got.Layer, got.Outcome)
			}
			seen[sdk][got.Outcome]++
		}
		for scenario, rows := range m.Exchanges[sdk] {
			if next[scenario] != len(rows) {
				t.Errorf("%s/%s: %d exchanges recorded, %d in the manifest", sdk, scenario, next[scenario], len(rows))
			}
		}
	}
	// The habits the recordings exist for.
	for sdk, outcomes := range map[string][]classify.Outcome{
		"python":     {classify.Cancelled, classify.ToolError, classify.StreamIncomplete, classify.HTTPError},
		"rust":       {classify.Cancelled, classify.JSONRPCError, classify.ToolError, classify.StreamIncomplete, classify.HTTPError},
		"typescript": {classify.ToolError, classify.StreamIncomplete, classify.HTTPError},
		// v2 on the 2026-07-28 wire: the client cancels by closing the
		// stream, before any status.
		"typescript2": {classify.Cancelled, classify.ToolError, classify.StreamIncomplete, classify.HTTPError, classify.TransportError},
	} {
		for _, o := range outcomes {
			if seen[sdk][o] == 0 {
				t.Errorf("%s: no recorded exchange classified %s", sdk, o)
			}
		}
	}
}
