package pipeline

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/classify"
)

// TestServerMetricsCap runs every correlate fixture with a cap of two
// servers: the first two servers seen keep their label, the rest are
// _other, every emitted exchange is counted once in its outcome class,
// and the engine's Stats agree with what the sink stored.
func TestServerMetricsCap(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "correlate", "*.ndjson"))
	if err != nil || len(files) == 0 {
		t.Fatal("no correlate fixtures", err)
	}
	// Every fixture's traffic goes to a server of its own: seven servers.
	var lines [][]byte
	for _, f := range files {
		server := []byte(`"server": "` + strings.TrimSuffix(filepath.Base(f), ".ndjson") + `"`)
		for _, l := range readLines(t, f) {
			lines = append(lines, bytes.ReplaceAll(l, []byte(`"server": "files"`), server))
		}
	}
	cfg := testConfig()
	cfg.MetricsMaxServers = 2
	reg := prometheus.NewPedanticRegistry()
	src, sink := newSliceSource("all.ndjson", lines), &memSink{}
	e, err := New(cfg, Deps{Source: src, Sink: sink, Logger: zerolog.Nop(), Registerer: reg, Now: func() time.Time { return time.Unix(0, 0).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}

	// What the metrics should say, from the records in emission order.
	want := map[[2]string]float64{}
	wantRetries := map[string]float64{}
	own := map[string]bool{}
	outcomes := map[classify.Outcome]int64{}
	for _, x := range sink.exchanges {
		label := x.Server
		switch {
		case label == "":
			label = NoServer
		case own[label]:
		case len(own) < 2:
			own[label] = true
		default:
			label = OtherServer
		}
		want[[2]string{label, OutcomeClass(x.Outcome)}]++
		if x.UnknownSideEffectRetry {
			wantRetries[label]++
		}
		outcomes[x.Outcome]++
	}
	if len(own) < 2 || want[[2]string{OtherServer, ClassOK}]+want[[2]string{OtherServer, ClassHTTP200Failed}] == 0 {
		t.Fatalf("fixtures too narrow for the test: servers %v, counts %v", own, want)
	}
	if len(wantRetries) == 0 {
		t.Fatal("fixtures have no unknown side-effect retry")
	}

	got := map[[2]string]float64{}
	gotRetries := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "mcplens_ingest_server_exchanges_total":
				got[[2]string{label(m, "server"), label(m, "class")}] += m.GetCounter().GetValue()
			case "mcplens_ingest_unknown_side_effect_retries_total":
				gotRetries[label(m, "server")] += m.GetCounter().GetValue()
			}
		}
	}
	if !equalMaps(got, want) {
		t.Errorf("server_exchanges_total:\n got %v\nwant %v", got, want)
	}
	if !equalMaps(gotRetries, wantRetries) {
		t.Errorf("unknown_side_effect_retries_total: got %v, want %v", gotRetries, wantRetries)
	}

	st := e.Stats()
	if st.Events != int64(len(lines)) || st.Accepted+st.Duplicates+st.Quarantined != st.Events || st.Duplicates == 0 {
		t.Errorf("stats events %d (accepted %d, duplicates %d, quarantined %d), want %d lines read", st.Events, st.Accepted, st.Duplicates, st.Quarantined, len(lines))
	}
	if st.Stored != int64(len(sink.exchanges)) || st.TotalExchanges() != st.Stored || !equalMaps(st.Exchanges, outcomes) {
		t.Errorf("stats exchanges %v (stored %d), sink has %d: %v", st.Exchanges, st.Stored, len(sink.exchanges), outcomes)
	}
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func equalMaps[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestOutcomeClass(t *testing.T) {
	f := func(o classify.Outcome, want string) {
		t.Helper()
		if got := OutcomeClass(o); got != want {
			t.Errorf("OutcomeClass(%s) = %s, want %s", o, got, want)
		}
	}
	f(classify.Success, ClassOK)
	f(classify.ToolSuccess, ClassOK)
	f(classify.Accepted, ClassOK)
	f(classify.InputRequired, ClassInputRequired)
	f(classify.JSONRPCError, ClassHTTP200Failed)
	f(classify.ToolError, ClassHTTP200Failed)
	f(classify.MalformedJSON, ClassHTTP200Failed)
	f(classify.InvalidEnvelope, ClassHTTP200Failed)
	f(classify.InvalidToolResult, ClassHTTP200Failed)
	f(classify.UnexpectedResponse, ClassHTTP200Failed)
	f(classify.StreamIncomplete, ClassStreamCut)
	f(classify.HTTPError, ClassHTTPError)
	f(classify.TransportError, ClassNoAnswer)
	f(classify.NoResponse, ClassNoAnswer)
	// The client's cancel and a record that cannot show the outcome are
	// not a server's failed 2xx: the MCPLensServerHTTP200Failing alert
	// must not page for them.
	f(classify.Cancelled, ClassCancelled)
	f(classify.Unverified, ClassUnverified)
	for _, o := range classify.Outcomes {
		if OutcomeClass(o) == ClassHTTP200Failed && o.Layer() != classify.LayerProtocol && o.Layer() != classify.LayerApplication {
			t.Errorf("OutcomeClass(%s) = http200_failed, but its layer is %s", o, o.Layer())
		}
	}
}
