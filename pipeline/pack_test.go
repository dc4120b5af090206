package pipeline

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mcplens/mcplens/schema"
)

func TestPackRoundTrip(t *testing.T) {
	d, done := 12.5, false
	full := schema.Event{
		V: 1, EventID: "e-1", TS: time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC), Kind: "request", Source: "client",
		Observer: "o", ExchangeID: "x", Server: "s", URL: "https://h/mcp", ClientName: "c", ClientVersion: "1",
		SessionID: "sess", HTTPMethod: "POST", HTTPStatus: 200,
		RequestHeaders:  map[string]string{"content-type": "application/json", "mcp-session-id": "sess"},
		ResponseHeaders: map[string]string{"retry-after": "2"},
		RequestBody:     `{"jsonrpc":"2.0"}`, ResponseBody: "resp", BodyTruncated: true, DurationMS: &d,
		StreamComplete: &done, CloseReason: "reset", TransportError: "", Attempt: 3, RetryOrigin: "sdk",
		IdempotencyKey: "k", ClientOutcome: "error", Attrs: map[string]json.RawMessage{"step": json.RawMessage(`"x"`)},
	}
	for _, ev := range []schema.Event{full, {Kind: "response", TS: time.Unix(0, 0).UTC()}} {
		p := pack(&ev)
		got := p.unpack()
		if !reflect.DeepEqual(*got, ev) {
			t.Errorf("round trip:\n got %+v\nwant %+v", *got, ev)
		}
		if p.isRequest() != (ev.Kind == "request") {
			t.Errorf("isRequest = %v for kind %s", p.isRequest(), ev.Kind)
		}
	}
}

func TestPackedEventID(t *testing.T) {
	d := 12.5
	for _, ev := range []schema.Event{{EventID: "e-1", Kind: "request", TS: time.Unix(5, 0)}, {EventID: "e-2", DurationMS: &d, HTTPStatus: 200, Attempt: 3}} {
		if got := pack(&ev).eventID(); got != ev.EventID {
			t.Errorf("eventID() = %q, want %q", got, ev.EventID)
		}
	}
}
