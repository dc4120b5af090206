package pipeline

import (
	"github.com/valyala/fastjson"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// Retries that cross sessions, and cancels that join the call they cancel.
//
// A client that lost its session (a 404 "session not found", a cut stream,
// a transport error, a server restart) initializes a new one and re-sends
// the same call there: the classic double execution. Within a session a
// re-send is found by the session's retry key; across sessions by the
// client's identity (its initialize clientInfo, which every exchange of a
// session carries once clients.Identify ran), server, method, tool and
// params hash (without _meta), but only after an attempt whose outcome was
// unknown or whose session was lost, and only from a different session.
// The attempts a re-send from another session may continue live in
// chains.last, which the chain window and MaxKeys bound.

// acrossKey names a call by its client instead of its session.
func acrossKey(rec *schema.Exchange) string {
	return "x\x00" + rec.Server + "\x00" + rec.ClientName + "\x00" + rec.ClientVersion + "\x00" + rec.Method + "\x00" + rec.ToolName + "\x00" + rec.ParamsHash
}

// acrossSessions returns the attempt that rec re-sends from another
// session, if there is one.
func (c *chains) acrossSessions(rec *schema.Exchange) (lastAttempt, bool) {
	if rec.SessionID == "" || rec.ClientName == "" || rec.Continuation || len(c.last) == 0 {
		return lastAttempt{}, false
	}
	l, ok := c.last[acrossKey(rec)]
	if !ok || l.done || l.session == rec.SessionID {
		return lastAttempt{}, false
	}
	// The new session must have begun after the attempt that lost the
	// old one; a session of another instance of the same client that was
	// already running is not a reconnect.
	if c.sessionStart == nil {
		return l, true
	}
	start, known := c.sessionStart(rec.Server, rec.SessionID)
	if known && start.UnixNano() < l.ts {
		return lastAttempt{}, false
	}
	// A client that lost its session leaves it: the old session sends
	// nothing once the new one began. Another process of the same client
	// name and version that calls the same tool with the same params from
	// its own session while the first keeps using its session is not a
	// reconnect.
	if known && c.sessionSeen != nil {
		if seen, ok := c.sessionSeen(rec.Server, l.session); ok && seen.After(start) {
			return lastAttempt{}, false
		}
	}
	return l, true
}

// sessionLost reports whether rec's attempt leaves the client not knowing
// whether the call ran, or without its session.
func sessionLost(rec *schema.Exchange) bool {
	return !rec.OutcomeKnown || rec.ErrorClass == classify.SessionNotFound
}

// rememberAcross keeps rec's attempt for a re-send from another session
// while the call is unresolved, and forgets it once an attempt resolved it.
func (c *chains) rememberAcross(rec *schema.Exchange, a *attempt, ts int64) {
	if rec.SessionID == "" || rec.ClientName == "" {
		return
	}
	if len(c.last) == 0 && (a.done || !sessionLost(rec)) {
		return // nothing to forget: no string key is built
	}
	key := acrossKey(rec)
	if a.done || !sessionLost(rec) {
		delete(c.last, key)
		return
	}
	if _, ok := c.last[key]; !ok && len(c.last) >= c.cfg.MaxKeys {
		c.dropOldest()
	}
	l := c.lastOf(a, ts)
	c.withIDs(&l, a)
	l.session = keep(rec.SessionID)
	c.last[key] = l
	c.ring.push(keyTime{key, ts})
}

// callKey names one request of one client: server, session (else client)
// and JSON-RPC id, for the cancel that names it. Link files each attempt
// under it too.
func (c *chains) callKey(server, session, client, id string) hkey {
	if session == "" {
		return c.h.of("c", server, client, id)
	}
	return c.h.of("s", server, session, id)
}

// LinkCancel puts a notifications/cancelled into the chain of the request
// it names (params.requestId), when that request was seen within the
// window, by its session or client, else, for a cancel that names no
// client, by its transport (linkWire). It runs after Link, for every
// exchange: the calls such a cancel may name are remembered here.
func (c *chains) LinkCancel(rec *schema.Exchange, body *schema.Body, p *fastjson.Parser) {
	if body == nil {
		return
	}
	if rec.Method != "notifications/cancelled" {
		c.rememberWire(rec, body)
		return
	}
	v, err := p.Parse(body.RequestBody)
	if err != nil {
		return
	}
	id := v.Get("params", "requestId")
	if id == nil {
		return
	}
	if a, ok := c.retries.getAlt(c.callKey(rec.Server, rec.SessionID, rec.ClientName, string(id.MarshalTo(nil)))); ok {
		_, rec.ChainID = c.idsOf(a)
		return
	}
	if named := nameless(p, rec.SessionID, body.RequestBody); named != "" {
		c.linkWire(rec, body, named)
	}
}
