package pipeline

import (
	"container/heap"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// CorrelatorConfig bounds the correlator. The zero value of a field means
// its default.
type CorrelatorConfig struct {
	// PairWindow is how long, in event time, a request waits for its
	// response (and a response for its request) before it is emitted
	// alone as NO_RESPONSE (or as an orphan). Default 60s.
	PairWindow time.Duration
	// MergeWindow is how long a complete exchange waits for another
	// observer's view of the same exchange. Default 2s.
	MergeWindow time.Duration
	// Lateness is how far event time may run backwards: the watermark is
	// the newest event time seen minus Lateness. Default 5s.
	Lateness time.Duration
	// MaxPending bounds the halves waiting for their other half. Default
	// 200,000.
	MaxPending int
	// MaxPendingBytes bounds their estimated memory. Default 512 MiB.
	MaxPendingBytes int64
}

func (c *CorrelatorConfig) defaults() {
	if c.PairWindow <= 0 {
		c.PairWindow = 60 * time.Second
	}
	if c.MergeWindow <= 0 {
		c.MergeWindow = 2 * time.Second
	}
	if c.Lateness <= 0 {
		c.Lateness = 5 * time.Second
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 200_000
	}
	c.MaxPending = min(c.MaxPending, math.MaxInt32) // a half's heap index is an int32
	if c.MaxPendingBytes <= 0 {
		c.MaxPendingBytes = 512 << 20
	}
}

// half is a request or response event waiting for its other half. It is
// kept small (the event packed, time as nanoseconds, its stream and offset
// instead of a Position, an intrusive list): a pending request costs well
// under 512 bytes beyond its bodies.
type half struct {
	key   hkey // pairKey
	ev    packed
	st    *stream
	off   int64 // source offset within st
	ts    int64 // event time, Unix nanoseconds
	next  *half // the next half waiting under the same key
	index int32 // in st.pending
	saved bool  // held in the sink's state (see state.go)
	holds uint8 // flushes it waited unsaved (see Config.StateHold)
	// req and reqAny are a request half's hashed request key and, when
	// session-less, its anyClientKey (mergeSet.pendingKeys), counted in
	// merging.pending while it waits, so that a cancel naming it waits too.
	req, reqAny hkey
}

func (h *half) pos() Position {
	p := h.st.pos
	p.Offset = h.off
	return p
}

// stream is the event time of one source stream (a Kafka partition, a
// file): its own watermark, the halves it waits for and the exchanges it
// holds for merging. One stream's progress never expires another's
// requests: a backlog read faster from one partition than from another
// gives the same records as the same events read from a file.
type stream struct {
	pos   Position  // a template: stream, topic, partition
	maxTS time.Time // the newest event time seen
	// trust is 1 + the best observerRank among the stream's lines still
	// coming, 0 before its first line; trusted is the wall clock of the
	// last line of that kind (eventTime).
	trust     int
	trusted   time.Time
	lastInput time.Time // wall clock of the last event, for idle advance
	// lastLine is the wall clock of the last line read, which neither idle
	// advance nor a pause moves: whether the stream still flows (slowest).
	lastLine time.Time
	pending  halfHeap
	merging  groupHeap
	flow     int // index in correlator.flowing; -1 if not there
}

// correlator pairs request and response events into observations, merges
// the observations several observers made of one exchange, and releases
// the merged exchanges in event-time order, per stream, once no earlier
// request of that stream can still complete. Time is event time only
// (apart from idle advance): replaying the same input gives the same
// output. A correlator is not safe for concurrent use.
type correlator struct {
	cfg     CorrelatorConfig
	waiting map[hkey]*half // by pair key, oldest first (a list through next)
	h       keyHasher      // of pair keys
	streams map[string]*stream
	order   []*stream // by stream name: releases are deterministic
	// flowing holds the streams with an event time, slowest first, for
	// slowest: a stream leaves it when found at the top without a line
	// for the idle advance, and comes back with its next line.
	flowing flowHeap
	// exhaustive makes Release release every stream in full and slowest
	// scan every stream: the two without their shortcuts, for tests to
	// compare them with.
	exhaustive bool
	npending   int
	bytes      int64
	merging    mergeSet
	evictions  int
	now        func() time.Time // wall clock, for idle advance only
	// idle is the engine's IdleAdvance: a stream without a line for this
	// long no longer holds other streams' merges back (slowest).
	idle time.Duration
	// With a StateSink (track): what the next batch's state must save.
	// Without one nothing takes them, so nothing is kept.
	track    bool
	fresh    []*half        // started waiting since the last takeFresh
	freshObs []*observation // completed since the last takeFreshObservations
}

// newCorrelator returns a correlator with cfg's bounds.
func newCorrelator(cfg CorrelatorConfig) *correlator {
	cfg.defaults()
	c := &correlator{cfg: cfg, waiting: map[hkey]*half{}, h: newKeyHasher(), streams: map[string]*stream{},
		merging: newMergeSet(cfg.MergeWindow), now: time.Now}
	c.merging.flights.h = &c.merging.h
	c.merging.pairWindow = cfg.PairWindow
	c.merging.maxLag = cfg.Lateness
	return c
}

// Pending returns the number of halves waiting and their estimated bytes.
func (c *correlator) Pending() (int, int64) { return c.npending, c.bytes }

// unreleased is flights.find: the latest attempt of a call in a session
// not yet released, sent before the Unix nanosecond before.
func (c *correlator) unreleased(server, session, source string, call classify.Call, before int64) (unreleased, bool) {
	return c.merging.flights.find(server, session, source, call, before)
}

// Evictions returns how many halves the bounds have evicted so far.
func (c *correlator) Evictions() int { return c.evictions }

func (c *correlator) stream(p Position) *stream {
	st := c.streams[p.Stream]
	if st == nil {
		st = &stream{pos: p, flow: -1}
		st.pos.Offset = 0
		c.streams[p.Stream] = st
		i, _ := slices.BinarySearchFunc(c.order, p.Stream, func(s *stream, name string) int { return strings.Compare(s.pos.Stream, name) })
		c.order = slices.Insert(c.order, i, st)
	}
	return st
}

// Add takes one decoded, deduplicated, redacted event read at pos.
func (c *correlator) Add(ev *schema.Event, pos Position) {
	c.add(ev, pos, false)
}

// add is Add; saved says the event is already held in the sink's state.
func (c *correlator) add(ev *schema.Event, pos Position, saved bool) {
	st := c.stream(pos)
	st.lastInput = c.now()
	st.lastLine = st.lastInput
	// An event loaded from the state does not move event time: the
	// stream's mark gave it back (resume), or the held events read again
	// after it will.
	ts := c.eventTime(st, ev)
	moved := !saved && ts.After(st.maxTS)
	if moved {
		st.maxTS = ts
	}
	c.flows(st, moved)
	if ev.Kind == schema.KindExchange {
		o := &observation{req: ev, resp: ev, ts: ev.TS}
		o.hold(pos, saved, ev)
		c.complete(st, o)
		return
	}
	isReq := ev.Kind == schema.KindRequest
	id := requestID{ev: ev}
	key := c.pairKey(ev, &id)
	var prev *half
	for h := c.waiting[key]; h != nil; prev, h = h, h.next {
		if h.ev.isRequest() == isReq {
			continue
		}
		c.unlink(key, prev, h)
		c.unpend(h)
		other := h.ev.unpack()
		o := &observation{}
		o.hold(h.pos(), h.saved, other)
		o.hold(pos, saved, ev)
		if isReq {
			o.req, o.resp = ev, other
		} else {
			o.req, o.resp = other, ev
		}
		o.ts = o.req.TS
		c.complete(h.st, o)
		return
	}
	h := &half{key: key, ev: pack(ev), st: st, off: pos.Offset, ts: ev.TS.UnixNano(), saved: saved}
	if isReq {
		var ok bool
		rid, ridOK := id.get()
		if h.req, h.reqAny, ok = c.merging.pendingKeys(ev, rid, ridOK); ok {
			c.merging.pendingRequest(h.req, h.reqAny)
		}
		c.merging.flights.addHalf(h, ev)
	}
	if prev == nil {
		c.waiting[key] = h
	} else {
		prev.next = h
	}
	heap.Push(&st.pending, h)
	if c.track {
		c.fresh = append(c.fresh, h)
	}
	c.npending++
	c.bytes += h.size()
	for c.npending > c.cfg.MaxPending || c.bytes > c.cfg.MaxPendingBytes {
		c.evictions++
		c.expire(c.oldest(), true)
	}
}

// unpend removes h from its stream's pending heap.
func (c *correlator) unpend(h *half) {
	heap.Remove(&h.st.pending, int(h.index))
	if h.req != (hkey{}) {
		c.merging.requestDone(h.req, h.reqAny)
	}
	if h.ev.isRequest() {
		c.merging.flights.removeHalf(h)
	}
	c.npending--
	c.bytes -= h.size()
}

// oldest is the oldest waiting half of all streams (the bounds evict it).
func (c *correlator) oldest() *half {
	var o *half
	for _, st := range c.order {
		if len(st.pending) > 0 && (o == nil || st.pending[0].ts < o.ts) {
			o = st.pending[0]
		}
	}
	return o
}

// halfOverhead is what a waiting half costs besides its blob and bodies:
// the struct with its hashed keys, the map entries and the heap slot.
const halfOverhead = 200

// size estimates the memory a waiting half holds.
func (h *half) size() int64 { return h.ev.size() + halfOverhead }

// unlink removes h, whose predecessor under key is prev, from the list.
func (c *correlator) unlink(key hkey, prev, h *half) {
	switch {
	case prev != nil:
		prev.next = h.next
	case h.next != nil:
		c.waiting[key] = h.next
	default:
		delete(c.waiting, key)
	}
	h.next = nil
}

// requestID is the JSON-RPC id of a request event's body, parsed the
// first time it is asked for: the pair key of a request without an
// exchange id and the merge set's pending key both need it, and a parse
// is most of what either costs.
type requestID struct {
	ev       *schema.Event
	id       string
	ok, done bool
}

func (r *requestID) get() (string, bool) {
	if !r.done {
		r.id, r.ok = classify.RequestID(bytesOf(r.ev.RequestBody))
		r.done = true
	}
	return r.id, r.ok
}

// pairKey ties a request event to its response event: one observer's
// exchange id, else its session and JSON-RPC id (reqID's, for a request).
func (c *correlator) pairKey(ev *schema.Event, reqID *requestID) hkey {
	if ev.ExchangeID != "" {
		return c.h.of(ev.Source, ev.Observer, "e", ev.ExchangeID)
	}
	var id string
	if ev.Kind == schema.KindRequest {
		id, _ = reqID.get()
	} else {
		id, _ = classify.ResponseID(ev.ResponseHeaders.Get("content-type"), bytesOf(ev.ResponseBody))
	}
	return c.h.of(ev.Source, ev.Observer, "s", ev.SessionID, id)
}

// expire emits a waiting half alone: a request as NO_RESPONSE, a response
// as an orphan whose request was never seen.
func (c *correlator) expire(h *half, evicted bool) {
	c.unpend(h)
	var prev *half
	for x := c.waiting[h.key]; x != nil && x != h; x = x.next {
		prev = x
	}
	c.unlink(h.key, prev, h)
	ev := h.ev.unpack()
	o := &observation{ts: ev.TS, evicted: evicted}
	o.hold(h.pos(), h.saved, ev)
	switch {
	case h.ev.isRequest() && evicted:
		o.req, o.reason = ev, "pending state full: evicted before its response"
	case h.ev.isRequest():
		o.req, o.reason = ev, "no response within the pair window"
	case evicted:
		o.resp, o.reason = ev, "pending state full: response evicted before its request"
	default:
		o.resp, o.reason = ev, "response without a request within the pair window"
	}
	c.complete(h.st, o)
}

// complete classifies o and holds it for merging in st, the stream of its
// first event.
func (c *correlator) complete(st *stream, o *observation) {
	o.classify()
	c.merging.add(o, &st.merging, c.mergeTime(st, c.slowest()))
	if c.track {
		c.freshObs = append(c.freshObs, o)
	}
}

// takeFresh returns the halves that started waiting since the last call
// (some may have left already: their index is -1).
func (c *correlator) takeFresh() []*half {
	f := c.fresh
	c.fresh = nil
	return f
}

// takeFreshObservations returns the observations completed since the last
// call (some may have been emitted already).
func (c *correlator) takeFreshObservations() []*observation {
	f := c.freshObs
	c.freshObs = nil
	return f
}

// resume restores a stream's event time from the state.
func (c *correlator) resume(p Position, maxTS time.Time) {
	st := c.stream(p)
	moved := maxTS.After(st.maxTS)
	if moved {
		st.maxTS = maxTS
	}
	st.lastInput = c.now()
	st.lastLine = st.lastInput
	c.flows(st, moved)
}

// flows keeps st, which just had a line, in the flowing heap; moved says
// its event time changed.
func (c *correlator) flows(st *stream, moved bool) {
	switch {
	case st.maxTS.IsZero():
	case st.flow < 0:
		heap.Push(&c.flowing, st)
	case moved:
		heap.Fix(&c.flowing, st.flow)
	}
}

// AdvanceIdle moves the event time of every stream that has had no input
// for at least idle (wall clock) forward by the wall time since its last
// input: the engine calls it on its ticker, so that the last exchanges of
// a burst are released instead of waiting for the next event of their
// stream, while streams that still flow keep their own time.
func (c *correlator) AdvanceIdle(idle time.Duration) {
	now := c.now()
	for _, st := range c.order {
		if d := now.Sub(st.lastInput); d >= idle && !st.maxTS.IsZero() {
			st.maxTS = st.maxTS.Add(d)
			st.lastInput = now
			if st.flow >= 0 {
				heap.Fix(&c.flowing, st.flow)
			}
		}
	}
}

// Paused tells the correlator that the engine read nothing for d because
// it was not reading (a write held the loop while the store was down):
// that time is not the source being idle, so it does not count towards
// AdvanceIdle. Otherwise an outage longer than --idle-advance
// jumps event time ahead, expires requests alone and makes their
// responses, read after the outage, a second record of the exchange.
func (c *correlator) Paused(d time.Duration) {
	for _, st := range c.order {
		st.lastInput = st.lastInput.Add(d)
	}
}

// eventTime is the time ev may advance st's event time to: its time on
// the reference clock (mergeSet.refTS), or none (the zero time) for a line
// of a less trusted observer than the stream carries (a client beside a
// gateway) whose clock no merge has taught yet. Such a line may come from
// a clock seconds or minutes ahead; moving event time by it closed the
// merge windows of every waiting exchange early, so their client views,
// still on their way, stayed apart, and so did the merges by exchange_id
// that would have taught the clock. It happened at the start of a run,
// after a restart and with each new client host. Lines of the stream's
// most trusted kind, and of any clock already taught, move event time as
// before. When no line of the most trusted kind has come for the idle
// advance (the gateway stopped logging), the next kind down is trusted,
// so the stream's event time still moves.
func (c *correlator) eventTime(st *stream, ev *schema.Event) time.Time {
	r := observerRank(ev.Source) + 1
	if st.trust == 0 || r <= st.trust || (c.idle > 0 && st.lastLine.Sub(st.trusted) >= c.idle) {
		st.trust, st.trusted = r, st.lastLine
	}
	ts, known := c.merging.refTS(ev)
	if !known && r > st.trust {
		return time.Time{}
	}
	return ts
}

// watermark is the event time up to which st's input is taken as
// complete: its newest event time less Lateness, held back to the slowest
// stream still flowing by up to the pair window. The two halves of an
// exchange may be read from different streams (lines without a key, as
// from 2026-07-28 clients without sessions, land on any partition), and
// a consumer catching up reads its partitions at paces that drift apart
// by tens of seconds: a request read from a partition ahead expired as
// NO_RESPONSE before its response was read from the one behind.
func (c *correlator) watermark(st *stream, slowest time.Time) time.Time {
	if st.maxTS.IsZero() {
		return st.maxTS
	}
	return c.heldBack(st, slowest, c.cfg.PairWindow).Add(-c.cfg.Lateness)
}

// Release expires, stream by stream, what the stream's watermark has
// passed and emits, in event-time order, every merged exchange that no
// earlier pending request of its stream can still precede. With final set
// (end of input) everything pending is expired and emitted.
//
// It runs after every line, over every stream: a stream with nothing due
// is passed over on a few integer comparisons (due), so that a consumer
// of many partitions does not pay each of them a full release per line.
func (c *correlator) Release(final bool, emit func(*group)) {
	slowest := c.slowest()
	ns := slowestNS(slowest)
	for _, st := range c.order {
		if !final && !c.exhaustive && !c.due(st, ns) {
			continue
		}
		wm := c.watermark(st, slowest)
		for len(st.pending) > 0 && (final || !time.Unix(0, st.pending[0].ts).Add(c.cfg.PairWindow).After(wm)) {
			c.expire(st.pending[0], false)
		}
	}
	quiet := c.merging.quietUntil()
	for _, st := range c.order {
		if !final && !c.exhaustive {
			if st.maxTS.IsZero() {
				continue // no event time yet: no window of it closes
			}
			// Nothing due: only settle, if it has anything to do.
			if wm := c.mergeTimeNS(st, ns); !c.merging.firstDue(&st.merging, wm) {
				if wm > quiet {
					c.merging.settle(c.mergeTime(st, slowest))
					quiet = c.merging.quietUntil()
				}
				continue
			}
		}
		c.merging.release(&st.merging, final, c.mergeTime(st, slowest), emit)
		quiet = c.merging.quietUntil()
	}
}

// due says whether st's oldest waiting half may have passed its pair
// window by st's watermark (watermark, in Unix nanoseconds). A stream
// without an event time has no watermark, so nothing of it is due.
func (c *correlator) due(st *stream, slowest optNS) bool {
	if len(st.pending) == 0 || st.maxTS.IsZero() {
		return false
	}
	pw := int64(c.cfg.PairWindow)
	return st.pending[0].ts+pw <= heldBackNS(st.maxTS.UnixNano(), slowest, pw)-int64(c.cfg.Lateness)
}

// mergeTimeNS is mergeTime in Unix nanoseconds, for a stream with an
// event time.
func (c *correlator) mergeTimeNS(st *stream, slowest optNS) int64 {
	return heldBackNS(st.maxTS.UnixNano(), slowest, int64(c.cfg.Lateness))
}

// optNS is an event time in Unix nanoseconds, if set (the zero time
// is not).
type optNS struct {
	ns  int64
	set bool
}

func slowestNS(t time.Time) optNS {
	if t.IsZero() {
		return optNS{}
	}
	return optNS{ns: t.UnixNano(), set: true}
}

// heldBackNS is an event time (maxTS) held back to slowest, when slowest
// is behind it, by at most hold, all in Unix nanoseconds.
func heldBackNS(maxTS int64, slowest optNS, hold int64) int64 {
	if !slowest.set || slowest.ns >= maxTS {
		return maxTS
	}
	return max(slowest.ns, maxTS-hold)
}

// extraWait is how much longer than the merge window exchanges wait now,
// at the newest event time of any stream (mergeSet.extraWait).
func (c *correlator) extraWait() time.Duration {
	var newest time.Time
	for _, st := range c.order {
		newest = later(newest, st.maxTS)
	}
	return c.merging.extraWait(newest)
}

// slowest is the event time of the slowest stream still flowing (a line
// read within the idle advance), zero when none flows or idle advance is
// off.
func (c *correlator) slowest() time.Time {
	var t time.Time
	if len(c.order) < 2 || c.idle <= 0 {
		return t
	}
	now := c.now()
	if c.exhaustive {
		for _, st := range c.order {
			if !st.maxTS.IsZero() && now.Sub(st.lastLine) < c.idle && (t.IsZero() || st.maxTS.Before(t)) {
				t = st.maxTS
			}
		}
		return t
	}
	for len(c.flowing) > 0 {
		st := c.flowing[0]
		if now.Sub(st.lastLine) < c.idle {
			return st.maxTS
		}
		heap.Pop(&c.flowing) // until its next line
	}
	return t
}

// mergeTime is the event time st's merge windows close by: its own, held
// back to the slowest stream still flowing by up to Lateness. Views of one
// exchange may be read from different streams: a client's line, or any
// line without a session to key it by (2026-07-28 clients have none), lands
// on another Kafka partition than its gateway's, and partitions are read
// at their own pace (a fetch at a time while catching up). A stream that
// ran ahead closed the merge windows of its exchanges before their other
// views were read from the slower stream, so they came out as two records.
// The bound keeps what a stream holds for a lagging one (or for a backlog
// read one partition after another) to Lateness of event time.
func (c *correlator) mergeTime(st *stream, slowest time.Time) time.Time {
	return c.heldBack(st, slowest, c.cfg.Lateness)
}

// heldBack is st's event time held back to slowest by at most hold
// (heldBackNS).
func (c *correlator) heldBack(st *stream, slowest time.Time, hold time.Duration) time.Time {
	if st.maxTS.IsZero() {
		return st.maxTS
	}
	return time.Unix(0, heldBackNS(st.maxTS.UnixNano(), slowestNS(slowest), int64(hold))).UTC()
}

// flowHeap orders streams by event time, oldest first.
type flowHeap []*stream

func (h flowHeap) Len() int           { return len(h) }
func (h flowHeap) Less(i, j int) bool { return h[i].maxTS.Before(h[j].maxTS) }
func (h flowHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].flow, h[j].flow = i, j
}
func (h *flowHeap) Push(x any) {
	st := x.(*stream)
	st.flow = len(*h)
	*h = append(*h, st)
}
func (h *flowHeap) Pop() any {
	old := *h
	st := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	st.flow = -1
	return st
}

// halfHeap orders waiting halves by event time.
type halfHeap []*half

func (h halfHeap) Len() int { return len(h) }
func (h halfHeap) Less(i, j int) bool {
	if h[i].ts == h[j].ts {
		return h[i].off < h[j].off
	}
	return h[i].ts < h[j].ts
}
func (h halfHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = int32(i), int32(j) //nolint:gosec // G115: below MaxPending, far below 2^31 halves
}
func (h *halfHeap) Push(x any) {
	it := x.(*half)
	it.index = int32(len(*h)) //nolint:gosec // G115: as in Swap
	*h = append(*h, it)
}
func (h *halfHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.index = -1
	return it
}
