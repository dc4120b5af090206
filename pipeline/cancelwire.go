package pipeline

import (
	"slices"
	"time"

	"github.com/valyala/fastjson"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// Cancels that name no client.
//
// The Go SDK on the 2026-07-28 wire closes a call's stream and then POSTs
// a notifications/cancelled with neither a session (the wire has none)
// nor the io.modelcontextprotocol/clientInfo _meta its calls carry: only
// params.requestId and the transport's User-Agent ("Go-http-client/1.1")
// say whose call it cancels, so the call keys, which name the client,
// cannot find its call. Such a cancel is matched on the transport instead
// (wireKey: server, the observer that logged both, User-Agent, JSON-RPC
// id) to a session-less call that got no complete answer (a stream the
// client closed, a cut, no response, -32800) that the client may have
// cancelled when the cancel was sent (inSpan). A User-Agent is shared by every client built on the same HTTP
// library, and ids restart per client, so two calls that both fit make the
// cancel ambiguous: it then joins neither.

// wireSlack is how long after the end its observer logged for a call a
// cancel of it may still be sent (the client closes the stream, then
// POSTs the notice).
const wireSlack = time.Second

// wireWait is how long after its request a client still waiting for the
// answer (the server cut the stream, or nothing came) may cancel it: the
// SDKs' default request timeout (TypeScript's and Go's are 60 s).
const wireWait = time.Minute

// inSpan reports whether a cancel sent at at may name a call sent at start
// whose observer logged its end at end: from the request (less the least
// clock tolerance) to a second after a stream the client closed itself,
// else to the later of that and the client's request timeout.
func inSpan(at, start, end time.Time, clientClosed bool) bool {
	to := end.Add(wireSlack)
	if !clientClosed {
		to = later(to, start.Add(wireWait))
	}
	return !at.Before(start.Add(-minResidualTolerance)) && !at.After(to)
}

// closedByClient reports whether the client itself closed the stream or
// the connection, which it does on giving up, just before its cancel.
func closedByClient(closeReason, transportError string) bool {
	return closeReason == "client_abort" || transportError == "client_abort"
}

// wireKey names a session-less request by its transport, for a cancel that
// names no client; "" without a User-Agent or an id.
func wireKey(server, source, observer, userAgent, id string) string {
	if userAgent == "" || id == "" {
		return ""
	}
	return "w\x00" + server + "\x00" + source + "\x00" + observer + "\x00" + userAgent + "\x00" + id
}

// gaveUp reports whether a call got no complete answer: what a cancel
// leaves behind.
func gaveUp(r *classify.Result) bool {
	switch r.Outcome {
	case classify.Cancelled, classify.NoResponse, classify.StreamIncomplete, classify.TransportError:
		return true
	}
	return r.ErrorClass == classify.RequestCancelled
}

// nameless parses a cancel and returns the id it names when the cancel
// carries no session and no clientInfo, else "".
func nameless(p *fastjson.Parser, session, body string) string {
	if session != "" {
		return ""
	}
	v, err := p.Parse(body)
	if err != nil || v.Get("params", "_meta", metaClientInfo) != nil {
		return ""
	}
	id := v.Get("params", "requestId")
	if id == nil {
		return ""
	}
	return string(id.MarshalTo(nil))
}

// wireCancel is, for a cancel that names no client, its transport key,
// the key its server's session-less requests with its id wait under in
// the correlator (its anyClientKey), when it was sent (on the reference
// clock) and the calls it can name.
type wireCancel struct {
	pending hkey // the hash of its anyClient key (pendingKeys)
	at      time.Time
	targets []*group
}

// target is the one call the cancel names, or nil when none or several
// fit.
func (w *wireCancel) target() *group {
	if len(w.targets) != 1 {
		return nil
	}
	return w.targets[0]
}

// viewWireKey is wireKey for a view's request, with the observer that
// logged it.
func viewWireKey(ev, req *schema.Event, id string) string {
	if ev.SessionID != "" || req == nil {
		return ""
	}
	return wireKey(serverName(ev), ev.Source, ev.Observer, req.RequestHeaders.Get("user-agent"), id)
}

// indexWire matches, by transport, a cancel that names no client with the
// session-less calls that gave up while it was sent, whichever of them
// arrives first.
func (m *mergeSet) indexWire(o *observation, g *group) {
	ev, r := o.first(), &o.result
	if ev.SessionID != "" || o.req == nil {
		return
	}
	if r.Method == "notifications/cancelled" {
		if g.wire != nil {
			return
		}
		id := nameless(&m.clients.p, ev.SessionID, o.req.RequestBody)
		wk := viewWireKey(ev, o.req, id)
		if wk == "" {
			return
		}
		k := m.h.of(wk)
		g.wire = &wireCancel{pending: m.h.of("p", serverName(ev), id), at: m.onRefClock(o, o.ts)}
		for _, t := range m.byWire[k] {
			m.wireMatch(g, t)
		}
		m.wireCancels[k] = append(m.wireCancels[k], g)
		g.keys = append(g.keys, gkey{keyWireCancel, k})
		return
	}
	if r.Notification || r.JSONRPCID == "" || !gaveUp(r) {
		return
	}
	wk := viewWireKey(ev, o.req, r.JSONRPCID)
	if wk == "" {
		return
	}
	k := m.h.of(wk)
	if slices.Contains(m.byWire[k], g) {
		return
	}
	m.byWire[k] = append(m.byWire[k], g)
	g.keys = append(g.keys, gkey{keyWire, k})
	for _, c := range m.wireCancels[k] {
		m.wireMatch(c, g)
	}
}

// wireMatch adds call t to cancel c's candidates when c was sent while t
// ran.
func (m *mergeSet) wireMatch(c, t *group) {
	if c == t || c.index < 0 || slices.Contains(c.wire.targets, t) || !m.spans(t, c.wire.at) {
		return
	}
	c.wire.targets = append(c.wire.targets, t)
	if t.wiredBy == nil {
		t.wiredBy = c
	}
}

// spans reports whether a cancel sent at at (on the reference clock) may
// name g's call (inSpan), from the earliest request and the latest end of
// its views.
func (m *mergeSet) spans(g *group, at time.Time) bool {
	var start, end time.Time
	closed := false
	for _, o := range g.obs {
		e, _ := endTime(o)
		start = earliest(start, m.onRefClock(o, o.ts))
		end = later(end, m.onRefClock(o, e))
		closed = closed || (o.resp != nil && closedByClient(o.resp.CloseReason, o.resp.TransportError))
	}
	return inSpan(at, start, end, closed)
}

// wireWaitsFor returns what a cancel that names no client is released
// after: a candidate call still waiting in h, pendingCall while a
// session-less request with its id waits in the correlator, else nil.
// Requests of other clients with the id keep coming, but a call the cancel names
// began before it, so once the watermark wm passed the cancel by the pair
// window (and a merge window more) every candidate has come.
func (m *mergeSet) wireWaitsFor(g *group, h *groupHeap, wm time.Time) *group {
	w := g.wire
	if w == nil {
		return nil
	}
	for _, t := range w.targets {
		if t.index >= 0 && t.heap == h {
			return t
		}
	}
	if m.waitingRequest(w.pending) && !wm.After(w.at.Add(m.pairWindow+m.window)) {
		return pendingCall
	}
	return nil
}

// wireCall is what the chains remember of a session-less call that gave
// up, for a cancel that names no client: its chain, client and lifetime.
type wireCall struct {
	chainID, name, version string
	ts, end                int64 // Unix nanoseconds: request sent, answer ended
	closed                 bool  // the client closed the stream
}

// maxWireCalls bounds the calls remembered under one transport key (one
// User-Agent's clients calling one server with the same id at once).
const maxWireCalls = 8

// recordWireKey is wireKey for a record and its bodies.
func recordWireKey(rec *schema.Exchange, body *schema.Body, id string) string {
	if rec.SessionID != "" {
		return ""
	}
	return wireKey(rec.Server, rec.Source, rec.Observer, body.RequestHeaders.Get("user-agent"), id)
}

// rememberWire keeps a session-less call that gave up under its transport
// key.
func (c *chains) rememberWire(rec *schema.Exchange, body *schema.Body) {
	if rec.Notification || rec.JSONRPCID == "" || !gaveUp(&rec.Result) {
		return
	}
	wk := recordWireKey(rec, body, rec.JSONRPCID)
	if wk == "" {
		return
	}
	ws := c.wire[wk]
	if len(ws) == 0 && len(c.wire)+len(c.last) >= c.cfg.MaxKeys {
		c.dropOldest()
	}
	if len(ws) >= maxWireCalls {
		ws = slices.Delete(ws, 0, 1)
	}
	w := wireCall{chainID: rec.ChainID, name: rec.ClientName, version: rec.ClientVersion, ts: rec.TS.UnixNano(), end: rec.EndTS.UnixNano(),
		closed: closedByClient(rec.CloseReason, rec.TransportError)}
	c.wire[wk] = append(ws, w)
	c.ring.push(keyTime{wk, w.ts})
}

// forgetWire drops the call kt remembered under a transport key, if it is
// there.
func (c *chains) forgetWire(kt keyTime) bool {
	ws, ok := c.wire[kt.key]
	if !ok {
		return false
	}
	n := len(ws)
	ws = slices.DeleteFunc(ws, func(w wireCall) bool { return w.ts == kt.ts })
	if len(ws) == 0 {
		delete(c.wire, kt.key)
	} else {
		c.wire[kt.key] = ws
	}
	return len(ws) < n
}

// linkWire puts a cancel that names no client into the chain of the one
// session-less call that gave up, under its transport key, while the
// cancel was sent, and names the cancel's client after it.
func (c *chains) linkWire(rec *schema.Exchange, body *schema.Body, id string) {
	ws := c.wire[recordWireKey(rec, body, id)]
	var found *wireCall
	for i := range ws {
		if !inSpan(rec.TS, time.Unix(0, ws[i].ts), time.Unix(0, ws[i].end), ws[i].closed) {
			continue
		}
		if found != nil {
			return // two calls fit: it names neither for sure
		}
		found = &ws[i]
	}
	if found != nil {
		rec.ChainID = found.chainID
		rec.ClientName, rec.ClientVersion = found.name, found.version
	}
}
