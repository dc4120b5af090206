package pipeline

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/mcptest"
	"github.com/mcplens/mcplens/schema"
)

// sdkRun is one SDK recording and what the pipeline made of it alone.
type sdkRun struct {
	sdk    string
	evs    []schema.Event
	recs   map[string]schema.Exchange // by the recorded exchange id
	byStep map[string][]string        // scenario/step -> tools/call exchange ids in order
}

func runSDKRecording(t *testing.T, sdk string, m mcptest.Manifest) sdkRun {
	t.Helper()
	evs, err := mcptest.ReadEvents("../testdata/real/" + sdk + ".ndjson")
	if err != nil {
		t.Fatal(err)
	}
	sink, _ := runFile(t, testConfig(), readLines(t, "../testdata/real/"+sdk+".ndjson"))
	run := sdkRun{sdk: sdk, evs: evs, recs: map[string]schema.Exchange{}, byStep: map[string][]string{}}
	for _, r := range sink.exchanges {
		run.recs[r.ExchangeID] = r
	}
	if len(sink.exchanges) != len(evs) || len(run.recs) != len(evs) {
		t.Fatalf("%s: %d records (%d ids) from %d recorded exchanges", sdk, len(sink.exchanges), len(run.recs), len(evs))
	}
	for _, ev := range evs {
		if r := run.recs[ev.ExchangeID]; r.Method == "tools/call" {
			k := mcptest.Attr(ev, "scenario") + "/" + mcptest.Attr(ev, "step")
			run.byStep[k] = append(run.byStep[k], ev.ExchangeID)
		}
	}
	return run
}

func (run sdkRun) ref(t *testing.T, scenario string, r mcptest.Ref) string {
	t.Helper()
	ids := run.byStep[scenario+"/"+r.Step]
	if r.N >= len(ids) {
		t.Fatalf("%s/%s: step %q has %d tools/call exchanges, the manifest names #%d", run.sdk, scenario, r.Step, len(ids), r.N)
	}
	return ids[r.N]
}

// TestOtherSDKsThroughThePipeline runs the Python, Rust and TypeScript (v1
// and v2) recordings through the whole pipeline, as the gateway logged them, and
// checks against the manifest: every exchange once with its verdict, one
// client name for everything a client did (initialize named it; the other
// exchanges carried only a User-Agent), retry chains within a session,
// across a session loss (cut mid-call, 404, new session) and without
// sessions (2026-07-28), and each cancel in the chain of the call it
// cancelled.
func TestOtherSDKsThroughThePipeline(t *testing.T) {
	m, err := mcptest.ReadManifest("../testdata/real/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, sdk := range mcptest.SDKRecordings {
		t.Run(sdk, func(t *testing.T) {
			run := runSDKRecording(t, sdk, m)
			checkVerdicts(t, run, m)
			checkChains(t, run, m)
			checkCancels(t, run)
		})
	}
}

func checkVerdicts(t *testing.T, run sdkRun, m mcptest.Manifest) {
	t.Helper()
	next := map[string]int{}
	for _, ev := range run.evs {
		sc := mcptest.Attr(ev, "scenario")
		want := m.Exchanges[run.sdk][sc][next[sc]]
		next[sc]++
		r := run.recs[ev.ExchangeID]
		where := fmt.Sprintf("%s/%s/%s %s %s", run.sdk, sc, want.Step, want.HTTPMethod, want.Method)
		if v := want.Final(); string(r.Outcome) != v.Outcome || string(r.ErrorClass) != v.Class || string(r.RetryAdvice) != v.Advice {
			t.Errorf("%s: %s/%s/%s (rule %s), want %s/%s/%s", where, r.Outcome, r.ErrorClass, r.RetryAdvice, r.Rule, v.Outcome, v.Class, v.Advice)
		}
		if r.Outcome == classify.Cancelled && (r.Layer != classify.LayerInteraction || r.OutcomeKnown) {
			t.Errorf("%s: cancelled in layer %s, outcome_known %v", where, r.Layer, r.OutcomeKnown)
		}
		if c := m.ClientOf(run.sdk, sc, want); r.ClientName != c {
			t.Errorf("%s: client %q, want %q (logged %q)", where, r.ClientName, c, ev.ClientName)
		}
		if !r.OneSided || !slices.Equal(r.Sources, []string{"gateway"}) {
			t.Errorf("%s: sources %v one_sided %v, only the gateway logged it", where, r.Sources, r.OneSided)
		}
	}
}

func checkChains(t *testing.T, run sdkRun, m mcptest.Manifest) {
	t.Helper()
	retried := map[string]mcptest.Retry{}
	scenarioOf := map[string]string{}
	for sc, rs := range m.Retries[run.sdk] {
		for _, r := range rs {
			id := run.ref(t, sc, mcptest.Ref{Step: r.Step, N: r.N})
			retried[id], scenarioOf[id] = r, sc
		}
	}
	for _, ids := range run.byStep {
		for _, id := range ids {
			r := run.recs[id]
			want, ok := retried[id]
			if !ok {
				if r.Attempt != 1 || r.RetryOf != "" || r.ChainID != r.ExchangeID || r.UnknownSideEffectRetry {
					t.Errorf("%s %s (%s): attempt %d retry_of %q chain %q unknown %v, want a first attempt", run.sdk, id, r.ToolName, r.Attempt, r.RetryOf, r.ChainID, r.UnknownSideEffectRetry)
				}
				continue
			}
			sc := scenarioOf[id]
			of := run.ref(t, sc, want.RetryOf)
			chain := run.recs[of].ChainID
			if want.Chain != nil {
				chain = run.ref(t, sc, *want.Chain)
			}
			if r.Attempt != want.Attempt || r.RetryOf != of || r.ChainID != chain || r.UnknownSideEffectRetry != want.UnknownSideEffectRetry {
				t.Errorf("%s/%s/%s #%d: attempt %d retry_of %q chain %q unknown %v; want attempt %d retry_of %q chain %q unknown %v",
					run.sdk, sc, want.Step, want.N, r.Attempt, r.RetryOf, r.ChainID, r.UnknownSideEffectRetry, want.Attempt, of, chain, want.UnknownSideEffectRetry)
			}
		}
	}
}

// checkCancels finds each notifications/cancelled in the recording and the
// request it names (same session, params.requestId) and wants the cancel
// in that request's chain.
func checkCancels(t *testing.T, run sdkRun) {
	t.Helper()
	n := 0
	for _, ev := range run.evs {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(ev.RequestBody), &msg) != nil || msg.Method != "notifications/cancelled" {
			continue
		}
		var target *schema.Event
		for i := range run.evs {
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			c := &run.evs[i]
			if c.SessionID == ev.SessionID && json.Unmarshal([]byte(c.RequestBody), &req) == nil && string(req.ID) == string(msg.Params.RequestID) && c.TS.Before(ev.TS) {
				target = c
			}
		}
		if target == nil {
			t.Errorf("%s: cancel of %s names no recorded request", run.sdk, msg.Params.RequestID)
			continue
		}
		n++
		cancel, call := run.recs[ev.ExchangeID], run.recs[target.ExchangeID]
		if cancel.ChainID != call.ChainID || cancel.ChainID == cancel.ExchangeID {
			t.Errorf("%s: cancel %s in chain %q, the call it cancels (%s) in %q", run.sdk, ev.ExchangeID, cancel.ChainID, target.ExchangeID, call.ChainID)
		}
	}
	if n == 0 {
		t.Errorf("%s: no cancel in the recording", run.sdk)
	}
}

// TestOtherSDKsFromTwoObservers ships each recording as a gateway and the
// client application log it in production (mcptest.TwoViews: split
// records, no shared exchange id, the client's clock up to a second off,
// each shipper late by its own delays, redelivered lines, a poison line),
// under several seeds, and wants the same answers as from the gateway
// alone, now with both sources, the client's conclusion and its
// disagreements.
func TestOtherSDKsFromTwoObservers(t *testing.T) {
	m, err := mcptest.ReadManifest("../testdata/real/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, sdk := range append([]string{"gosdk"}, mcptest.SDKRecordings...) {
		var alone sdkRun
		if sdk == "gosdk" {
			alone = goSDKAlone(t)
		} else {
			alone = runSDKRecording(t, sdk, m)
		}
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", sdk, seed), func(t *testing.T) {
				lines, views := mcptest.TwoViews(alone.evs, mcptest.ViewOptions{Seed: seed})
				sink, _ := runFile(t, testConfig(), lines)
				checkTwoViews(t, alone, views, sink)
			})
		}
	}
}

func goSDKAlone(t *testing.T) sdkRun {
	t.Helper()
	evs, err := mcptest.ReadEvents("../testdata/real/gosdk.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	sink, _ := runFile(t, testConfig(), readLines(t, "../testdata/real/gosdk.ndjson"))
	run := sdkRun{sdk: "gosdk", evs: evs, recs: map[string]schema.Exchange{}}
	for _, r := range sink.exchanges {
		run.recs[r.ExchangeID] = r
	}
	if len(run.recs) != len(evs) {
		t.Fatalf("gosdk: %d records from %d", len(run.recs), len(evs))
	}
	return run
}

func checkTwoViews(t *testing.T, alone sdkRun, views []mcptest.View, sink *memSink) {
	t.Helper()
	if len(sink.quar) != 1 {
		t.Errorf("%d lines quarantined, want the one poison line", len(sink.quar))
	}
	got := map[string]schema.Exchange{}
	for _, r := range sink.exchanges {
		if _, dup := got[r.ExchangeID]; dup {
			t.Errorf("exchange %s emitted twice", r.ExchangeID)
		}
		got[r.ExchangeID] = r
	}
	if len(sink.exchanges) != len(views) {
		var orphans []string
		for _, r := range sink.exchanges {
			if _, ok := alone.recs[r.ExchangeID]; !ok {
				orphans = append(orphans, fmt.Sprintf("%s %s %s id %s", r.Source, r.Method, r.SessionID, r.JSONRPCID))
			}
		}
		t.Fatalf("%d records from %d exchanges; not merged: %s", len(sink.exchanges), len(views), strings.Join(orphans, "; "))
	}
	for _, v := range views {
		r, ok := got[v.GatewayID]
		a := alone.recs[v.GatewayID]
		if !ok {
			t.Errorf("exchange %s (%s) missing", v.GatewayID, a.Method)
			continue
		}
		where := fmt.Sprintf("%s %s id %s", a.Method, a.SessionID, a.JSONRPCID)
		wantSources := []string{"gateway"}
		if v.Client {
			wantSources = []string{"client", "gateway"}
		}
		if !slices.Equal(r.Sources, wantSources) || r.OneSided != !v.Client {
			t.Errorf("%s: sources %v one_sided %v, want %v", where, r.Sources, r.OneSided, wantSources)
		}
		if r.Outcome != a.Outcome || r.ErrorClass != a.ErrorClass || r.HTTPStatus != a.HTTPStatus || r.ClientName != a.ClientName {
			t.Errorf("%s: %s/%s %d client %q, from the gateway alone %s/%s %d client %q", where, r.Outcome, r.ErrorClass, r.HTTPStatus, r.ClientName, a.Outcome, a.ErrorClass, a.HTTPStatus, a.ClientName)
		}
		if v.Attempt == 1 && a.Attempt > 1 {
			// The client logged a first attempt where the gateway alone
			// could only guess from the client's name (two stateless
			// clients of one name, seconds apart): the client's word wins.
			a.Attempt, a.RetryOf, a.ChainID, a.UnknownSideEffectRetry = 1, "", r.ExchangeID, false
		}
		if r.Attempt != a.Attempt || r.RetryOf != a.RetryOf || r.ChainID != a.ChainID || r.UnknownSideEffectRetry != a.UnknownSideEffectRetry {
			t.Errorf("%s: attempt %d retry_of %q chain %q unknown %v, from the gateway alone %d %q %q %v", where,
				r.Attempt, r.RetryOf, r.ChainID, r.UnknownSideEffectRetry, a.Attempt, a.RetryOf, a.ChainID, a.UnknownSideEffectRetry)
		}
		if r.ClientOutcome != v.ClientOutcome {
			t.Errorf("%s: client_outcome %q, the client logged %q", where, r.ClientOutcome, v.ClientOutcome)
		}
		ok2 := r.Outcome == classify.Success || r.Outcome == classify.ToolSuccess || r.Outcome == classify.Accepted
		wantDisagree := (v.ClientOutcome == "success" && !ok2 && r.Outcome != classify.InputRequired) || (v.ClientOutcome == "error" && ok2)
		if r.ClientDisagrees != wantDisagree {
			t.Errorf("%s: client_disagrees %v for client %q on %s", where, r.ClientDisagrees, v.ClientOutcome, r.Outcome)
		}
	}
}
