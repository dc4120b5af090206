package pipeline

import (
	"container/list"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/mcplens/mcplens/schema"
)

// ClientConfig bounds the client identities remembered per session. Zero
// fields mean defaults.
type ClientConfig struct {
	// MaxSessions bounds the sessions remembered; the least recently seen
	// is forgotten first. Default 100,000 (about 15 MB).
	MaxSessions int
	// Idle forgets a session not seen for this long in event time.
	// Default 24h.
	Idle time.Duration
}

func (c *ClientConfig) defaults() {
	if c.MaxSessions <= 0 {
		c.MaxSessions = 100_000
	}
	if c.Idle <= 0 {
		c.Idle = 24 * time.Hour
	}
}

// metaClientInfo is the 2026-07-28 per-request _meta key naming the client.
const metaClientInfo = "io.modelcontextprotocol/clientInfo"

// clients names the client of every exchange. Only a few messages say who
// the client is: the initialize request's clientInfo (up to 2025-11-25)
// and the _meta clientInfo of every 2026-07-28 request. Every other
// exchange of a session gets the name its session's initialize gave,
// remembered across batches (and, through Seed, across restarts); only
// when nothing better is known does the logged name (often the User-Agent
// product, "python-httpx") stay. Exchanges must come in event-time order.
// Not safe for concurrent use.
type clients struct {
	cfg   ClientConfig
	byKey map[string]*list.Element
	lru   list.List // of *clientEntry, most recently seen first
	p     fastjson.Parser
	kbuf  []byte // keyOf's scratch
}

type clientEntry struct {
	key, name, version string
	seen, first        time.Time
	fromWire           bool // said by the client itself, not a logged guess
}

func newClients(cfg ClientConfig) *clients {
	cfg.defaults()
	return &clients{cfg: cfg, byKey: map[string]*list.Element{}}
}

// Identify sets rec's client name and version from the request body or
// from what its session said before.
func (c *clients) Identify(rec *schema.Exchange, body *schema.Body) {
	c.expire(rec.TS)
	var key []byte
	if rec.SessionID != "" {
		key = c.keyOf(rec.Server, rec.SessionID)
	}
	if body != nil {
		if name, version, ok := c.wireInfo(body.RequestBody); ok {
			rec.ClientName, rec.ClientVersion = name, version
			c.remember(key, name, version, rec.TS, true)
			return
		}
	}
	if key == nil {
		return
	}
	if el, ok := c.byKey[string(key)]; ok {
		e := el.Value.(*clientEntry)
		rec.ClientName, rec.ClientVersion = e.name, e.version
		c.touch(el, rec.TS)
	}
}

// Seed remembers the identities of stored exchanges (oldest first): an
// initialize names its session for sure; an exchange the gateway saw
// alone names it as it was named live (from an initialize older than the
// seed, or logged), the latest such until an initialize says otherwise. A
// view the client logged is not learned from: its name may be the one the
// client logged of itself, which an uninterrupted run keeps on that
// exchange alone, so a restart would name the rest of its session by it.
func (c *clients) Seed(rec *schema.Exchange) {
	if rec.SessionID == "" || rec.ClientName == "" {
		return
	}
	key := c.keyOf(rec.Server, rec.SessionID)
	switch {
	case rec.Method == "initialize":
		c.remember(key, rec.ClientName, rec.ClientVersion, rec.TS, true)
	case slices.Contains(rec.Sources, "client"):
		if el, ok := c.byKey[string(key)]; ok {
			c.touch(el, rec.TS)
		}
	default:
		c.remember(key, rec.ClientName, rec.ClientVersion, rec.TS, false)
	}
}

// started returns when a session remembered here was first seen.
func (c *clients) started(server, session string) (time.Time, bool) {
	el, ok := c.byKey[string(c.keyOf(server, session))]
	if !ok {
		return time.Time{}, false
	}
	return el.Value.(*clientEntry).first, true
}

// lastSeen returns the request time of the latest exchange of a session
// remembered here.
func (c *clients) lastSeen(server, session string) (time.Time, bool) {
	el, ok := c.byKey[string(c.keyOf(server, session))]
	if !ok {
		return time.Time{}, false
	}
	return el.Value.(*clientEntry).seen, true
}

// Len returns the number of sessions remembered.
func (c *clients) Len() int { return len(c.byKey) }

// keyOf returns a session's key, server NUL session, in the scratch
// buffer: valid until the next call. A lookup with it allocates nothing;
// remember copies it when it adds an entry.
func (c *clients) keyOf(server, session string) []byte {
	c.kbuf = append(append(append(c.kbuf[:0], server...), 0), session...)
	return c.kbuf
}

func (c *clients) remember(key []byte, name, version string, ts time.Time, fromWire bool) {
	if key == nil {
		return
	}
	if el, ok := c.byKey[string(key)]; ok {
		e := el.Value.(*clientEntry)
		if fromWire || !e.fromWire {
			e.name, e.version, e.fromWire = name, version, fromWire
		}
		c.touch(el, ts)
		return
	}
	if len(c.byKey) >= c.cfg.MaxSessions {
		c.drop(c.lru.Back())
	}
	k := string(key)
	c.byKey[k] = c.lru.PushFront(&clientEntry{key: k, name: name, version: version, seen: ts, first: ts, fromWire: fromWire})
}

func (c *clients) touch(el *list.Element, ts time.Time) {
	if e := el.Value.(*clientEntry); ts.After(e.seen) {
		e.seen = ts
	}
	c.lru.MoveToFront(el)
}

// expire forgets sessions idle for longer than cfg.Idle.
func (c *clients) expire(now time.Time) {
	cut := now.Add(-c.cfg.Idle)
	for el := c.lru.Back(); el != nil && el.Value.(*clientEntry).seen.Before(cut); el = c.lru.Back() {
		c.drop(el)
	}
}

func (c *clients) drop(el *list.Element) {
	if el == nil {
		return
	}
	delete(c.byKey, el.Value.(*clientEntry).key)
	c.lru.Remove(el)
}

// wireInfo reads the client's own name from a request: initialize's
// params.clientInfo or the 2026 params._meta clientInfo (the first message
// of a batch that has one).
func (c *clients) wireInfo(body string) (name, version string, ok bool) {
	if !strings.Contains(body, "clientInfo") {
		return "", "", false
	}
	v, err := c.p.Parse(body)
	if err != nil {
		return "", "", false
	}
	msgs := []*fastjson.Value{v}
	if v.Type() == fastjson.TypeArray {
		msgs, _ = v.Array()
	}
	for _, m := range msgs {
		info := m.Get("params", "clientInfo")
		if info == nil {
			info = m.Get("params", "_meta", metaClientInfo)
		}
		if info == nil || info.Type() != fastjson.TypeObject {
			continue
		}
		if name := string(info.GetStringBytes("name")); name != "" {
			return bounded(name), bounded(string(info.GetStringBytes("version"))), true
		}
	}
	return "", "", false
}

// maxClientField caps a client name or version taken from the wire.
const maxClientField = 128

func bounded(s string) string {
	if len(s) <= maxClientField {
		return s
	}
	return strings.ToValidUTF8(s[:maxClientField], "")
}
