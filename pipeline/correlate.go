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

// half is a request or response event waiting for its other half.
type half struct {
	key   string
	ev    *schema.Event
	pos   Position
	ts    time.Time
	size  int64
	index int // in the pending heap
}

// Correlator pairs request and response events into observations, merges
// the observations several observers made of one exchange, and releases
// the merged exchanges in event-time order once no earlier request can
// still complete. Time is event time only: replaying the same input gives
// the same output. A Correlator is not safe for concurrent use.
type Correlator struct {
	cfg       CorrelatorConfig
	waiting   map[string][]*half // by pair key, oldest first
	pending   halfHeap
	bytes     int64
	merging   mergeSet
	maxTS     time.Time
	evictions int
}

// NewCorrelator returns a correlator with cfg's bounds.
func NewCorrelator(cfg CorrelatorConfig) *Correlator {
	cfg.defaults()
	return &Correlator{cfg: cfg, waiting: map[string][]*half{}, merging: newMergeSet(cfg.MergeWindow)}
}

// Pending returns the number of halves waiting and their estimated bytes.
func (c *Correlator) Pending() (int, int64) { return len(c.pending), c.bytes }

// Evictions returns how many halves the bounds have evicted so far.
func (c *Correlator) Evictions() int { return c.evictions }

// Add takes one decoded, deduplicated, redacted event.
func (c *Correlator) Add(ev *schema.Event, pos Position) {
	if ev.TS.After(c.maxTS) {
		c.maxTS = ev.TS
	}
	if ev.Kind == schema.KindExchange {
		c.complete(&observation{req: ev, resp: ev, positions: []Position{pos}, ts: ev.TS})
		return
	}
	key := pairKey(ev)
	list := c.waiting[key]
	for i, h := range list {
		if (h.ev.Kind == schema.KindRequest) == (ev.Kind == schema.KindRequest) {
			continue
		}
		c.waiting[key] = append(list[:i:i], list[i+1:]...)
		if len(c.waiting[key]) == 0 {
			delete(c.waiting, key)
		}
		heap.Remove(&c.pending, h.index)
		c.bytes -= h.size
		o := &observation{positions: []Position{h.pos, pos}}
		if ev.Kind == schema.KindRequest {
			o.req, o.resp = ev, h.ev
		} else {
			o.req, o.resp = h.ev, ev
		}
		o.ts = o.req.TS
		c.complete(o)
		return
	}
	h := &half{key: key, ev: ev, pos: pos, ts: ev.TS, size: eventSize(ev)}
	c.waiting[key] = append(list, h)
	heap.Push(&c.pending, h)
	c.bytes += h.size
	for len(c.pending) > c.cfg.MaxPending || c.bytes > c.cfg.MaxPendingBytes {
		c.evictions++
		c.expire(c.pending[0], true)
	}
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

// eventSize estimates what a waiting event costs in memory: its strings,
// headers and a fixed overhead for the struct, the map entry and the heap.
func eventSize(ev *schema.Event) int64 {
	n := 480 + len(ev.RequestBody) + len(ev.ResponseBody) + len(ev.EventID) + len(ev.ExchangeID) + len(ev.SessionID)
	for k, v := range ev.RequestHeaders {
		n += len(k) + len(v) + 32
	}
	for k, v := range ev.ResponseHeaders {
		n += len(k) + len(v) + 32
	}
	return int64(n)
}

// expire emits a waiting half alone: a request as NO_RESPONSE, a response
// as an orphan whose request was never seen.
func (c *Correlator) expire(h *half, evicted bool) {
	heap.Remove(&c.pending, h.index)
	c.bytes -= h.size
	list := c.waiting[h.key]
	for i, x := range list {
		if x == h {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(c.waiting, h.key)
	} else {
		c.waiting[h.key] = list
	}
	o := &observation{positions: []Position{h.pos}, ts: h.ts, evicted: evicted}
	switch {
	case h.ev.Kind == schema.KindRequest && evicted:
		o.req, o.reason = h.ev, "pending state full: evicted before its response"
	case h.ev.Kind == schema.KindRequest:
		o.req, o.reason = h.ev, "no response within the pair window"
	case evicted:
		o.resp, o.reason = h.ev, "pending state full: response evicted before its request"
	default:
		o.resp, o.reason = h.ev, "response without a request within the pair window"
	}
	c.complete(o)
}

func (c *Correlator) complete(o *observation) {
	o.classify()
	c.merging.add(o)
}

// Advance moves event time forward by d without input: the engine calls
// it when the source has been idle, so that the last exchanges of a burst
// are released instead of waiting for the next event.
func (c *Correlator) Advance(d time.Duration) {
	if !c.maxTS.IsZero() && d > 0 {
		c.maxTS = c.maxTS.Add(d)
	}
}

// Watermark is the event time up to which the input is taken as complete.
func (c *Correlator) Watermark() time.Time {
	if c.maxTS.IsZero() {
		return c.maxTS
	}
	return c.maxTS.Add(-c.cfg.Lateness)
}

// Release expires what the watermark has passed and emits, in event-time
// order, every merged exchange that no earlier pending request can still
// precede. With final set (end of input) everything pending is expired and
// emitted.
func (c *Correlator) Release(final bool, emit func(*group)) {
	wm := c.Watermark()
	for len(c.pending) > 0 && (final || !c.pending[0].ts.Add(c.cfg.PairWindow).After(wm)) {
		c.expire(c.pending[0], false)
	}
	var oldest time.Time
	if len(c.pending) > 0 {
		oldest = c.pending[0].ts
	}
	c.merging.release(final, wm, oldest, emit)
}

// halfHeap orders waiting halves by event time.
type halfHeap []*half

func (h halfHeap) Len() int { return len(h) }
func (h halfHeap) Less(i, j int) bool {
	if h[i].ts.Equal(h[j].ts) {
		return h[i].pos.Offset < h[j].pos.Offset
	}
	return h[i].ts.Before(h[j].ts)
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
