package mcptest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/mcplens/mcplens/schema"
)

// SDKRecordings are the recordings of other SDKs' traffic that sdkrec made
// (testdata/real/<name>.ndjson), described by testdata/real/manifest.json.
var SDKRecordings = []string{"python", "rust", "typescript", "typescript2"}

// Manifest is the ground truth of the SDK recordings, written by a person
// from what each SDK did on the wire (not from mcplens' output).
type Manifest struct {
	// Client is the one client name every exchange of a recording names.
	Client map[string]string `json:"client"`
	// Exchanges lists, per recording and scenario, every recorded exchange
	// in file order.
	Exchanges map[string]map[string][]Expected `json:"exchanges"`
	// Retries lists, per recording and scenario, the tools/call exchanges
	// that re-send an earlier one; every other call is a first attempt.
	Retries map[string]map[string][]Retry `json:"retries"`
	// UserAgentOnly names, per recording and scenario, the client name
	// every exchange but initialize carries where nothing else on the
	// wire names the client (2025-era requests without a session): the
	// User-Agent's.
	UserAgentOnly map[string]map[string]string `json:"user_agent_only"`
}

// ClientOf is the client name an exchange of a recording's scenario
// must carry.
func (m Manifest) ClientOf(sdk, scenario string, e Expected) string {
	if ua, ok := m.UserAgentOnly[sdk][scenario]; ok && e.Method != "initialize" {
		return ua
	}
	return m.Client[sdk]
}

// Expected is one recorded exchange and its verdict.
type Expected struct {
	Step, HTTPMethod, Method string
	Status                   int
	Outcome, Class, Advice   string
	// Pipeline is the verdict once the exchange is seen with the others
	// (a call whose stream the client's notifications/cancelled cut is
	// CANCELLED), when it differs from the exchange's alone.
	Pipeline *Verdict
}

// Verdict is an outcome, error class and retry advice.
type Verdict struct{ Outcome, Class, Advice string }

// Final is the verdict the pipeline gives the exchange.
func (e Expected) Final() Verdict {
	if e.Pipeline != nil {
		return *e.Pipeline
	}
	return Verdict{e.Outcome, e.Class, e.Advice}
}

// UnmarshalJSON reads the manifest's array form.
func (e *Expected) UnmarshalJSON(b []byte) error {
	var a []any
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if len(a) != 7 && len(a) != 10 {
		return fmt.Errorf("manifest exchange %s: want 7 fields, or 10 with the pipeline's verdict", b)
	}
	str := func(i int) string { s, _ := a[i].(string); return s }
	status, _ := a[3].(float64)
	*e = Expected{Step: str(0), HTTPMethod: str(1), Method: str(2), Status: int(status), Outcome: str(4), Class: str(5), Advice: str(6)}
	if len(a) == 10 {
		e.Pipeline = &Verdict{str(7), str(8), str(9)}
	}
	return nil
}

// Ref names the n-th tools/call (from 0) of a step.
type Ref struct {
	Step string
	N    int
}

// UnmarshalJSON reads ["step", n].
func (r *Ref) UnmarshalJSON(b []byte) error {
	var a []any
	if err := json.Unmarshal(b, &a); err != nil || len(a) != 2 {
		return fmt.Errorf("manifest ref %s: want [step, n]", b)
	}
	s, _ := a[0].(string)
	n, _ := a[1].(float64)
	*r = Ref{Step: s, N: int(n)}
	return nil
}

// Retry is one re-sent call.
type Retry struct {
	Step    string `json:"step"`
	N       int    `json:"n"`
	Attempt int    `json:"attempt"`
	RetryOf Ref    `json:"retry_of"`
	// Chain is the chain's first attempt; empty means RetryOf.
	Chain                  *Ref `json:"chain"`
	UnknownSideEffectRetry bool `json:"unknown_side_effect_retry"`
}

// ReadManifest reads testdata/real/manifest.json.
func ReadManifest(path string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(path)
	if err != nil {
		return m, fmt.Errorf("read manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("parse manifest %s: %w", path, err)
	}
	return m, nil
}

// ReadEvents reads a recording, one event per line.
func ReadEvents(path string) ([]schema.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open recording: %w", err)
	}
	defer f.Close()
	var evs []schema.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var ev schema.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		evs = append(evs, ev)
	}
	return evs, sc.Err()
}

// Attr returns a string attribute of a recorded event (scenario, step,
// client_got).
func Attr(ev schema.Event, k string) string { return attr(ev, k) }
