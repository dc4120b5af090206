package pipeline

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/mcplens/mcplens/schema"
)

// TestSkewedClientClocksMerge: clients whose clocks run up to 3 s off,
// more than the 2 s merge window, their lines read where they were
// shipped (at the real time of the response, not where their own clocks
// put them). Once merges by exchange_id have taught a client's offset,
// each client view joins its gateway view; only the first seconds, before
// any offset is known, may leave a client view apart. Before, a client
// view carrying the gateway's exchange_id but more than the merge window
// off stayed a record of its own, and a client clock running ahead moved
// its stream's event time ahead and closed the merge windows of other
// exchanges before their client views arrived: 2,758 of 104,227 calls of
// the same shape came out twice.
func TestSkewedClientClocksMerge(t *testing.T) {
	g, err := loadgen.New(loadgen.Config{Seed: 77, Calls: 40_000, Rate: 400, ClientShare: 0.2,
		ClientSkew: 3 * time.Second, ClientShipped: true})
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for _, line := range g.Lines() {
		lines = append(lines, bytes.Clone(line))
	}
	truth := g.Truth()
	cfg := testConfig()
	cfg.Correlator.PairWindow = g.Config().PairWindow(cfg.Correlator.PairWindow)
	sink, _ := runFile(t, cfg, lines)

	start := g.Config().Start
	if start.IsZero() {
		start = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	}
	var apart, late, merged int
	for _, r := range sink.exchanges {
		switch {
		case slices.Equal(r.Sources, []string{"client"}):
			apart++
			if r.TS.After(start.Add(15 * time.Second)) {
				late++
			}
		case slices.Contains(r.Sources, "client"):
			merged++
		}
	}
	t.Logf("%d records for %d calls; client views merged %d, apart %d (%d after the first 15 s)",
		len(sink.exchanges), truth.Exchanges, merged, apart, late)
	if late > 0 {
		t.Errorf("%d client views past the first 15 s did not join their gateway views", late)
	}
	if extra := len(sink.exchanges) - truth.Exchanges; extra != apart {
		t.Errorf("%d records more than calls, but %d client views apart", extra, apart)
	}
	if merged < 7_000 {
		t.Errorf("only %d merged client views; the load has about 8,000", merged)
	}
}

// TestRefTSOnlyHoldsEventTimeBack: a learned offset takes a clock running
// ahead back to the reference clock, but one running behind (or learned
// wrong) never moves a stream's event time past the line's own time.
func TestRefTSOnlyHoldsEventTimeBack(t *testing.T) {
	m := newMergeSet(2 * time.Second)
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	ev := func(observer string) *schema.Event {
		return &schema.Event{TS: at, Source: "client", Observer: observer}
	}
	if got := m.refTS(ev("cli-1")); !got.Equal(at) {
		t.Errorf("no offsets: %v, want the line's own %v", got, at)
	}
	m.offsets["client\x00cli-ahead"] = clock{off: 3 * time.Second, n: 5}
	m.offsets["client\x00cli-behind"] = clock{off: -50 * time.Second, n: 5}
	for _, c := range []struct {
		observer string
		want     time.Time
	}{
		{"cli-ahead", at.Add(-3 * time.Second)},
		{"cli-behind", at},
		{"cli-unknown", at},
	} {
		if got := m.refTS(ev(c.observer)); !got.Equal(c.want) {
			t.Errorf("%s: %v, want %v", c.observer, got, c.want)
		}
	}
	ahead := ev("cli-ahead")
	if allocs := testing.AllocsPerRun(100, func() { _ = m.refTS(ahead) }); allocs != 0 {
		t.Errorf("refTS allocates %.0f times a line", allocs)
	}
}
