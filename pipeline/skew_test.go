package pipeline

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/mcplens/mcplens/internal/loadgen"
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
