package pipeline

import (
	"container/heap"
	"slices"
	"time"

	"github.com/mcplens/mcplens/schema"
)

// group is one HTTP exchange as one or more observers saw it.
type group struct {
	key string
	ts  time.Time // the earliest request time of its views
	// due is when, in event time, the group stops waiting for more views:
	// the merge window after the latest time a view completed. A view is
	// logged when its exchange completes, so a window counted from the
	// request time would close before a slow call's other view arrives.
	due   time.Time
	seq   uint64
	obs   []*observation
	index int
	heap  *groupHeap // the merging heap of the stream that holds the group
}

func (g *group) hasObserver(o *observation) bool {
	for _, x := range g.obs {
		if x.source() == o.source() && x.first().Observer == o.first().Observer {
			return true
		}
	}
	return false
}

// mergeSet holds complete observations for MergeWindow so that views of
// the same exchange from other observers can join them. The groups wait
// in the heap of their stream (the correlator's, one per source stream);
// the keys are shared, so views read from different streams still merge.
type mergeSet struct {
	window time.Duration
	byKey  map[string]*group
	seq    uint64
	n      int
}

func newMergeSet(window time.Duration) mergeSet {
	return mergeSet{window: window, byKey: map[string]*group{}}
}

// mergeKey names the exchange across observers: the exchange id the
// loggers share, else session, JSON-RPC id and method. Without either the
// observation stands alone.
func mergeKey(o *observation) string {
	ev := o.first()
	if ev.ExchangeID != "" {
		return "e\x00" + ev.ExchangeID
	}
	r := &o.result
	if ev.SessionID == "" || r.JSONRPCID == "" || r.Method == "" {
		return ""
	}
	return "k\x00" + serverName(ev) + "\x00" + ev.SessionID + "\x00" + r.JSONRPCID + "\x00" + r.Method
}

// add merges o into the group of its exchange, else starts a group in h.
func (m *mergeSet) add(o *observation, h *groupHeap) {
	key := mergeKey(o)
	if g, ok := m.byKey[key]; ok && key != "" && !g.hasObserver(o) && absDur(g.ts.Sub(o.ts)) <= m.window {
		g.obs = append(g.obs, o)
		g.ts = earlier(g.ts, o.ts)
		if due := o.due(m.window); due.After(g.due) {
			g.due = due
			heap.Fix(g.heap, g.index)
		}
		return
	}
	m.seq++
	m.n++
	g := &group{key: key, ts: o.ts, due: o.due(m.window), seq: m.seq, obs: []*observation{o}, heap: h}
	heap.Push(h, g)
	if key != "" {
		m.byKey[key] = g
	}
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
	for len(*h) > 0 {
		g := (*h)[0]
		if !final && g.due.After(wm) {
			return
		}
		heap.Pop(h)
		m.n--
		if m.byKey[g.key] == g {
			delete(m.byKey, g.key)
		}
		emit(g)
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
	rank := 0
	if o.resp == nil {
		rank += 10 // a view without the response loses to one with it
	}
	switch o.source() {
	case schema.SourceGateway:
	case schema.SourceServer:
		rank++
	default:
		rank += 2
	}
	return rank
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
	rec.BodyTruncated = (p.req != nil && p.req.BodyTruncated) || (p.resp != nil && p.resp.BodyTruncated)
	body.Truncated = rec.BodyTruncated
	rec.EndTS, rec.DurationMS = endTime(p)
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
type groupHeap []*group

func (h groupHeap) Len() int { return len(h) }
func (h groupHeap) Less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].seq < h[j].seq
	}
	return h[i].due.Before(h[j].due)
}
func (h groupHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *groupHeap) Push(x any) {
	g := x.(*group)
	g.index = len(*h)
	*h = append(*h, g)
}
func (h *groupHeap) Pop() any {
	old := *h
	g := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	g.index = -1
	return g
}
