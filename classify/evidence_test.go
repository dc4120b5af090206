package classify

import (
	"strings"
	"testing"
)

// TestEvidenceLevel: every Result names the evidence its record held, the
// level the store's evidence column keeps; the rules that read only a
// record without bodies carry it as their prefix, the rules that need no
// body at all (transport-error, no-response) do not, and their Result
// still says it.
func TestEvidenceLevel(t *testing.T) {
	env := &Envelope{Method: "tools/call", Tool: "t", Answered: true}
	for _, c := range []struct {
		name     string
		ex       Exchange
		evidence Evidence
		outcome  Outcome
		rule     string
	}{
		{"bodies", post(callReq, 200, jsonCT, good), EvidenceBodies, ToolSuccess, ""},
		{"unknown level reads the bodies", func() Exchange {
			ex := post(callReq, 200, jsonCT, good)
			ex.Evidence = "full"
			return ex
		}(), EvidenceBodies, ToolSuccess, ""},
		{"envelope", Exchange{HTTPMethod: "POST", Status: 200, Evidence: EvidenceEnvelope, Envelope: env},
			EvidenceEnvelope, ToolSuccess, "envelope-tool-success"},
		{"envelope transport error", Exchange{HTTPMethod: "POST", TransportError: "connection_refused", Evidence: EvidenceEnvelope, Envelope: env},
			EvidenceEnvelope, TransportError, "transport-error"},
		{"status only 2xx", Exchange{HTTPMethod: "POST", Status: 200, Evidence: EvidenceStatusOnly},
			EvidenceStatusOnly, Unverified, "status_only-2xx"},
		{"status only no response", Exchange{HTTPMethod: "POST", NoResponse: true, Evidence: EvidenceStatusOnly},
			EvidenceStatusOnly, NoResponse, "no-response"},
		{"bodies no response", Exchange{HTTPMethod: "POST", RequestBody: []byte(callReq), NoResponse: true},
			EvidenceBodies, NoResponse, "no-response"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Classify(&c.ex)
			if r.Evidence != c.evidence || r.Outcome != c.outcome || c.rule != "" && r.Rule != c.rule {
				t.Fatalf("evidence %q outcome %s rule %q, want %q %s %q", r.Evidence, r.Outcome, r.Rule, c.evidence, c.outcome, c.rule)
			}
			// The stores' migration derives old rows' evidence from this prefix.
			for _, l := range []Evidence{EvidenceEnvelope, EvidenceStatusOnly} {
				if strings.HasPrefix(r.Rule, string(l)+"-") && r.Evidence != l {
					t.Errorf("rule %q under evidence %q", r.Rule, r.Evidence)
				}
			}
		})
	}
}
