package pipeline

import (
	"math"
	"strings"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// ChainConfig bounds retry-chain state. Zero fields mean defaults.
type ChainConfig struct {
	// Window is how far back, in event time, an exchange may be the
	// earlier attempt of a retry. Default 10m.
	Window time.Duration
	// MaxKeys bounds the remembered last attempts. Default 1,000,000.
	MaxKeys int
}

func (c *ChainConfig) defaults() {
	if c.Window <= 0 {
		c.Window = 10 * time.Minute
	}
	if c.MaxKeys <= 0 {
		c.MaxKeys = 1_000_000
	}
}

// lastAttempt is what a chain remembers of its newest exchange.
type lastAttempt struct {
	id, chainID   string
	ts            int64 // Unix nanoseconds: the ring entry that wrote it
	attempt       int
	origin        string // its retry_origin, which an MRTR round keeps
	done          bool   // it worked (or asked for input): a repeat starts a new chain
	inputRequired bool
	unknownBefore bool // some attempt of the chain had an unknown outcome
	session       string
	end           int64 // Unix nanoseconds its answer ended; ts when it has none
	kind          uint8 // observerRank of its source
}

// keyTime is one entry of the expiry ring: the key a Link wrote and the
// event time it wrote it with.
type keyTime struct {
	key string
	ts  int64 // Unix nanoseconds
}

// attempt is what the retry window keeps of a call's newest exchange:
// lastAttempt without what only a re-send from another session needs. It
// holds no pointers: its exchange id, and its chain id where that is
// another, are in the chains' textRing, back to back.
type attempt struct {
	ids      textRef // the id, then the chain id unless chainLen is 0, then the id before
	chainLen uint32  // 0: the chain id is the id
	attempt  int32
	// span is the milliseconds from its ts to the end of its answer, so
	// that a re-send sent before that end is known to repeat a call still
	// in flight; saturated at about 49 days.
	span   uint32
	origin uint8 // index into chains.originNames
	// kind is observerRank of its record's source: a span compares with
	// a later send time only on the same kind of observer's clock.
	kind uint8
	// ahead: its retry_of names an attempt released after it (flightOf).
	done, inputRequired, unknownBefore, ahead bool
	// beforeLen is the length of the id kept last in ids when ahead: the
	// attempt before the one it named, which that one re-sent (earlier);
	// 0 for none.
	beforeLen uint16
}

// lastOf returns what a is, without its ids (withIDs adds them).
func (c *chains) lastOf(a *attempt, ts int64) lastAttempt {
	return lastAttempt{ts: ts, attempt: int(a.attempt), origin: c.originNames[a.origin],
		done: a.done, inputRequired: a.inputRequired, unknownBefore: a.unknownBefore,
		end: ts + int64(a.span)*int64(time.Millisecond), kind: a.kind}
}

// withIDs sets l's ids to a's, copied out of the window.
func (c *chains) withIDs(l *lastAttempt, a *attempt) {
	l.id, l.chainID = c.idsOf(a)
}

// idsOf returns copies of a's exchange and chain ids.
func (c *chains) idsOf(a *attempt) (id, chainID string) {
	b := c.ids.bytes(a.ids)
	b = b[:len(b)-int(a.beforeLen)]
	n := len(b) - int(a.chainLen)
	id = string(b[:n])
	if a.chainLen == 0 {
		return id, id
	}
	return id, string(b[n:])
}

// beforeOf returns a copy of the id of the attempt before the one a
// named, "" for none.
func (c *chains) beforeOf(a *attempt) string {
	b := c.ids.bytes(a.ids)
	return string(b[len(b)-int(a.beforeLen):])
}

// keepIDs puts an attempt's ids into the window's textRing: its own, its
// chain's unless that is its own, and before (beforeOf) unless too long.
func (c *chains) keepIDs(a *attempt, id, chainID, before string) {
	if len(before) > math.MaxUint16 {
		before = ""
	}
	a.beforeLen = uint16(len(before)) //nolint:gosec // G115: checked above
	if chainID == id {
		a.ids = c.ids.add(id + before)
		return
	}
	a.ids = c.ids.add(id + chainID + before)
	a.chainLen = uint32(len(chainID)) //nolint:gosec // G115: a string's length in the ring
}

// trimIDs forgets the ids of attempts the window let go.
func (c *chains) trimIDs() {
	if a, ok := c.retries.front(); ok {
		c.ids.release(a.ids)
		return
	}
	c.ids.releaseAll()
}

// chains links exchanges across time: retries of a failed or unknown
// attempt (same server, session or client, method, tool and params hash),
// MRTR follow-ups to the input request they answer, and the client's own
// conclusion to the classification. It learns tool annotations from
// recorded tools/list results. Exchanges come as the correlator releases
// them: in event-time order but for a slow exchange, released once
// answered, after later ones of the same call (earlier). It is not safe
// for concurrent use.
//
// Every Link costs O(1) amortised whatever the window holds. Each call
// leaves one entry in a window keyed by hash (keyed.go): its attempt,
// found by its retry key (the newest attempt of the call) and by its
// JSON-RPC id (for a cancel that names it); MaxKeys bounds the retry
// keys. What only some calls leave
// (an attempt a re-send from another session may continue, a session-less
// call that gave up) lives in last and wire under string keys, with the
// order they were written in a ring of their own. Strings kept beyond
// the record are copied, so that a window never holds the line or the
// packed half they were read from.
type chains struct {
	cfg         ChainConfig
	h           keyHasher
	retries     keyed[attempt] // by retryKey, and by callKey for a cancel
	ids         textRing       // the attempts' ids, in their order
	last        map[string]lastAttempt
	wire        map[string][]wireCall // session-less calls that gave up (cancelwire.go)
	ring        ring[keyTime]
	originIdx   map[string]uint8 // retry_origin values, numbered
	originNames []string         // and by number; 0 is ""
	annotations *annotations
	// sessionStart, when set, says when a session was first seen (from
	// clients), for retries across sessions.
	sessionStart func(server, session string) (time.Time, bool)
	// sessionSeen, when set, says when a session's latest exchange was
	// sent (from clients).
	sessionSeen func(server, session string) (time.Time, bool)
	// unreleased, when set, describes the latest attempt of a call in a
	// session that the correlator has not released yet, sent before the
	// Unix nanosecond before (correlator.unreleased).
	unreleased func(server, session, source string, call classify.Call, before int64) (unreleased, bool)
	// seeded is, while Seed links a stored exchange, what the store says
	// of its links.
	seeded *seed
}

// seed is what a stored exchange keeps of its links for the window: its
// chain, and whether its retry_of names an attempt the store does not
// hold yet (attempt.ahead).
type seed struct {
	chainID string
	ahead   bool
}

// Seed puts a stored exchange into the window (after a restart, from the
// store's last chain window) as it was linked: its record is written
// already, so only what later exchanges learn from it matters. Its stored
// chain wins over the one linking it again gives (which can differ once
// an attempt it named was released after it, flightOf), and ahead says
// that such an attempt is still to come, so that it joins the chain as the
// attempt before it when released.
func (c *chains) Seed(rec *schema.Exchange, ahead bool) {
	c.seeded = &seed{chainID: rec.ChainID, ahead: ahead}
	defer func() { c.seeded = nil }()
	c.Link(rec)
}

// newChains returns empty chain state.
func newChains(cfg ChainConfig, ann *annotations) *chains {
	cfg.defaults()
	if ann == nil {
		ann = newAnnotations()
	}
	return &chains{cfg: cfg, h: newKeyHasher(), retries: newKeyed[attempt](cfg.MaxKeys),
		last: map[string]lastAttempt{}, wire: map[string][]wireCall{}, originIdx: map[string]uint8{"": 0}, originNames: []string{""}, annotations: ann}
}

// retryKey is what makes two exchanges the same call.
func (c *chains) retryKey(rec *schema.Exchange) hkey {
	if rec.SessionID == "" {
		return c.h.of("c", rec.Server, rec.ClientName, rec.Method, rec.ToolName, rec.ParamsHash)
	}
	return c.h.of("s", rec.Server, rec.SessionID, rec.Method, rec.ToolName, rec.ParamsHash)
}

// keep copies s for a window to hold: s may point into a line or a packed
// half the window must not keep alive.
func keep(s string) string { return strings.Clone(s) }

// origin numbers a retry_origin: the contract names four, and the chains
// add two. Past 255 distinct values a new one is kept as "" (an MRTR
// round then gets what origin gives a record whose logger named none).
func (c *chains) origin(s string) uint8 {
	if i, ok := c.originIdx[s]; ok {
		return i
	}
	if len(c.originNames) > math.MaxUint8 {
		return 0
	}
	i := uint8(len(c.originNames)) //nolint:gosec // G115: at most 255, checked above
	name := keep(s)
	c.originIdx[name] = i
	c.originNames = append(c.originNames, name)
	return i
}

var succeeded = map[classify.Outcome]bool{classify.Success: true, classify.ToolSuccess: true, classify.Accepted: true}

// Link fills the chain fields of rec (attempt, retry_of, chain_id,
// continues, unknown_side_effect_retry, retry_origin, client_disagrees)
// and lowers its side-effect risk when the tool is known to be read-only.
func (c *chains) Link(rec *schema.Exchange) {
	c.expire(rec.TS)
	c.disagreement(rec)
	if ann, ok := c.annotations.Get(rec.Server, rec.ToolName); ok && ann.ReadOnly && rec.SideEffectRisk != classify.RiskNone {
		rec.SideEffectRisk = classify.RiskNone
	}
	if rec.Notification || rec.ParamsHash == "" || rec.Method == "" {
		c.standalone(rec)
		return
	}
	key := c.retryKey(rec)
	var prev *lastAttempt
	var inWindow *attempt // prev in the window: its ids are copied only when linked
	var prevTS int64
	if a, ts, ok := c.retries.getAt(key); ok {
		l := c.lastOf(a, ts)
		prev, inWindow, prevTS = &l, a, ts
	}
	if inWindow != nil && c.isID(inWindow, baseExchangeID(rec.ExchangeID)) {
		c.again(rec, inWindow)
		return
	}
	if inWindow != nil && rec.TS.UnixNano() < prevTS && !rec.Continuation {
		c.earlier(rec, inWindow)
		return
	}
	ahead, isAhead := c.flightOf(rec, inWindow != nil, prevTS)
	// A tool call that worked but whose answer ended after rec was sent
	// was still in flight: rec re-sent it without knowing its outcome.
	prevInFlight := inWindow != nil && prev.done && rec.Method == "tools/call" && prev.kind == sourceKind(rec) &&
		prevTS < rec.TS.UnixNano() && rec.TS.UnixNano() < prev.end
	if !isAhead && (prev == nil || prev.done && !prevInFlight) {
		if l, ok := c.acrossSessions(rec); ok {
			prev, inWindow, prevInFlight = &l, nil, false
		}
	}
	linked := func() {
		if inWindow != nil {
			c.withIDs(prev, inWindow)
		}
	}
	unknown := !rec.OutcomeKnown && rec.Method == "tools/call"
	inFlight := false // rec re-sent an attempt whose answer had not ended
	before := ""      // with isAhead: the attempt before the one rec named
	switch {
	case rec.Continuation && prev != nil && prev.inputRequired:
		linked()
		rec.Continues, rec.ChainID = prev.id, prev.chainID
		if rec.Attempt == 0 {
			rec.Attempt = prev.attempt
		}
		if rec.RetryOrigin == "" {
			rec.RetryOrigin = prev.origin
		}
		unknown = unknown || prev.unknownBefore
	case isAhead:
		// The attempt rec re-sends is released after it (earlier). It
		// follows the call's newest attempt in the window unless that one
		// worked.
		linked()
		rec.RetryOf, rec.ChainID = ahead.id, ahead.id
		base := 0
		if inWindow != nil && !prev.done {
			rec.ChainID, base, before = prev.chainID, prev.attempt, prev.id
		}
		if rec.Attempt == 0 {
			rec.Attempt = base + 2
		}
		inFlight = !ahead.answered
		unknownEarlier := ahead.unknown && rec.Method == "tools/call" || inWindow != nil && !prev.done && prev.unknownBefore
		if unknownEarlier && rec.Method == "tools/call" && !c.annotations.Safe(rec.Server, rec.ToolName) {
			rec.UnknownSideEffectRetry = true
		}
		unknown = unknown || unknownEarlier
	case !rec.Continuation && prev != nil && rec.Attempt != 1 && (!prev.done || rec.Attempt > 1 || prevInFlight):
		// A logger's attempt=1 says it is a new call, whatever came before.
		linked()
		rec.RetryOf, rec.ChainID = prev.id, prev.chainID
		if rec.Attempt == 0 {
			rec.Attempt = prev.attempt + 1
		}
		if prev.unknownBefore && rec.Method == "tools/call" && !c.annotations.Safe(rec.Server, rec.ToolName) {
			rec.UnknownSideEffectRetry = true
		}
		unknown = unknown || prev.unknownBefore
		inFlight = prevInFlight
	default:
		c.standalone(rec)
	}
	if s := c.seeded; s != nil && s.chainID != "" {
		rec.ChainID = s.chainID
		if s.ahead && !isAhead {
			// It named an attempt still to come, after the call's newest
			// attempt in the window, if that one had not worked.
			isAhead = true
			if inWindow != nil && !prev.done {
				linked()
				before = prev.id
			}
		}
	}
	if c.seeded != nil && rec.UnknownSideEffectRetry {
		// Stored as a retry after an attempt of unknown outcome, perhaps
		// one in flight when it was sent, which the seed cannot see: the
		// call's next attempt inherits it as it did before the restart.
		unknown = true
	}
	if inFlight && rec.Method == "tools/call" {
		// The outcome of the attempt it re-sent was unknown to the client
		// when it sent rec: both may have run.
		unknown = true
		if !c.annotations.Safe(rec.Server, rec.ToolName) {
			rec.UnknownSideEffectRetry = true
		}
	}
	origin(rec)
	ts := rec.TS.UnixNano()
	a := attempt{
		origin: c.origin(rec.RetryOrigin), attempt: int32(min(rec.Attempt, math.MaxInt32)), //nolint:gosec // G115: clamped
		done:          succeeded[rec.Outcome] || rec.Outcome == classify.InputRequired,
		inputRequired: rec.Outcome == classify.InputRequired,
		unknownBefore: unknown,
		ahead:         isAhead,
		span:          spanMS(rec),
		kind:          sourceKind(rec),
	}
	c.keepIDs(&a, rec.ExchangeID, rec.ChainID, before)
	var call hkey
	if rec.JSONRPCID != "" && !rec.Notification {
		call = c.callKey(rec.Server, rec.SessionID, rec.ClientName, rec.JSONRPCID)
	}
	c.retries.put(key, call, ts, a)
	c.trimIDs() // put may have dropped the oldest
	c.rememberAcross(rec, &a, ts)
}

// flightOf returns the attempt rec re-sends when the correlator has not
// released it yet: the latest attempt of rec's call in its session sent
// before rec and after the call's newest attempt in the window (sent at
// prevTS, when inWindow), if it had not worked, or was a tool call still
// in flight when rec was sent. A slow attempt is released after its
// re-send (the correlator releases an exchange once answered and merged),
// so without this the re-send would say nothing of it. None when rec
// continues an MRTR round or its logger said it is a first attempt.
func (c *chains) flightOf(rec *schema.Exchange, inWindow bool, prevTS int64) (unreleased, bool) {
	if c.unreleased == nil || rec.Continuation || rec.Attempt == 1 || rec.SessionID == "" {
		return unreleased{}, false
	}
	u, ok := c.unreleased(rec.Server, rec.SessionID, rec.Source, classify.Call{Method: rec.Method, ToolName: rec.ToolName, ParamsHash: rec.ParamsHash}, rec.TS.UnixNano())
	if !ok || u.id == rec.ExchangeID || (inWindow && u.ts <= prevTS) || (u.answered && u.done) {
		return unreleased{}, false
	}
	if !u.answered && rec.Method != "tools/call" {
		// Two listings or reads of one thing at once are common and run
		// nothing twice: only a tool call is taken for a re-send then.
		return unreleased{}, false
	}
	return u, true
}

// sourceKind is observerRank of rec's source.
func sourceKind(rec *schema.Exchange) uint8 { return uint8(observerRank(rec.Source)) } //nolint:gosec // G115: 0..2

// spanMS is the milliseconds from rec's ts to the end of its answer, 0
// without one.
func spanMS(rec *schema.Exchange) uint32 {
	if rec.EndTS.IsZero() || !rec.EndTS.After(rec.TS) {
		return 0
	}
	return uint32(min(rec.EndTS.Sub(rec.TS).Milliseconds(), math.MaxUint32)) //nolint:gosec // G115: clamped
}

// isID says whether a is the attempt of exchange id.
func (c *chains) isID(a *attempt, id string) bool {
	b := c.ids.bytes(a.ids)
	return len(b)-int(a.chainLen)-int(a.beforeLen) == len(id) && string(b[:len(id)]) == id
}

// again gives rec, an exchange the window already holds as its call's
// newest attempt a, that attempt's chain and leaves the window as it is.
// It is the same exchange formed again: after a restart from events read
// again (the store skips the record, its id being stored; the retry chains
// were seeded with it), or a second view of it after a missed merge (its
// id is the first's with the suffix of apartExchangeID).
// Linked as a new attempt it would be a retry of itself, and the call's
// next real attempt would count one too many.
func (c *chains) again(rec *schema.Exchange, a *attempt) {
	_, rec.ChainID = c.idsOf(a)
	if rec.Attempt == 0 {
		rec.Attempt = int(a.attempt)
	}
	origin(rec)
}

// earlier links rec, sent before the call's newest attempt a in the
// window but released after it (a slow attempt: the correlator releases
// an exchange once it is answered, and a re-send can be answered first).
// rec is not a retry of a, which was sent later. Had they come in order, a
// would have been rec's retry unless rec worked: so a rec that worked
// stands alone, and one that did not joins a's chain as an attempt the
// chain's numbering did not count, with no retry_of. The window keeps a
// as the newest. Linked as a retry of a, rec would say the opposite of
// what happened: the first attempt a re-send of its own re-send. When a
// named an attempt released after it (flightOf), rec is that attempt or
// one before it: it joins a's chain whatever its outcome, as the attempt
// before a, and a retry of the attempt a followed in the window (the
// attempt before the one a named, beforeOf), which a's entry replaced.
func (c *chains) earlier(rec *schema.Exchange, a *attempt) {
	if !a.ahead && (succeeded[rec.Outcome] || rec.Outcome == classify.InputRequired) {
		c.standalone(rec)
		return
	}
	_, rec.ChainID = c.idsOf(a)
	if rec.Attempt == 0 {
		rec.Attempt = 1
		if a.ahead && a.attempt > 1 {
			rec.Attempt = int(a.attempt) - 1
		}
	}
	if a.ahead && a.beforeLen > 0 && rec.RetryOf == "" {
		rec.RetryOf = c.beforeOf(a)
	}
	origin(rec)
}

func (c *chains) standalone(rec *schema.Exchange) {
	rec.ChainID = rec.ExchangeID
	if rec.Attempt == 0 {
		rec.Attempt = 1
	}
	origin(rec)
}

// What retry_origin says when no logger named who re-sent a call.
const (
	// originNone is a first attempt: nobody re-sent it.
	originNone = "none"
	// originUnknown is a re-send (linked by retry_of, or attempt > 1 as
	// the logger declared) whose re-sender no logger named.
	originUnknown = "unknown"
)

// origin gives every exchange a retry_origin from one vocabulary: the
// logger's when it named one, "none" on a first attempt, "unknown" on a
// re-send nobody named (also when a logger said "none" of what is a
// re-send). An MRTR round has its attempt's origin (set by Link).
func origin(rec *schema.Exchange) {
	resent := rec.RetryOf != "" || rec.Attempt > 1
	switch {
	case resent && (rec.RetryOrigin == "" || rec.RetryOrigin == originNone):
		rec.RetryOrigin = originUnknown
	case rec.RetryOrigin == "":
		rec.RetryOrigin = originNone
	}
}

// disagreement sets client_disagrees when the client's conclusion
// contradicts the classification (say, "success" for an isError result).
func (c *chains) disagreement(rec *schema.Exchange) {
	switch rec.ClientOutcome {
	case "success":
		rec.ClientDisagrees = !succeeded[rec.Outcome] && rec.Outcome != classify.InputRequired
	case "error":
		rec.ClientDisagrees = succeeded[rec.Outcome]
	}
}

// expire forgets attempts older than the window.
func (c *chains) expire(now time.Time) {
	cut := now.Add(-c.cfg.Window).UnixNano()
	c.retries.expire(cut)
	c.trimIDs()
	for c.ring.len() > 0 && c.ring.front().ts < cut {
		c.forget(c.ring.pop())
	}
}

// forget deletes the attempt kt wrote, unless its key was written since.
func (c *chains) forget(kt keyTime) bool {
	if c.forgetWire(kt) {
		return true
	}
	if l, ok := c.last[kt.key]; ok && l.ts == kt.ts {
		delete(c.last, kt.key)
		return true
	}
	return false
}

// dropOldest forgets the oldest attempt remembered under a string key,
// for MaxKeys.
func (c *chains) dropOldest() {
	for c.ring.len() > 0 {
		if c.forget(c.ring.pop()) {
			return
		}
	}
}

// Len returns how many calls are remembered for retry linking.
func (c *chains) Len() int { return c.retries.len() }
