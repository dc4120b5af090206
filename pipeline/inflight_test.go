package pipeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// len is the number of calls indexed.
func (f *flights) len() int {
	n := 0
	for _, l := range f.by {
		n += len(l)
	}
	return n
}

// flightEvent is a gateway request or response of call n (arguments a) in
// session s of server kv, at t0+at.
func flightEvent(kind, session string, n, a int, at time.Duration) schema.Event {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	ev := schema.Event{V: 1, EventID: fmt.Sprintf("%s-%s-%d", kind, session, n), Kind: kind, TS: t0.Add(at), Source: "gateway",
		Observer: "gw", Server: "kv", SessionID: session, ExchangeID: fmt.Sprintf("x-%s-%d", session, n), HTTPMethod: "POST"}
	if kind == schema.KindRequest {
		ev.RequestBody = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write","arguments":{"a":%d}}}`, n, a)
	} else {
		ev.HTTPStatus = 200
		ev.ResponseHeaders = classify.HeaderOf(map[string]string{"content-type": "application/json"})
		ev.ResponseBody = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}`, n)
	}
	return ev
}

// The flights index follows a call from its request's arrival to its
// release: waiting in the correlator (in flight), then complete in the
// merge set (answered, with its outcome), then gone; a call of other
// arguments, another session or another server is never found, nor one
// seen by another kind of observer than the re-send's (their clocks do
// not compare); a session keeps at most MaxFlightsPerSession entries.
func TestFlightsFollowACall(t *testing.T) {
	c := newCorrelator(CorrelatorConfig{})
	pos := Position{Stream: "s/0"}
	add := func(ev schema.Event) {
		t.Helper()
		pos.Offset++
		c.Add(&ev, pos)
	}
	call := func(a int) classify.Call {
		q := flightEvent(schema.KindRequest, "s1", 0, a, 0)
		got, ok := classify.CallOf([]byte(q.RequestBody))
		if !ok {
			t.Fatal("no call")
		}
		return got
	}
	at := func(d time.Duration) int64 { return time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC).Add(d).UnixNano() }

	add(flightEvent(schema.KindRequest, "s1", 1, 7, 0))
	add(flightEvent(schema.KindRequest, "s1", 2, 8, time.Second))
	add(flightEvent(schema.KindRequest, "s2", 3, 7, time.Second))
	u, ok := c.unreleased("kv", "s1", "gateway", call(7), at(10*time.Second))
	if !ok || u.id != "x-s1-1" || u.answered || !u.unknown {
		t.Fatalf("waiting request: %+v %v", u, ok)
	}
	if u, ok := c.unreleased("kv", "s1", "client", call(7), at(10*time.Second)); ok {
		t.Errorf("a client's view of a re-send compared with a gateway's send time: %+v", u)
	}
	for _, miss := range []struct {
		server, session string
		a               int
		before          time.Duration
	}{{"kv", "s1", 9, 10 * time.Second}, {"kv", "s3", 7, 10 * time.Second}, {"other", "s1", 7, 10 * time.Second}, {"kv", "s1", 7, 0}} {
		if u, ok := c.unreleased(miss.server, miss.session, "gateway", call(miss.a), at(miss.before)); ok {
			t.Errorf("%+v found %+v", miss, u)
		}
	}

	add(flightEvent(schema.KindResponse, "s1", 1, 7, 12*time.Second))
	if u, ok := c.unreleased("kv", "s1", "gateway", call(7), at(10*time.Second)); !ok || u.id != "x-s1-1" || u.answered || !u.done {
		t.Fatalf("answered after the re-send was sent: %+v %v", u, ok)
	}
	if u, ok := c.unreleased("kv", "s1", "gateway", call(7), at(13*time.Second)); !ok || !u.answered || !u.done || u.unknown {
		t.Fatalf("answered before: %+v %v", u, ok)
	}
	if n := c.merging.flights.len(); n != 3 {
		t.Fatalf("%d indexed, want 3 (one request became its exchange)", n)
	}
	c.Release(true, func(*group) {})
	if n := c.merging.flights.len(); n != 0 {
		t.Errorf("%d still indexed after every exchange was released", n)
	}

	d := newCorrelator(CorrelatorConfig{})
	for i := range MaxFlightsPerSession + 10 {
		ev := flightEvent(schema.KindRequest, "busy", i, i, time.Duration(i)*time.Millisecond)
		d.Add(&ev, Position{Stream: "s/0", Offset: int64(i)})
	}
	if n := d.merging.flights.len(); n != MaxFlightsPerSession {
		t.Errorf("%d indexed in one session, want %d", n, MaxFlightsPerSession)
	}
	d.Release(true, func(*group) {})
	if n := d.merging.flights.len(); n != 0 {
		t.Errorf("%d still indexed after every request expired", n)
	}
}
