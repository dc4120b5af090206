package pipeline

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	r := runSkewed(t, loadgen.Config{Seed: 77, Calls: 40_000, Rate: 400, ClientShare: 0.2,
		ClientSkew: 3 * time.Second, ClientShipped: true}, 15*time.Second)
	if r.late > 0 {
		t.Errorf("%d client views past the first 15 s did not join their gateway views", r.late)
	}
	// Within the first seconds only views without the gateway's
	// exchange_id, of clients more than the merge window off whose clocks
	// no merge has taught yet, may stay apart (2 of them; 29 when a
	// client's untaught clock moved event time).
	if r.apart > 10 {
		t.Errorf("%d client views apart, want at most 10", r.apart)
	}
	if r.merged < 7_000 {
		t.Errorf("only %d merged client views; the load has about 8,000", r.merged)
	}
}

// TestNewClientHostsAheadMerge: client hosts keep appearing all through
// the run (5,000 of them, a fifth of 20,000 calls logged by the client),
// their clocks up to 1.5 s off, within the merge window. A host's first
// lines come before any merge has taught its clock; one running ahead
// moved its stream's event time ahead and closed the merge windows of
// waiting exchanges before their client views arrived. Every client view
// must join its gateway view: before, 157 of about 4,200 stayed apart.
func TestNewClientHostsAheadMerge(t *testing.T) {
	r := runSkewed(t, loadgen.Config{Seed: 51, Calls: 20_000, Rate: 400, Clients: 5000, ClientShare: 0.2,
		ClientSkew: 1500 * time.Millisecond, ClientShipped: true}, 0)
	if r.apart > 0 || r.missed > 0 || r.extraWait != 0 {
		t.Errorf("%d client views did not join their gateway views (%d missed merges, extra wait %.2f s)",
			r.apart, r.missed, r.extraWait)
	}
	if r.merged < 3_500 {
		t.Errorf("only %d merged client views; the load has about 4,000", r.merged)
	}
}

// TestClockMinutesAheadMerges: client clocks up to a minute off, their
// lines read where they were shipped, the pair window wide enough for
// them. A client's first line, a minute ahead, moved event time a minute
// ahead and released every waiting exchange at once, before the merges by
// exchange_id that teach the clocks could happen: 2,070 of 2,083 client
// views stayed apart (with event time held to Lateness before such a
// line). Only views without the gateway's exchange_id, from clients whose
// clocks no merge has taught yet, may stay apart: in the first seconds.
func TestClockMinutesAheadMerges(t *testing.T) {
	r := runSkewed(t, loadgen.Config{Seed: 85, Calls: 20_000, ClientSkew: time.Minute, ClientShipped: true}, 10*time.Second)
	if r.late > 0 || r.apart > 100 {
		t.Errorf("%d client views apart, %d after the first 10 s", r.apart, r.late)
	}
	if r.merged < 1_900 {
		t.Errorf("only %d merged client views; the load has about 2,080", r.merged)
	}
}

// TestLateGatewayViewTeachesClock: client clocks up to 3 s off, more
// than the merge window, their lines read in clock order (a time-sorted
// export replayed). A client running behind has each view read seconds
// before its gateway view: its view was released alone before the
// gateway's came, no merge ever taught its clock, and none of its views
// ever merged. A client running ahead has each view read seconds after
// its gateway view was released. The views read after their exchange was
// released now teach the untaught clock and make groups wait longer (up
// to Lateness), so after the first seconds every view merges: before,
// 708 client views stayed apart, 204 of calls after the first 15 s.
func TestLateGatewayViewTeachesClock(t *testing.T) {
	r := runSkewed(t, loadgen.Config{Seed: 82, Calls: 20_000, ClientSkew: 3 * time.Second}, 15*time.Second)
	if r.late > 0 || r.apart > 50 {
		t.Errorf("%d client views apart, %d of calls after the first 15 s (%d running ahead, %d behind)",
			r.apart, r.late, r.lateAhead, r.lateBehind)
	}
	if r.missed == 0 || r.extraWait <= 0 {
		t.Errorf("missed merges %d, extra wait %.2f s: the early misses are not in the metrics", r.missed, r.extraWait)
	}
}

type skewRun struct {
	apart, late, lateAhead, lateBehind, merged int
	missed                                     int     // mcplens_ingest_merge_missed_total
	extraWait                                  float64 // mcplens_ingest_merge_extra_wait_seconds at the end
}

// runSkewed runs cfg's load through the engine at the default settings
// (the pair window widened for the shape) and counts the client views
// merged and apart, late counting those apart after the first grace of
// event time. Every record beyond the calls must be a client view apart.
func runSkewed(t *testing.T, cfg loadgen.Config, grace time.Duration) skewRun {
	t.Helper()
	g, lines, err := loadgen.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	truth := g.Truth()
	ec := testConfig()
	ec.Correlator.PairWindow = g.Config().PairWindow(ec.Correlator.PairWindow)
	sink := &memSink{}
	var r skewRun
	for _, f := range runMetered(t, ec, Deps{Source: newSliceSource("test.ndjson", lines), Sink: sink,
		Now: func() time.Time { return time.Unix(0, 0).UTC() }}) {
		switch f.GetName() {
		case "mcplens_ingest_merge_missed_total":
			r.missed = int(f.GetMetric()[0].GetCounter().GetValue())
		case "mcplens_ingest_merge_extra_wait_seconds":
			r.extraWait = f.GetMetric()[0].GetGauge().GetValue()
		}
	}

	// When a call started, on the gateway's clock, by its event ids
	// without their last letter (which names the line: request, exchange,
	// client).
	started := map[string]time.Time{}
	for _, e := range truth.Calls {
		started[e.RequestEventID[:len(e.RequestEventID)-1]] = e.TS
	}
	start := g.Config().Start
	if start.IsZero() {
		start = loadgen.DefaultStart
	}
	gatewayTS := map[string]time.Time{} // of records with a gateway view, by call
	for _, x := range sink.exchanges {
		if x.Source == "gateway" {
			gatewayTS[x.RequestEventID[:len(x.RequestEventID)-1]] = x.TS
		}
	}
	for _, x := range sink.exchanges {
		switch call := x.RequestEventID[:len(x.RequestEventID)-1]; {
		case slices.Equal(x.Sources, []string{"client"}):
			r.apart++
			if started[call].After(start.Add(grace)) {
				r.late++
				if x.TS.After(gatewayTS[call]) {
					r.lateAhead++
				} else {
					r.lateBehind++
				}
			}
		case slices.Contains(x.Sources, "client"):
			r.merged++
		}
	}
	t.Logf("%d records for %d calls; client views merged %d, apart %d (%d of calls started after the first %v); %d missed merges, extra wait %.2f s",
		len(sink.exchanges), truth.Exchanges, r.merged, r.apart, r.late, grace, r.missed, r.extraWait)
	if r.missed > r.apart {
		t.Errorf("%d missed merges counted, but only %d client views apart", r.missed, r.apart)
	}
	if extra := len(sink.exchanges) - truth.Exchanges; extra != r.apart {
		t.Errorf("%d records more than calls, but %d client views apart", extra, r.apart)
	}
	return r
}

// TestEventTimeHeldBackForUntaughtClocks: a line of a less trusted
// observer than its stream carries, whose clock no merge has taught, does
// not move event time; the stream's most trusted kind of line, a taught
// clock, and a stream of clients alone move it by their own times. Once
// the most trusted kind has sent nothing for the idle advance, the next
// kind down moves it.
func TestEventTimeHeldBackForUntaughtClocks(t *testing.T) {
	c := newCorrelator(CorrelatorConfig{Lateness: 5 * time.Second})
	c.idle = 5 * time.Second
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	wall := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	c.merging.clocks.byKey["client\x00cli-taught"] = clock{off: 3 * time.Second, n: 3}
	clientsOnly, mixed := c.stream(Position{Stream: "a"}), c.stream(Position{Stream: "b"})
	const none = time.Duration(-1) // the line does not move event time
	for i, s := range []struct {
		st       *stream
		wall     time.Duration // since the first line
		source   string
		observer string
		ts, want time.Duration
	}{
		{clientsOnly, 0, "client", "cli-1", time.Second, time.Second},
		{clientsOnly, 0, "client", "cli-2", 3 * time.Second, 3 * time.Second},
		{mixed, 0, "client", "cli-1", 3 * time.Second, 3 * time.Second}, // nothing better seen yet
		{mixed, 0, "gateway", "gw-0", 0, 0},
		{mixed, 0, "client", "cli-2", 3 * time.Second, none},
		{mixed, 0, "server", "srv-0", time.Second, none},
		{mixed, 0, "client", "cli-taught", 3 * time.Second, 0},
		{mixed, time.Second, "gateway", "gw-1", 2 * time.Second, 2 * time.Second},
		{mixed, 5 * time.Second, "client", "cli-2", 4 * time.Second, none},            // 4 s since the gateway's last line
		{mixed, 6 * time.Second, "server", "srv-0", 5 * time.Second, 5 * time.Second}, // 5 s: the server's lines are trusted now
		{mixed, 6 * time.Second, "client", "cli-2", 6 * time.Second, none},
		{mixed, 7 * time.Second, "gateway", "gw-1", 6 * time.Second, 6 * time.Second},
		{mixed, 7 * time.Second, "server", "srv-0", 7 * time.Second, none},
		{clientsOnly, 7 * time.Second, "client", "cli-3", 4 * time.Second, 4 * time.Second},
	} {
		s.st.lastLine = wall.Add(s.wall)
		ev := &schema.Event{TS: at.Add(s.ts), Source: s.source, Observer: s.observer}
		got, want := c.eventTime(s.st, ev), at.Add(s.want)
		if s.want == none {
			want = time.Time{}
		}
		if !got.Equal(want) {
			t.Errorf("%d: %s %s at %v in stream %s: event time %v, want %v",
				i, s.source, s.observer, s.ts, s.st.pos.Stream, got, want)
		}
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
	if got, known := m.refTS(ev("cli-1")); !got.Equal(at) || known {
		t.Errorf("no offsets: %v (known %v), want the line's own %v", got, known, at)
	}
	m.clocks.byKey["client\x00cli-ahead"] = clock{off: 3 * time.Second, n: 5}
	m.clocks.byKey["client\x00cli-behind"] = clock{off: -50 * time.Second, n: 5}
	for _, c := range []struct {
		observer string
		want     time.Time
		known    bool
	}{
		{"cli-ahead", at.Add(-3 * time.Second), true},
		{"cli-behind", at, true},
		{"cli-unknown", at, false},
	} {
		if got, known := m.refTS(ev(c.observer)); !got.Equal(c.want) || known != c.known {
			t.Errorf("%s: %v (known %v), want %v (%v)", c.observer, got, known, c.want, c.known)
		}
	}
	ahead := ev("cli-ahead")
	if allocs := testing.AllocsPerRun(100, func() { _, _ = m.refTS(ahead) }); allocs != 0 {
		t.Errorf("refTS allocates %.0f times a line", allocs)
	}
}

// TestReleasedExpire: a released group is kept the pair window of event
// time, then it goes and the keys passed are compacted away; without a
// gateway ever seen no view is kept as untaught, as nothing could teach
// it.
func TestReleasedExpire(t *testing.T) {
	m := newMergeSet(2 * time.Second)
	m.pairWindow, m.maxLag = time.Minute, 5*time.Second
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	view := func(i int, source string) *group {
		ev := &schema.Event{TS: at.Add(time.Duration(i) * time.Millisecond), Source: source, Observer: source + "-1"}
		o := &observation{req: ev, resp: ev, ts: ev.TS}
		g := &group{obs: []*observation{o}, due: ev.TS.Add(2 * time.Second)}
		g.keys = append(g.keys, gkey{keyID, m.h.of("e", strconv.Itoa(i))})
		return g
	}
	released := func(i int) time.Time { return at.Add(time.Duration(i)*time.Millisecond + 2*time.Second) }
	m.remember(view(-1, "client"), released(-1))
	if len(m.released.clocks) != 0 || len(m.released.queue.keys) != 1 {
		t.Fatalf("kept %d untaught views before any gateway view", len(m.released.clocks))
	}
	m.gateways = true
	for i := range 10_000 { // 20 s of releases, half of them untaught client views
		m.remember(view(2*i, "client"), released(2*i))
		m.remember(view(2*i+1, "gateway"), released(2*i+1))
	}
	for _, c := range []struct {
		wm         time.Duration // after the first release
		kept, lone int
	}{
		{5 * time.Second, 20_001, 10_000},
		{25 * time.Second, 20_001, 10_000},
		{70 * time.Second, 10_000, 5_000},
		{81 * time.Second, 0, 0},
	} {
		m.expireReleased(released(0).Add(c.wm))
		kept := len(m.released.queue.keys) - m.released.queue.head
		if kept != c.kept || len(m.released.byID) != c.kept || len(m.released.clocks) != c.lone {
			t.Errorf("%v on: %d groups kept (%d by id, %d untaught), want %d (%d untaught)",
				c.wm, kept, len(m.released.byID), len(m.released.clocks), c.kept, c.lone)
		}
		if len(m.released.queue.keys) > 2*max(kept, 1) {
			t.Errorf("%v on: a queue of %d keys for %d kept", c.wm, len(m.released.queue.keys), kept)
		}
	}
}

// TestExtraWaitFades: a view read late asks every group to wait that
// much longer (plus a quarter of the merge window, at most Lateness); the
// extra wait fades to nothing over lagFade, and a later late view keeps
// it at least where it is.
func TestExtraWaitFades(t *testing.T) {
	m := newMergeSet(2 * time.Second)
	m.maxLag = 5 * time.Second
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	if w := m.extraWait(at); w != 0 {
		t.Fatalf("extra wait %v before any late view", w)
	}
	m.joinedLate(1500*time.Millisecond, at)
	for _, c := range []struct {
		since time.Duration
		want  time.Duration
	}{{0, 2 * time.Second}, {lagFade / 2, time.Second}, {lagFade, 0}} {
		if got := m.extraWait(at.Add(c.since)); got != c.want {
			t.Errorf("%v after: extra wait %v, want %v", c.since, got, c.want)
		}
	}
	m.joinedLate(time.Second, at)                         // 1.5 s
	m.joinedLate(100*time.Millisecond, at.Add(lagFade/4)) // faded to 1.125 s: kept
	if got := m.extraWait(at.Add(lagFade / 4)); got != 1125*time.Millisecond {
		t.Errorf("after a small late view: %v, want the 1.125 s left", got)
	}
	m.joinedLate(time.Minute, at)
	if got := m.extraWait(at); got != 5*time.Second {
		t.Errorf("a minute late: %v, want Lateness", got)
	}
}

// TestMissedViewKeepsItsOwnRecord: the client's view of an exchange read
// long after the gateway's view of it was released (a shipper that
// batches) misses its merge. Both carry the logger's exchange_id; the
// late one takes an id of its own, derived from its event, since a store
// keeps an exchange id once (a replay's copy) and would drop it: the
// gateway's record when the client's came out first. Read again, the
// same lines give the same ids. Before 2026-12-06 both records had the
// same id: 40 views of 30,000 calls were lost so on
// TestKillsPastTheWindows's load, uninterrupted. The late view is the
// same call, not a retry of it: it joins the gateway record's chain
// without retry_of (the call failed, so a re-send would be linked).
func TestMissedViewKeepsItsOwnRecord(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	line := func(kind, source, id, xid string, ts time.Time) Message {
		body := `"request_body":"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}"`
		if kind == "response" {
			body = `"http.status":200,"response_body":"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[]}}"`
			if xid == "x-late" {
				body = `"http.status":200,"response_body":"{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32603,\"message\":\"boom\"}}"`
			}
		}
		return Message{Value: fmt.Appendf(nil, `{"v":1,"kind":%q,"event_id":%q,"source":%q,"observer":"%s-1","server":"srv","session_id":"s-%s","exchange_id":%q,"ts":%q,"http.method":"POST",%s}`,
			kind, id, source, source, xid, xid, ts.Format(time.RFC3339Nano), body)}
	}
	var msgs []Message
	add := func(m Message) {
		m.Pos = Position{Stream: "f", Offset: int64(len(msgs))}
		msgs = append(msgs, m)
	}
	add(line("request", "gateway", "gw-q", "x-late", base))
	add(line("response", "gateway", "gw-r", "x-late", base.Add(20*time.Millisecond)))
	for i := range 200 { // 20 s of other exchanges: the gateway's view is released
		ts := base.Add(time.Duration(i+1) * 100 * time.Millisecond)
		xid := "x-" + strconv.Itoa(i)
		add(line("request", "gateway", xid+"-q", xid, ts))
		add(line("response", "gateway", xid+"-r", xid, ts.Add(5*time.Millisecond)))
	}
	add(line("request", "client", "cli-q", "x-late", base.Add(5*time.Millisecond)))
	add(line("response", "client", "cli-r", "x-late", base.Add(30*time.Millisecond)))

	var recs map[string]schema.Exchange
	ids := func() map[string]string {
		byEvent := map[string]string{}
		recs = map[string]schema.Exchange{}
		for _, x := range runMessages(t, msgs) {
			byEvent[x.RequestEventID] = x.ExchangeID
			recs[x.RequestEventID] = x
		}
		return byEvent
	}
	first := ids()
	if c := recs["cli-q"]; c.RetryOf != "" || c.ChainID != "x-late" || c.Attempt != 1 {
		t.Errorf("the client's late view: retry_of %q, chain %q, attempt %d; want the gateway record's chain x-late, attempt 1, no retry_of",
			c.RetryOf, c.ChainID, c.Attempt)
	}
	gw, cli := first["gw-q"], first["cli-q"]
	if gw != "x-late" {
		t.Errorf("the gateway's record has id %q, want the logger's x-late", gw)
	}
	if cli == "" || cli == gw || !strings.HasPrefix(cli, "x-late~") {
		t.Errorf("the client's late view has id %q, want one of its own derived from x-late", cli)
	}
	if again := ids(); again["cli-q"] != cli || again["gw-q"] != gw {
		t.Errorf("read again: ids %q and %q, first %q and %q", again["gw-q"], again["cli-q"], gw, cli)
	}

	// After a restart: the gateway's record was stored before it, the
	// client's view is read after it. Seeded with the stored records (as
	// cmd/ingest seeds from the chain window), the engine takes the view
	// for the miss it is; unseeded it gives it the stored record's id.
	stored := runMessages(t, msgs[:len(msgs)-2])
	for _, seeded := range []bool{false, true} {
		var seed []schema.Exchange
		if seeded {
			seed = stored
		}
		got := runSeeded(t, msgs[len(msgs)-2:], seed)
		if len(got) != 1 {
			t.Fatalf("seeded %v: %d records of the client's view", seeded, len(got))
		}
		switch id := got[0].ExchangeID; {
		case seeded && id != cli:
			t.Errorf("after a restart the client's view has id %q, want %q as uninterrupted", id, cli)
		case !seeded && id != "x-late":
			t.Errorf("unseeded the client's view has id %q; the test proves nothing", id)
		}
	}
}

// TestBaseExchangeID: the id of a missed view's record names its
// exchange's id again; any other id is its own.
func TestBaseExchangeID(t *testing.T) {
	ev := &schema.Event{Kind: schema.KindRequest, EventID: "e1", ExchangeID: "x-1"}
	for id, want := range map[string]string{
		apartExchangeID(ev): "x-1",
		"x-1":               "x-1",
		"~0123456789ab":     "~0123456789ab", // nothing before the suffix
		"a~0123456789AB":    "a~0123456789AB",
		"a~0123456789a":     "a~0123456789a",
		"a-0123456789ab":    "a-0123456789ab",
	} {
		if got := baseExchangeID(id); got != want {
			t.Errorf("baseExchangeID(%q) = %q, want %q", id, got, want)
		}
	}
}

// TestReleasedKeepsTheNewest: at its bound the released set forgets its
// oldest groups, not the newest (a late view is likeliest to miss those).
func TestReleasedKeepsTheNewest(t *testing.T) {
	m := newMergeSet(2 * time.Second)
	m.pairWindow, m.maxLag = time.Hour, 5*time.Second
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	key := func(i int) hkey { return m.h.of("e", strconv.Itoa(i)) }
	for i := range maxReleased + 10 {
		ev := &schema.Event{TS: at.Add(time.Duration(i) * time.Microsecond), Source: "gateway", Observer: "gw"}
		g := &group{obs: []*observation{{req: ev, resp: ev, ts: ev.TS}}, due: ev.TS}
		g.keys = append(g.keys, gkey{keyID, key(i)})
		m.remember(g, ev.TS)
	}
	if n := len(m.released.byID); n != maxReleased {
		t.Errorf("%d kept, want the bound %d", n, maxReleased)
	}
	for _, c := range []struct {
		i    int
		kept bool
	}{{0, false}, {9, false}, {10, true}, {maxReleased + 9, true}} {
		if _, ok := m.released.byID[key(c.i)]; ok != c.kept {
			t.Errorf("group %d kept: %v, want %v", c.i, ok, c.kept)
		}
	}
	if q := &m.released.queue; len(q.keys)-q.head != maxReleased || len(q.keys) > 2*maxReleased {
		t.Errorf("queue of %d keys, %d passed, for %d kept", len(q.keys), q.head, maxReleased)
	}
}
