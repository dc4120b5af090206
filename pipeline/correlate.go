package pipeline

import (
	"container/heap"
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
	if c.MaxPendingBytes <= 0 {
		c.MaxPendingBytes = 512 << 20
	}
}

// half is a request or response event waiting for its other half. It is
// kept small (the event packed, time as nanoseconds, an intrusive list):
// a pending request costs well under 512 bytes beyond its bodies.
type half struct {
	key   string
	ev    packed
	pos   Position
	ts    int64 // event time, Unix nanoseconds
	index int   // in the pending heap
	next  *half // the next half waiting under the same key
}

// correlator pairs request and response events into observations, merges
// the observations several observers made of one exchange, and releases
// the merged exchanges in event-time order once no earlier request can
// still complete. Time is event time only: replaying the same input gives
// the same output. A correlator is not safe for concurrent use.
type correlator struct {
	cfg       CorrelatorConfig
	waiting   map[string]*half // by pair key, oldest first (a list through next)
	pending   halfHeap
	bytes     int64
	merging   mergeSet
	maxTS     time.Time
	evictions int
}

// newCorrelator returns a correlator with cfg's bounds.
func newCorrelator(cfg CorrelatorConfig) *correlator {
	cfg.defaults()
	return &correlator{cfg: cfg, waiting: map[string]*half{}, merging: newMergeSet(cfg.MergeWindow)}
}

// Pending returns the number of halves waiting and their estimated bytes.
func (c *correlator) Pending() (int, int64) { return len(c.pending), c.bytes }

// Evictions returns how many halves the bounds have evicted so far.
func (c *correlator) Evictions() int { return c.evictions }

// Add takes one decoded, deduplicated, redacted event.
func (c *correlator) Add(ev *schema.Event, pos Position) {
	if ev.TS.After(c.maxTS) {
		c.maxTS = ev.TS
	}
	if ev.Kind == schema.KindExchange {
		c.complete(&observation{req: ev, resp: ev, positions: []Position{pos}, ts: ev.TS})
		return
	}
	key := pairKey(ev)
	isReq := ev.Kind == schema.KindRequest
	var prev *half
	for h := c.waiting[key]; h != nil; prev, h = h, h.next {
		if h.ev.isRequest() == isReq {
			continue
		}
		c.unlink(key, prev, h)
		heap.Remove(&c.pending, h.index)
		c.bytes -= h.size()
		o := &observation{positions: []Position{h.pos, pos}}
		if isReq {
			o.req, o.resp = ev, h.ev.unpack()
		} else {
			o.req, o.resp = h.ev.unpack(), ev
		}
		o.ts = o.req.TS
		c.complete(o)
		return
	}
	h := &half{key: key, ev: pack(ev), pos: pos, ts: ev.TS.UnixNano()}
	if prev == nil {
		c.waiting[key] = h
	} else {
		prev.next = h
	}
	heap.Push(&c.pending, h)
	c.bytes += h.size()
	for len(c.pending) > c.cfg.MaxPending || c.bytes > c.cfg.MaxPendingBytes {
		c.evictions++
		c.expire(c.pending[0], true)
	}
}

// halfOverhead is what a waiting half costs besides its blob, bodies and
// key: the struct, the map entry and the heap slot.
const halfOverhead = 200

// size estimates the memory a waiting half holds.
func (h *half) size() int64 { return h.ev.size() + int64(len(h.key)) + halfOverhead }

// unlink removes h, whose predecessor under key is prev, from the list.
func (c *correlator) unlink(key string, prev, h *half) {
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

// pairKey ties a request event to its response event: one observer's
// exchange id, else its session and JSON-RPC id.
func pairKey(ev *schema.Event) string {
	prefix := ev.Source + "\x00" + ev.Observer + "\x00"
	if ev.ExchangeID != "" {
		return prefix + "e\x00" + ev.ExchangeID
	}
	var id string
	if ev.Kind == schema.KindRequest {
		id, _ = classify.RequestID(bytesOf(ev.RequestBody))
	} else {
		id, _ = classify.ResponseID(ev.ResponseHeaders["content-type"], bytesOf(ev.ResponseBody))
	}
	return prefix + "s\x00" + ev.SessionID + "\x00" + id
}

// expire emits a waiting half alone: a request as NO_RESPONSE, a response
// as an orphan whose request was never seen.
func (c *correlator) expire(h *half, evicted bool) {
	heap.Remove(&c.pending, h.index)
	c.bytes -= h.size()
	var prev *half
	for x := c.waiting[h.key]; x != nil && x != h; x = x.next {
		prev = x
	}
	c.unlink(h.key, prev, h)
	ev := h.ev.unpack()
	o := &observation{positions: []Position{h.pos}, ts: ev.TS, evicted: evicted}
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
	c.complete(o)
}

func (c *correlator) complete(o *observation) {
	o.classify()
	c.merging.add(o)
}

// Advance moves event time forward by d without input: the engine calls
// it when the source has been idle, so that the last exchanges of a burst
// are released instead of waiting for the next event.
func (c *correlator) Advance(d time.Duration) {
	if !c.maxTS.IsZero() && d > 0 {
		c.maxTS = c.maxTS.Add(d)
	}
}

// Watermark is the event time up to which the input is taken as complete.
func (c *correlator) Watermark() time.Time {
	if c.maxTS.IsZero() {
		return c.maxTS
	}
	return c.maxTS.Add(-c.cfg.Lateness)
}

// Release expires what the watermark has passed and emits, in event-time
// order, every merged exchange that no earlier pending request can still
// precede. With final set (end of input) everything pending is expired and
// emitted.
func (c *correlator) Release(final bool, emit func(*group)) {
	wm := c.Watermark()
	for len(c.pending) > 0 && (final || !time.Unix(0, c.pending[0].ts).Add(c.cfg.PairWindow).After(wm)) {
		c.expire(c.pending[0], false)
	}
	var oldest time.Time
	if len(c.pending) > 0 {
		oldest = time.Unix(0, c.pending[0].ts)
	}
	c.merging.release(final, wm, oldest, emit)
}

// halfHeap orders waiting halves by event time.
type halfHeap []*half

func (h halfHeap) Len() int { return len(h) }
func (h halfHeap) Less(i, j int) bool {
	if h[i].ts == h[j].ts {
		return h[i].pos.Offset < h[j].pos.Offset
	}
	return h[i].ts < h[j].ts
}
func (h halfHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *halfHeap) Push(x any) {
	it := x.(*half)
	it.index = len(*h)
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
