package pipeline

import (
	"strings"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// MaxFlightsPerSession bounds the unreleased attempts of one session that
// the flights index keeps: a session with more at once has its later ones
// left out (a re-send of one of those is not linked to it).
const MaxFlightsPerSession = 64

// flights indexes, by session, the calls not yet released to the chains:
// the request halves that wait in the correlator for their answer, and the
// complete exchanges that wait in the merge set for other views. The
// correlator releases an exchange once it is answered and its merge
// window closed, so a client that gives up on a slow call and sends it
// again gets its re-send released first; with this index the chains can
// still name the attempt the re-send repeats (chains.Link). Only calls
// with a session id are indexed: a session-less call's retry key names its
// client, which is known only once its exchange is released.
//
// An entry is a pointer and the hash of its call, computed the first time
// a release in its session asks (a waiting request's body is parsed then,
// with classify.CallOf, not on arrival; a complete exchange is classified
// already): 32 bytes an unreleased call, plus a map entry per
// session with calls unreleased. Adding costs O(1), removing and a lookup
// O(MaxFlightsPerSession) at most (one session's entries).
type flights struct {
	h  *keyHasher // the merge set's: a group's session key is its "s" key
	by map[hkey][]flight
	// free are the emptied lists of sessions with nothing unreleased,
	// for the next session to start one (most sessions have one call
	// at a time: their list empties and fills again with each call).
	free [][]flight
}

// maxFree bounds the emptied lists kept for reuse.
const maxFree = 1024

type flight struct {
	h    *half  // a request waiting for its answer, or
	g    *group // a complete exchange waiting in the merge set
	call hkey   // zero until asked; noCall when the request makes none
}

// noCall marks a request that makes no call a retry can repeat.
var noCall = hkey{Lo: 1}

// unreleased is what the chains learn of an attempt not yet released.
type unreleased struct {
	id string
	ts int64 // Unix nanoseconds, as its record's ts
	// answered says its answer had ended by the time asked about; done
	// that it then worked (or asked for input), unknown that its outcome
	// is not known.
	answered, done, unknown bool
}

// sessionKey is the merge set's "s" key of a session.
func (f *flights) sessionKey(server, session string) hkey { return f.h.of("s", server, session) }

func (f *flights) add(k hkey, e flight) {
	if f.by == nil {
		f.by = map[hkey][]flight{}
	}
	l, ok := f.by[k]
	if !ok && len(f.free) > 0 {
		l = f.free[len(f.free)-1]
		f.free[len(f.free)-1] = nil
		f.free = f.free[:len(f.free)-1]
	}
	if len(l) < MaxFlightsPerSession {
		f.by[k] = append(l, e)
	}
}

// addHalf indexes h, a request half that starts waiting, with its event.
func (f *flights) addHalf(h *half, ev *schema.Event) {
	if ev.SessionID != "" {
		f.add(f.sessionKey(serverName(ev), ev.SessionID), flight{h: h})
	}
}

// addGroup indexes g, a new group of the merge set with a session.
func (f *flights) addGroup(g *group) {
	if g.session != (hkey{}) {
		f.add(g.session, flight{g: g})
	}
}

// removeHalf forgets h, a request half that stopped waiting (answered,
// expired or evicted), if it was indexed.
func (f *flights) removeHalf(h *half) {
	if sid := h.ev.str(packedSessionID); sid != "" {
		f.remove(f.sessionKey(packedServerName(h.ev), sid), func(e *flight) bool { return e.h == h })
	}
}

// removeGroup forgets g, released from the merge set.
func (f *flights) removeGroup(g *group) {
	if g.session != (hkey{}) {
		f.remove(g.session, func(e *flight) bool { return e.g == g })
	}
}

func (f *flights) remove(k hkey, is func(*flight) bool) {
	l := f.by[k]
	for i := range l {
		if !is(&l[i]) {
			continue
		}
		last := len(l) - 1
		l[i] = l[last]
		l[last] = flight{}
		if last == 0 {
			delete(f.by, k)
			if cap(l) <= 8 && len(f.free) < maxFree {
				f.free = append(f.free, l[:0])
			}
		} else {
			f.by[k] = l[:last]
		}
		return
	}
}

// find returns the latest attempt of call in server's session that is
// not yet released and was sent before the Unix nanosecond before, as
// the observer kind source saw it: the times of one kind of observer (a
// gateway's, a client's) compare, a client's and a gateway's may be
// seconds apart. Of a call seen by several observers of that kind, the
// view its record will take its id from (the one with its response).
func (f *flights) find(server, session, source string, call classify.Call, before int64) (unreleased, bool) {
	if session == "" || len(f.by) == 0 {
		return unreleased{}, false
	}
	l := f.by[f.sessionKey(server, session)]
	if len(l) == 0 {
		return unreleased{}, false
	}
	want := f.h.of(call.Method, call.ToolName, call.ParamsHash)
	kind := observerRank(source)
	var best *flight
	var bestTS int64
	bestRank := 0
	for i := range l {
		e := &l[i]
		if e.call == (hkey{}) {
			e.call = f.callOf(e)
		}
		if e.call != want {
			continue
		}
		ts, rank := e.when()
		if ts >= before || rank%10 != kind {
			continue
		}
		if best == nil || rank < bestRank || (rank == bestRank && ts > bestTS) {
			best, bestTS, bestRank = e, ts, rank
		}
	}
	if best == nil {
		return unreleased{}, false
	}
	return best.describe(before), true
}

// when is the entry's send time and the rank of its view: observerRank,
// 10 more for a view without its response (sourceRank).
func (e *flight) when() (int64, int) {
	if e.h != nil {
		return e.h.ts, observerRank(e.h.ev.str(packedSource))
	}
	o := bestView(e.g)
	return o.ts.UnixNano(), sourceRank(o)
}

// callOf hashes the call an entry makes (noCall for none): a group's
// view is classified already, a waiting request is parsed.
func (f *flights) callOf(e *flight) hkey {
	var c classify.Call
	if e.h != nil {
		var ok bool
		if c, ok = classify.CallOf(bytesOf(e.h.ev.reqBody)); !ok {
			return noCall
		}
	} else {
		r := &bestView(e.g).result
		if r.ParamsHash == "" || r.Continuation || r.Notification {
			return noCall
		}
		c = classify.Call{Method: r.Method, ToolName: r.ToolName, ParamsHash: r.ParamsHash}
	}
	return f.h.of(c.Method, c.ToolName, c.ParamsHash)
}

// describe is what the chains learn of the entry, asked about at before.
func (e *flight) describe(before int64) unreleased {
	if e.h != nil {
		p := e.h.ev
		ev := schema.Event{ExchangeID: p.str(packedExchangeID), Kind: p.str(packedKind), EventID: p.str(packedEventID)}
		return unreleased{id: strings.Clone(exchangeID(&ev)), ts: e.h.ts, unknown: true}
	}
	o := bestView(e.g)
	end, _ := endTime(o)
	u := unreleased{id: strings.Clone(exchangeID(o.first())), ts: o.ts.UnixNano(), answered: end.UnixNano() <= before}
	u.done = succeeded[o.result.Outcome] || o.result.Outcome == classify.InputRequired
	u.unknown = !o.result.OutcomeKnown
	return u
}

// bestView is the view of g its record takes its HTTP view and id from
// (group.record).
func bestView(g *group) *observation {
	best := g.obs[0]
	for _, o := range g.obs[1:] {
		if sourceRank(o) < sourceRank(best) {
			best = o
		}
	}
	return best
}

// packedServerName is serverName of a packed event.
func packedServerName(p packed) string {
	if s := p.str(packedServer); s != "" {
		return s
	}
	return serverName(&schema.Event{URL: p.str(packedURL)})
}
