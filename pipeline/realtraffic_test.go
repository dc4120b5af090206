package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/mcplens/mcplens/classify"
)

// TestRealTrafficEndToEnd runs the exchanges recorded between the official
// Go SDK's client and server through the tap (testdata/real/gosdk.ndjson)
// through the whole pipeline: every exchange comes out once, re-sends are
// linked to the attempt they repeat, the MRTR round continues its input
// request, and annotations learned from tools/list mark lookup read-only.
func TestRealTrafficEndToEnd(t *testing.T) {
	lines := readLines(t, "../testdata/real/gosdk.ndjson")
	sink, _ := runFile(t, testConfig(), lines)
	if len(sink.exchanges) != len(lines) {
		t.Fatalf("%d exchanges from %d recorded", len(sink.exchanges), len(lines))
	}
	steps := map[string][]int{}
	for i, r := range sink.exchanges {
		var ev struct {
			Attrs map[string]string `json:"attrs"`
		}
		for _, l := range lines {
			var e struct {
				EventID string            `json:"event_id"`
				Attrs   map[string]string `json:"attrs"`
			}
			if json.Unmarshal(l, &e) == nil && e.EventID == r.RequestEventID {
				ev.Attrs = e.Attrs
			}
		}
		key := ev.Attrs["scenario"] + "/" + ev.Attrs["step"]
		steps[key] = append(steps[key], i)
	}
	rec := func(key string, n int) int {
		t.Helper()
		if len(steps[key]) <= n {
			t.Fatalf("step %s has %d exchanges", key, len(steps[key]))
		}
		return steps[key][n]
	}
	for _, key := range []string{"legacy-sse/unavailable then resent", "legacy-json/unavailable json then resent", "modern-json/unavailable then resent", "modern-sse/rate limited then resent"} {
		first, retry := sink.exchanges[rec(key, 0)], sink.exchanges[rec(key, 1)]
		if retry.RetryOf != first.ExchangeID || retry.Attempt != 2 || retry.Outcome != classify.ToolSuccess {
			t.Errorf("%s: retry_of %q attempt %d outcome %s; first %s %s", key, retry.RetryOf, retry.Attempt, retry.Outcome, first.ExchangeID, first.Outcome)
		}
		// lookup is read-only by its annotations: the re-send is safe.
		if retry.UnknownSideEffectRetry || first.SideEffectRisk != classify.RiskNone {
			t.Errorf("%s: read-only tool flagged (unknown retry %v, risk %s)", key, retry.UnknownSideEffectRetry, first.SideEffectRisk)
		}
	}
	for _, key := range []string{"modern-sse/approve", "modern-json/approve"} {
		ask, answer := sink.exchanges[rec(key, 0)], sink.exchanges[rec(key, 1)]
		if ask.Outcome != classify.InputRequired || answer.Continues != ask.ExchangeID || answer.RetryOf != "" {
			t.Errorf("%s: %s then continues %q retry_of %q", key, ask.Outcome, answer.Continues, answer.RetryOf)
		}
	}
	if r := sink.exchanges[rec("legacy-sse/delete item", 0)]; r.SideEffectRisk != classify.RiskPossible {
		t.Errorf("destructive tool risk %s", r.SideEffectRisk)
	}
	if len(sink.anns) == 0 {
		t.Error("no tool annotations learned from tools/list")
	}
}
