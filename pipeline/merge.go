package pipeline

import (
	"container/heap"
	"container/list"
	"math"
	"slices"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// group is one HTTP exchange as one or more observers saw it.
type group struct {
	keys  []gkey    // its keys in the merge set's indexes
	keys3 [3]gkey   // keys's storage while it holds up to three (most groups)
	ts    time.Time // the earliest request time of its views
	// due is when, in event time, the group stops waiting for more views:
	// the merge window after the latest time a view completed. A view is
	// logged when its exchange completes, so a window counted from the
	// request time would close before a slow call's other view arrives.
	due   time.Time
	seq   uint64
	obs   []*observation
	obs1  [1]*observation // obs's storage while it holds one view
	index int
	heap  *groupHeap // the merging heap of the stream that holds the group
	// after is the group of the request a cancel names: the cancel is
	// released after it, so that it can join the request's chain.
	after *group
	// cancels is, for a cancel, the request key of the call it names
	// (requestKey); cancelAt is, for a call, when the earliest cancel naming
	// it was sent (on the reference clock), and cut whether that was before
	// the call's answer ended (set at release, used by record).
	cancels  hkey // zero when none
	cancelAt time.Time
	cut      bool
	// session names the group's session ("s" key, zero for none); init marks the
	// session's initialize, which the session's other exchanges are
	// released after (its stream closes after the client sent the next
	// messages, and clients.Identify must see it first).
	session hkey
	init    bool
	// apart says the group's first view was read after another kind of
	// observer's view of its exchange (by exchange_id) was released: its
	// record takes an id of its own (apartExchangeID).
	apart bool
	// wire is, for a cancel that names no client, the calls it may name
	// by transport (cancelwire.go); wiredBy is, for such a call, the
	// first cancel that may name it.
	wire    *wireCancel
	wiredBy *group
}

func (g *group) hasObserver(o *observation) bool {
	for _, x := range g.obs {
		if sameObserver(x, o) {
			return true
		}
	}
	return false
}

func sameObserver(a, b *observation) bool {
	return a.source() == b.source() && a.first().Observer == b.first().Observer
}

// gkey is one of a group's keys in the merge set: the index it is in
// (kind) and its hash. The indexes are
// keyed by 128-bit hashes of the keys' parts (keyed.go) rather than by the
// joined strings: an observation built and hashed three or four strings
// of 20-150 bytes for them.
type gkey struct {
	kind byte
	h    hkey
}

// Kinds of gkey. The hashed parts of a key start with a letter of their
// own too ("e", "k", "r", "s"): a cancel's key is its call's request key.
const (
	keyID         = 'e' // byID: the exchange id
	keyCall       = 'k' // byCall: callKey
	keyRequest    = 'r' // byReq: requestKey
	keyCancel     = 'c' // cancels: a cancel's requestKey
	keySession    = 's' // inits: a session
	keyWire       = 'w' // byWire: a session-less call's wire key
	keyWireCancel = 'v' // wireCancels: a cancel's wire key
)

// mergeSet holds complete observations for MergeWindow so that views of
// the same exchange from other observers can join them. The groups wait
// in the heap of their stream (the correlator's, one per source stream);
// the keys are shared, so views read from different streams still merge.
//
// Two views are one exchange when they carry the same exchange_id, or
// else when their call keys match (callKey: the session, or without one
// the client's identity, and the JSON-RPC id, method and params) and their
// request times are within the window once the clock offset learned for
// their pair of observers is taken off. Of several candidates the nearest
// in time wins, and views whose HTTP statuses differ never merge: ids
// restart per session (rmcp starts at 0) and stateless clients reuse them,
// so two calls can share a call key seconds apart.
type mergeSet struct {
	window  time.Duration
	byID    map[hkey]*group   // "e", exchange id
	byCall  map[hkey][]*group // call key, oldest first
	byReq   map[hkey]*group   // "r", server, session or client, JSON-RPC id
	cancels map[hkey]*group   // the same key: a waiting cancel of that request
	// pending counts, by the hash of their request key, the requests
	// still waiting in the correlator for their response (split records):
	// a cancel waits for them however long the call runs (pendingRequest,
	// requestDone). Hashed (see keyed.go), a waiting request keeps 32
	// bytes for its keys instead of building and holding their strings.
	pending map[hkey]int32
	h       keyHasher
	inits   map[hkey]*group // "s", server, session: its waiting initialize
	// byWire and wireCancels index session-less calls that gave up and
	// the cancels that name no client by their transport key (wireKey).
	byWire      map[hkey][]*group
	wireCancels map[hkey][]*group
	clocks      clocks      // what the merges taught about observers' clocks (clocks.go)
	released    releasedSet // what missed merges learn from (released.go)
	// lag is the extra wait the last late view asked for, at event time
	// lagAt (extraWait); maxLag bounds it: the correlator's Lateness.
	lag, maxLag time.Duration
	lagAt       time.Time
	misses      int // views read after their exchange was released (missed)
	// gateways says a gateway's view was ever added: only then can a
	// released untaught view be taught (missed).
	gateways bool
	obsKey   []byte // clockOf's scratch for an observer key
	// pairWindow is the correlator's: how long a request waits for its
	// response (bounds a cancel's wait for the calls it may name).
	pairWindow time.Duration
	seq        uint64
	n          int
	clients    clients // reads a session-less request's clientInfo
	// flights are the calls not yet released, by session (inflight.go).
	flights flights
}

func newMergeSet(window time.Duration) mergeSet {
	return mergeSet{window: window, byID: map[hkey]*group{}, byCall: map[hkey][]*group{}, byReq: map[hkey]*group{}, cancels: map[hkey]*group{}, inits: map[hkey]*group{}, pending: map[hkey]int32{}, h: newKeyHasher(),
		byWire: map[hkey][]*group{}, wireCancels: map[hkey][]*group{},
		clocks: newClocks(), released: newReleasedSet(), clients: clients{byKey: map[string]*list.Element{}}}
}

// callKey names the call an observation carries, for views that share no
// exchange id: server, session (else the client's own name from the
// request, for 2026-07-28 clients without sessions), JSON-RPC id, method
// and params hash, hashed. Notifications and unparsable requests have
// none (zero).
func (m *mergeSet) callKey(o *observation) hkey {
	r := &o.result
	if r.Method == "" || (r.JSONRPCID == "" && !r.Notification) {
		return hkey{}
	}
	who := m.who(o)
	if who == "" {
		return hkey{}
	}
	// A notification has no id; its method and params (a cancel names its
	// request) tell it apart within a session.
	return m.h.of("k", serverName(o.first()), who, r.JSONRPCID, r.Method, r.ParamsHash)
}

// who names the sender of o's request: its session, else the client's own
// name from the request (2026-07-28 clients have no session), else the
// logged client name.
func (m *mergeSet) who(o *observation) string {
	return m.whoOf(o.first(), o.req)
}

// whoOf is who for the first event of a view and its request event.
func (m *mergeSet) whoOf(ev, req *schema.Event) string {
	who := ev.SessionID
	if who == "" {
		if req == nil {
			return ""
		}
		name, version, ok := m.clients.wireInfo(req.RequestBody)
		if !ok {
			name, version = ev.ClientName, ev.ClientVersion
		}
		if name == "" {
			return ""
		}
		who = "c\x00" + name + "\x00" + version
	}
	return who
}

// requestKey names the request o carries, or the one o cancels
// (notifications/cancelled params.requestId), by sender and JSON-RPC id,
// hashed as pendingKeys hashes a waiting request's; zero for none.
func (m *mergeSet) requestKey(o *observation) (key hkey, cancels bool) {
	r := &o.result
	id := r.JSONRPCID
	if r.Method == "notifications/cancelled" && o.req != nil {
		v, err := m.clients.p.Parse(o.req.RequestBody)
		if err != nil || v.Get("params", "requestId") == nil {
			return hkey{}, false
		}
		id, cancels = string(v.Get("params", "requestId").MarshalTo(nil)), true
	}
	if id == "" || (r.Notification && !cancels) {
		return hkey{}, false
	}
	who := m.who(o)
	if who == "" {
		return hkey{}, false
	}
	return m.h.of("r", serverName(o.first()), who, id), cancels
}

// add merges o into the group of its exchange, else starts a group in h;
// now is the event time o's stream releases groups by (mergeTime), so a
// view held for by a slower stream does not count as late.
func (m *mergeSet) add(o *observation, h *groupHeap, now time.Time) {
	var idKey hkey
	apart := false
	if id := o.first().ExchangeID; id != "" {
		idKey = m.h.of("e", id)
	}
	call := m.callKey(o)
	m.gateways = m.gateways || observerRank(o.source()) == 0
	var g *group
	if idKey != (hkey{}) {
		if g = m.byID[idKey]; g == nil {
			apart = m.missed(idKey, o, now)
		}
	}
	if g == nil || g.hasObserver(o) || !m.idFits(g, o) {
		g = m.nearest(call, o)
	}
	if g != nil {
		defer m.indexWire(o, g)
		defer m.indexRequest(o, g)
		defer m.indexInit(o, g)
		m.learn(g, o, now)
		if by := now.Sub(g.due); by > 0 {
			m.joinedLate(by, now)
		}
		best := bestRank(g.obs)
		g.obs = append(g.obs, o)
		g.ts = earlier(g.ts, o.ts)
		if idKey != (hkey{}) && m.byID[idKey] == nil {
			m.byID[idKey] = g
			g.keys = append(g.keys, gkey{keyID, idKey})
		}
		// The group waits by the clock of its most trusted view (the
		// gateway's): a client's clock, even corrected, is too coarse to
		// keep a re-send sent a millisecond after its first attempt after
		// it.
		switch due, r := m.due(o), sourceRank(o); {
		case r < best, r == best && due.After(g.due):
			g.due = due
			g.heap.fix(g)
		}
		return
	}
	m.seq++
	m.n++
	due := m.due(o)
	g = &group{ts: o.ts, due: due, seq: m.seq, heap: h, apart: apart}
	g.keys = g.keys3[:0]
	g.obs1[0] = o
	g.obs = g.obs1[:]
	heap.Push(h, g)
	if idKey != (hkey{}) {
		m.byID[idKey] = g
		g.keys = append(g.keys, gkey{keyID, idKey})
	}
	if call != (hkey{}) {
		m.byCall[call] = append(m.byCall[call], g)
		g.keys = append(g.keys, gkey{keyCall, call})
	}
	m.indexRequest(o, g)
	m.indexWire(o, g)
	if ev := o.first(); ev.SessionID != "" {
		g.session = m.h.of("s", serverName(ev), ev.SessionID)
	}
	m.flights.addGroup(g)
	m.indexInit(o, g)
}

// indexInit remembers the group of a session's initialize while it waits.
func (m *mergeSet) indexInit(o *observation, g *group) {
	if o.result.Method != "initialize" || g.session == (hkey{}) || g.init {
		return
	}
	g.init = true
	if m.inits[g.session] == nil {
		m.inits[g.session] = g
		g.keys = append(g.keys, gkey{keySession, g.session})
	}
}

// waitsFor returns the waiting group that g must be released after: the
// request a cancel names, or the initialize of g's session.
func (m *mergeSet) waitsFor(g *group, h *groupHeap, wm time.Time) *group {
	if t := g.after; t != nil && t.index >= 0 && t.heap == h {
		return t
	}
	if g.cancels != (hkey{}) && g.after == nil && m.waitingRequest(g.cancels) {
		return pendingCall
	}
	if t := m.wireWaitsFor(g, h, wm); t != nil {
		return t
	}
	if g.session != (hkey{}) && !g.init {
		if t := m.inits[g.session]; t != nil && t != g && t.index >= 0 && t.heap == h {
			return t
		}
	}
	return nil
}

// indexRequest remembers g as the group of o's request, or, when o is a
// cancel, points g at the group of the request it cancels.
func (m *mergeSet) indexRequest(o *observation, g *group) {
	key, cancels := m.requestKey(o)
	switch {
	case key == (hkey{}):
	case cancels:
		g.cancels = key
		at := m.onRefClock(o, o.ts)
		if t := m.byReq[key]; t != nil && t != g {
			g.after = t
			t.cancelAt = earliest(t.cancelAt, at)
			return
		}
		if c := m.cancels[key]; c != nil && c != g {
			at = earliest(at, c.cancelAt)
		}
		g.cancelAt = at // kept for the call, which has not come yet
		// The request completes after its cancel: it may come later.
		m.cancels[key] = g
		g.keys = append(g.keys, gkey{keyCancel, key})
	case m.byReq[key] != g:
		m.byReq[key] = g
		g.keys = append(g.keys, gkey{keyRequest, key})
		if c := m.cancels[key]; c != nil && c != g && c.index >= 0 {
			c.after = g
			g.cancelAt = earliest(g.cancelAt, c.cancelAt)
		}
	}
}

// nearest returns the waiting group of the call that o most likely is
// another view of, or nil.
func (m *mergeSet) nearest(call hkey, o *observation) *group {
	if call == (hkey{}) {
		return nil
	}
	var best *group
	bestGap := m.window + 1
	limit := m.tolerance(o)
	for _, g := range m.byCall[call] {
		if g.hasObserver(o) || !compatible(g, o) {
			continue
		}
		gap := m.window + 1
		for _, x := range g.obs {
			gap = min(gap, absDur(m.onRefClock(o, o.ts).Sub(m.onRefClock(x, x.ts))))
		}
		if gap <= limit && gap < bestGap {
			best, bestGap = g, gap
		}
	}
	return best
}

// idFits reports whether o, which carries the exchange_id of g's views,
// is another view of g's exchange by time: its request time on the
// reference clock within the pair window of one of theirs. The id is
// the loggers' own word that the views are one exchange, so the merge
// window (which keeps apart calls that only look alike) does not apply;
// and a merge by id is what teaches a skewed client clock's offset, so
// that the client's views without a shared id merge too. Before, a
// client clock more than the merge window off merged with nothing, ever.
func (m *mergeSet) idFits(g *group, o *observation) bool {
	limit := max(m.window, m.pairWindow)
	t := m.onRefClock(o, o.ts)
	for _, x := range g.obs {
		if absDur(t.Sub(m.onRefClock(x, x.ts))) <= limit {
			return true
		}
	}
	return false
}

// compatible reports whether o can be another view of g's exchange: no
// two views got different HTTP statuses.
func compatible(g *group, o *observation) bool {
	if o.resp == nil || o.resp.HTTPStatus == 0 {
		return true
	}
	for _, x := range g.obs {
		if x.resp != nil && x.resp.HTTPStatus != 0 && x.resp.HTTPStatus != o.resp.HTTPStatus {
			return false
		}
	}
	return true
}

// offsetWeight is how much one merge moves an observer's learned clock
// offset and residual (exponentially weighted means).
const offsetWeight = 0.25

// clock is what the merges taught about one observer's clock against the
// reference (the gateway): its offset, how far views still land from
// each other once it is taken off, and from how many merges.
type clock struct {
	off, resid time.Duration
	n          int
	at, queued int64 // event time last taught, and last queued for expiry (clocks)
}

// minResidualTolerance is the least a learned clock's tolerance shrinks
// to.
const minResidualTolerance = 50 * time.Millisecond

// tolerance is how far o's request time may land from another view's on
// the reference clock: the merge window until o's clock is learned (three
// merges), then four times the residual it showed (at least 50ms). A
// stateless client re-sending the same call with the same id a few
// hundred milliseconds later must not pair with the first attempt's view.
func (m *mergeSet) tolerance(o *observation) time.Duration {
	c, ok := m.clockOf(o.first())
	if !ok || c.n < 3 {
		return m.window
	}
	return min(m.window, max(minResidualTolerance, 4*c.resid))
}

// learn updates the clock of the less trusted observer of each pair o
// makes with a view of g (a client against the gateway), from their
// request times.
func (m *mergeSet) learn(g *group, o *observation, now time.Time) {
	for _, x := range g.obs {
		ref, other := x, o
		if sourceRank(o) < sourceRank(x) {
			ref, other = o, x
		}
		if sourceRank(ref)%10 == sourceRank(other)%10 {
			continue // the same kind of observer: neither is the reference
		}
		d := other.ts.Sub(m.onRefClock(ref, ref.ts))
		at := now
		if at.IsZero() { // no event time yet (views loaded from the state)
			at = o.ts
		}
		m.clocks.teach(m.keyOf(other.first()), d, at)
	}
}

// taught is c after one more pair of views put the clock d off the
// reference; known says c was taught before.
func (c clock) taught(d time.Duration, known bool) clock {
	if !known {
		return clock{off: d, n: 1}
	}
	c.resid += time.Duration(offsetWeight * float64(absDur(d-c.off)-c.resid))
	c.off += time.Duration(offsetWeight * float64(d-c.off))
	c.n++
	return c
}

// onRefClock converts a time o's observer logged to the reference clock
// (the gateway's, which the merged record keeps), by the offset learned
// for that observer; unknown observers are taken as on time.
func (m *mergeSet) onRefClock(o *observation, t time.Time) time.Time {
	c, _ := m.clockOf(o.first())
	return t.Add(-c.off)
}

// refTS is ev's time on the reference clock, by the offset learned for
// its observer, when that is earlier than its own; known says a clock was
// learned for the observer at all. A client clock running ahead, its
// lines read where they were shipped, must not close the merge windows of
// exchanges whose other views are still on their way. A clock running
// behind does not move event time further than its own times do: an
// offset learned wrong (a reused exchange_id) can then only hold event
// time back, never expire requests early.
func (m *mergeSet) refTS(ev *schema.Event) (ts time.Time, known bool) {
	if m.clocks.len() == 0 {
		return ev.TS, false
	}
	c, known := m.clockOf(ev)
	if c.off > 0 {
		return ev.TS.Add(-c.off), known
	}
	return ev.TS, known
}

// clockOf returns what the merges taught about the clock of ev's
// observer.
func (m *mergeSet) clockOf(ev *schema.Event) (clock, bool) { return m.clocks.get(m.keyOf(ev)) }

// keyOf returns the key of ev's observer's clock, source NUL observer, in
// a scratch buffer valid until the next call: a lookup allocates nothing.
func (m *mergeSet) keyOf(ev *schema.Event) []byte { return m.clockKey(ev.Source, ev.Observer) }

// clockKey returns the key of an observer's clock, as keyOf does.
func (m *mergeSet) clockKey(source, observer string) []byte {
	m.obsKey = append(append(append(m.obsKey[:0], source...), 0), observer...)
	return m.obsKey
}

// due is when a group's wait for o's exchange ends, on the reference
// clock: a client clock running ahead must not hold the exchange back
// behind later ones (a retry would come out before its first attempt).
// A cancel waits one window more: the request it names completes after
// it (its answer, or its stream closing, follows the cancel), and the
// cancel must find that request's group to be released after it.
func (m *mergeSet) due(o *observation) time.Time {
	due := m.onRefClock(o, o.due(m.window))
	if o.result.Method == "notifications/cancelled" {
		due = due.Add(m.window)
	}
	return due
}

func bestRank(obs []*observation) int {
	best := sourceRank(obs[0])
	for _, x := range obs[1:] {
		best = min(best, sourceRank(x))
	}
	return best
}

// due is when a group holding only o stops waiting for other views.
func (o *observation) due(window time.Duration) time.Time {
	end, _ := endTime(o)
	return later(end, o.ts).Add(window)
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// release emits, in the order their merge windows close, the groups of h
// whose window the watermark wm has passed. A complete exchange never
// waits behind an older request still waiting for its response (that
// wait was up to the pair window, with every complete exchange behind it
// held in memory): the order of release keeps a retry after its earlier
// attempt, since a re-send starts after the attempt it repeats completed,
// and source positions stay uncommitted while the request waits.
func (m *mergeSet) release(h *groupHeap, final bool, wm time.Time, emit func(*group)) {
	at := wm // the release time kept for missed merges; wm is held back by the extra wait
	wm = m.settle(wm)
	for len(*h) > 0 {
		g := (*h)[0].g
		if t := m.waitsFor(g, h, wm); t == pendingCall {
			// The call a cancel names runs on (a long tool, a stream the
			// client keeps open): the cancel waits a window at a time
			// until the call's response completes it, or the correlator
			// gives up on the call (pair window, MaxPending).
			if !final {
				if g.due.After(wm) {
					return
				}
				g.due = wm.Add(m.window)
				h.fix(g)
				continue
			}
		} else if t != nil {
			g.due = later(g.due, t.due.Add(time.Nanosecond))
			h.fix(g)
			continue
		}
		if !final && g.due.After(wm) {
			return
		}
		heap.Pop(h)
		m.n--
		m.forget(g)
		m.remember(g, at)
		m.settleCancel(g)
		emit(g)
	}
}

// settle is what release does at the merge time wm before it looks at a
// group: it forgets the released exchanges and the observer clocks wm has
// passed, and returns wm held back by the extra wait.
func (m *mergeSet) settle(wm time.Time) time.Time {
	m.expireReleased(wm)
	m.clocks.expire(wm)
	return wm.Add(-m.extraWait(wm))
}

// firstDue says whether the first group of h has its window closed by the
// merge time wm (Unix nanoseconds) held back by the extra wait. When it
// has not, release at wm emits nothing, and besides settle it only moves
// the wait of a group that waits for another, which a later release sets
// the same way once that group's window closes.
func (m *mergeSet) firstDue(h *groupHeap, wm int64) bool {
	return len(*h) > 0 && (*h)[0].due <= wm-m.extraWaitNS(wm)
}

// quietUntil is the latest merge time (Unix nanoseconds) at which settle
// would forget nothing: no released exchange, no observer's clock, and
// not the extra wait, which it forgets once it has faded.
func (m *mergeSet) quietUntil() int64 {
	quiet := int64(math.MaxInt64)
	if m.lag > 0 {
		quiet = m.lagAt.UnixNano() + int64(lagFade) - 1
	}
	if q := &m.released.queue; q.head < len(q.keys) {
		quiet = min(quiet, q.keys[q.head].at+int64(m.pairWindow))
	}
	if r := &m.clocks.ring; r.len() > 0 {
		quiet = min(quiet, r.front().ts+int64(clockIdle))
	}
	return quiet
}

// pendingCall is what waitsFor returns for a cancel whose call is still
// waiting in the correlator for its response.
var pendingCall = &group{}

// pendingKeys are the hashed request key (requestKey) of a request half
// that starts waiting for its response and, for a session-less one, its
// anyClient key: "p", its server and its id, whichever client sent it, so
// that a cancel naming no client waits for the calls it may name
// (cancelwire.go). ok is false when it names no request. The hashes equal
// pendingOf of those keys' strings. id and idOK are the JSON-RPC id of
// ev's body (classify.RequestID), which the correlator parsed already.
func (m *mergeSet) pendingKeys(ev *schema.Event, id string, idOK bool) (req, anyClient hkey, ok bool) {
	if !idOK || id == "" {
		return hkey{}, hkey{}, false
	}
	who := m.whoOf(ev, ev)
	if who == "" {
		return hkey{}, hkey{}, false
	}
	server := serverName(ev)
	if ev.SessionID == "" {
		anyClient = m.h.of("p", server, id)
	}
	return m.h.of("r", server, who, id), anyClient, true
}

// pendingOf is the hash pendingKeys gives the request key (or
// anyClientKey) key: the parts of a key are joined by NULs, as keyHasher
// joins them.
func (m *mergeSet) pendingOf(key string) hkey { return m.h.of(key) }

// waitingRequest says whether a request with the key (requestKey or
// anyClientKey) key still waits in the correlator for its response.
func (m *mergeSet) waitingRequest(key hkey) bool { return m.pending[key] > 0 }

// pendingRequest and requestDone count a request half that starts and
// stops waiting in the correlator, under its request key; a session-less
// request counts under its server and id too (anyClient), for a cancel
// that names no client.
func (m *mergeSet) pendingRequest(req, anyClient hkey) {
	m.pending[req]++
	if anyClient != (hkey{}) {
		m.pending[anyClient]++
	}
}

func (m *mergeSet) requestDone(req, anyClient hkey) {
	m.done(req)
	if anyClient != (hkey{}) {
		m.done(anyClient)
	}
}

func (m *mergeSet) done(key hkey) {
	if m.pending[key]--; m.pending[key] <= 0 {
		delete(m.pending, key)
	}
}

// settleCancel decides, as a call named by a cancel is released, whether
// the cancel was sent before the call's answer ended: on the reference
// clock, against the latest end any view saw.
func (m *mergeSet) settleCancel(g *group) {
	if c := g.wiredBy; c != nil && c.wire.target() == g {
		g.cancelAt = earliest(g.cancelAt, c.wire.at)
	}
	if g.cancelAt.IsZero() || g.cancels != (hkey{}) {
		return
	}
	var end time.Time
	for _, o := range g.obs {
		e, _ := endTime(o)
		end = later(end, m.onRefClock(o, e))
	}
	g.cut = !g.cancelAt.After(end)
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() {
		return b
	}
	if b.IsZero() {
		return a
	}
	return earlier(a, b)
}

// forget removes a released group's keys.
func (m *mergeSet) forget(g *group) {
	m.flights.removeGroup(g)
	for _, k := range g.keys {
		switch k.kind {
		case keyID:
			forgetKey(m.byID, k.h, g)
		case keyRequest:
			forgetKey(m.byReq, k.h, g)
		case keyCancel:
			forgetKey(m.cancels, k.h, g)
		case keySession:
			forgetKey(m.inits, k.h, g)
		case keyWire:
			forgetIn(m.byWire, k.h, g)
		case keyWireCancel:
			forgetIn(m.wireCancels, k.h, g)
		case keyCall:
			forgetIn(m.byCall, k.h, g)
		}
	}
}

// forgetKey deletes k from idx if it still names g.
func forgetKey(idx map[hkey]*group, k hkey, g *group) {
	if idx[k] == g {
		delete(idx, k)
	}
}

// forgetIn removes g from the groups idx holds under k.
func forgetIn(idx map[hkey][]*group, k hkey, g *group) {
	gs := slices.DeleteFunc(idx[k], func(x *group) bool { return x == g })
	if len(gs) == 0 {
		delete(idx, k)
	} else {
		idx[k] = gs
	}
}

// Len returns the number of groups waiting.
func (m *mergeSet) Len() int { return m.n }

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// sourceRank orders observers for the HTTP view of a merged exchange: what
// the gateway saw on the wire first, then the server, then the client.
func sourceRank(o *observation) int {
	rank := observerRank(o.source())
	if o.resp == nil {
		rank += 10 // a view without the response loses to one with it
	}
	return rank
}

// observerRank is how far a source's clock and view are trusted: 0 the
// gateway's, 1 the server's, 2 a client's or anything else.
func observerRank(source string) int {
	switch source {
	case schema.SourceGateway:
		return 0
	case schema.SourceServer:
		return 1
	default:
		return 2
	}
}

// record builds the exchange record and its bodies from the group: the
// HTTP view (status, bodies, classification) from the best observer, the
// client's own facts (attempt, retry origin, conclusion) from the client.
func (g *group) record() (schema.Exchange, schema.Body) {
	obs := g.obs // one view, most of the time: nothing to order
	if len(obs) > 1 {
		obs = slices.Clone(obs)
		slices.SortStableFunc(obs, func(a, b *observation) int { return sourceRank(a) - sourceRank(b) })
	}
	p := obs[0]
	first := p.first()
	var rec schema.Exchange
	rec.Result = p.result
	rec.ExchangeID = exchangeID(first)
	if g.apart && first.ExchangeID == g.obs[0].first().ExchangeID {
		rec.ExchangeID = apartExchangeID(first)
	}
	rec.TS = p.ts
	rec.NoResponseReason = p.reason
	for _, o := range obs {
		if !slices.Contains(rec.Sources, o.source()) {
			rec.Sources = append(rec.Sources, o.source())
		}
	}
	slices.Sort(rec.Sources)
	rec.OneSided = len(rec.Sources) == 1
	rec.Source = p.source()
	rec.Observer = first.Observer
	var body schema.Body
	body.ExchangeID, body.TS = rec.ExchangeID, rec.TS
	if p.req != nil {
		rec.RequestEventID = p.req.EventID
		rec.HTTPMethod = p.req.HTTPMethod
		rec.RequestBytes = len(p.req.RequestBody)
		body.RequestHeaders, body.RequestBody = p.req.RequestHeaders, p.req.RequestBody
	}
	if r := p.resp; r != nil {
		rec.ResponseEventID = r.EventID
		rec.HTTPStatus = r.HTTPStatus
		rec.ResponseBytes = len(r.ResponseBody)
		rec.TransportError = r.TransportError
		rec.CloseReason = r.CloseReason
		body.ResponseHeaders, body.ResponseBody = r.ResponseHeaders, r.ResponseBody
		if rec.HTTPMethod == "" {
			rec.HTTPMethod = r.HTTPMethod
		}
	}
	// The other views' events: gone from the record but for their ids,
	// which a restart needs to know them handled, and, measured against
	// the gateway's request, their clocks, which a restart learns again
	// (Engine.Seed).
	for _, o := range obs[1:] {
		for _, ev := range []*schema.Event{o.req, o.resp} {
			if ev != nil && ev.EventID != "" && ev.EventID != rec.RequestEventID && ev.EventID != rec.ResponseEventID &&
				!slices.Contains(rec.MergedEventIDs, ev.EventID) {
				rec.MergedEventIDs = append(rec.MergedEventIDs, ev.EventID)
			}
		}
		if p.source() == schema.SourceGateway && p.req != nil && o.req != nil && observerRank(o.source()) > 0 {
			rec.MergedObservers = append(rec.MergedObservers, o.source()+"/"+o.req.Observer)
			rec.MergedOffsetsMS = append(rec.MergedOffsetsMS, float64(o.ts.Sub(p.ts))/float64(time.Millisecond))
		}
	}
	rec.BodyTruncated = (p.req != nil && p.req.BodyTruncated) || (p.resp != nil && p.resp.BodyTruncated)
	body.Truncated = rec.BodyTruncated
	rec.EndTS, rec.DurationMS = endTime(p)
	if !g.cancelAt.IsZero() && g.cancels == (hkey{}) && classify.CancelsAnswer(&rec.Result, g.cut) {
		rec.Cancel()
	}
	// Fill what the best view lacks from the others, the client first.
	if len(obs) > 1 {
		slices.SortStableFunc(obs, func(a, b *observation) int { return clientFirst(a) - clientFirst(b) })
	}
	for _, o := range obs {
		for _, ev := range []*schema.Event{o.req, o.resp} {
			if ev == nil {
				continue
			}
			fill(&rec.Server, serverName(ev))
			fill(&rec.URL, ev.URL)
			fill(&rec.ClientName, ev.ClientName)
			fill(&rec.ClientVersion, ev.ClientVersion)
			fill(&rec.SessionID, ev.SessionID)
			fill(&rec.IdempotencyKey, ev.IdempotencyKey)
			fill(&rec.RetryOrigin, ev.RetryOrigin)
			fill(&rec.ClientOutcome, ev.ClientOutcome)
			if rec.Attempt == 0 {
				rec.Attempt = ev.Attempt
			}
		}
	}
	return rec, body
}

func clientFirst(o *observation) int {
	if o.source() == schema.SourceClient {
		return 0
	}
	return 1
}

func fill(dst *string, v string) {
	if *dst == "" {
		*dst = v
	}
}

// endTime returns when the response completed and the duration: the
// logged duration when there is one, else the time between the halves.
func endTime(o *observation) (time.Time, float64) {
	var logged *float64
	for _, ev := range []*schema.Event{o.resp, o.req} {
		if ev != nil && ev.DurationMS != nil {
			logged = ev.DurationMS
			break
		}
	}
	switch {
	case logged != nil:
		return o.ts.Add(time.Duration(*logged * float64(time.Millisecond))), *logged
	case o.resp != nil && o.resp != o.req && o.req != nil:
		d := o.resp.TS.Sub(o.ts)
		return o.resp.TS, float64(d) / float64(time.Millisecond)
	}
	return o.ts, 0
}

// groupHeap orders groups by when their merge window closes, then arrival.
// Each item carries its group's order inline (due as Unix nanoseconds), so
// that sifting compares without loading the groups: with hundreds of
// thousands of groups waiting those loads were cache misses.
type groupHeap []groupItem

type groupItem struct {
	due int64 // g.due, Unix nanoseconds; refreshed by fix
	seq uint64
	g   *group
}

func (h groupHeap) Len() int { return len(h) }
func (h groupHeap) Less(i, j int) bool {
	if h[i].due == h[j].due {
		return h[i].seq < h[j].seq
	}
	return h[i].due < h[j].due
}
func (h groupHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].g.index, h[j].g.index = i, j
}
func (h *groupHeap) Push(x any) {
	g := x.(*group)
	g.index = len(*h)
	*h = append(*h, groupItem{due: g.due.UnixNano(), seq: g.seq, g: g})
}
func (h *groupHeap) Pop() any {
	old := *h
	g := old[len(old)-1].g
	old[len(old)-1] = groupItem{}
	*h = old[:len(old)-1]
	g.index = -1
	return g
}

// fix restores the order after g.due changed.
func (h *groupHeap) fix(g *group) {
	(*h)[g.index].due = g.due.UnixNano()
	heap.Fix(h, g.index)
}
