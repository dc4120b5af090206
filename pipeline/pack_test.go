package pipeline

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

func TestPackRoundTrip(t *testing.T) {
	d, done := 12.5, false
	full := schema.Event{
		V: 1, EventID: "e-1", TS: time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.UTC), Kind: "request", Source: "client",
		Observer: "o", ExchangeID: "x", Server: "s", URL: "https://h/mcp", ClientName: "c", ClientVersion: "1",
		SessionID: "sess", HTTPMethod: "POST", HTTPStatus: 200,
		RequestHeaders:  classify.HeaderOf(map[string]string{"content-type": "application/json", "mcp-session-id": "sess"}),
		ResponseHeaders: classify.HeaderOf(map[string]string{"retry-after": "2"}),
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
		for n, want := range []string{ev.EventID, ev.Kind, ev.Source, ev.Observer, ev.ExchangeID, ev.Server, ev.URL,
			ev.ClientName, ev.ClientVersion, ev.SessionID} {
			if got := p.str(n); got != want {
				t.Errorf("str(%d) = %q, want %q", n, got, want)
			}
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

// waitingRequest is a request event as one waits for its response.
func waitingRequest(id, body string) schema.Event {
	return schema.Event{V: 1, EventID: id, Kind: "request", TS: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC),
		Source: "gateway", Server: "s", RequestHeaders: classify.HeaderOf(map[string]string{"content-type": "application/json"}), RequestBody: body}
}

// TestSavedEventCodecs round-trips a waiting event through its stored
// form: compressed when its bodies are JSON, plain when they do not
// compress (random bytes), and the plain form of stores written before
// compression still decodes; a damaged or unknown form is an error.
func TestSavedEventCodecs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 4096)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	jsonBody := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":"` +
		strings.Repeat("compressible text ", 200) + `"}}}`
	var enc savedEncoder // one encoder for all: its buffers are reused
	for _, c := range []struct {
		name, body string
		codec      byte
	}{{"json", jsonBody, stateCodecS2}, {"noise", string(noise), stateCodec}, {"empty", "", stateCodec}} {
		ev := waitingRequest("e-"+c.name, c.body)
		data := enc.encode(pack(&ev))
		if data[0] != c.codec {
			t.Errorf("%s: codec %d, want %d", c.name, data[0], c.codec)
		}
		if c.codec == stateCodecS2 && len(data) > len(c.body)/4 {
			t.Errorf("%s: %d bytes stored for a %d-byte body", c.name, len(data), len(c.body))
		}
		got, err := decodeSaved(data)
		if err != nil || !reflect.DeepEqual(*got, ev) {
			t.Errorf("%s: round trip: %v\n got %+v\nwant %+v", c.name, err, got, ev)
		}
		// The plain form, as a store written before compression holds it.
		plain := appendPlainSaved(nil, pack(&ev))
		if got, err := decodeSaved(plain); err != nil || !reflect.DeepEqual(*got, ev) {
			t.Errorf("%s: plain form: %v", c.name, err)
		}
		for _, bad := range [][]byte{nil, {9}, data[:len(data)/2], append(slices.Clone(data), 1, 2, 3)} {
			if _, err := decodeSaved(bad); err == nil {
				t.Errorf("%s: %d damaged bytes decoded", c.name, len(bad))
			}
		}
	}
}

// BenchmarkSavedEncode is the stored form of one waiting request with a
// 2.8 KB JSON body, as the engine makes it for each batch's state.
func BenchmarkSavedEncode(b *testing.B) {
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":"` +
		strings.Repeat("some text that repeats a bit 1234 ", 80) + `"}}}`
	ev := waitingRequest("e-1", body)
	p := pack(&ev)
	var enc savedEncoder
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		enc.encode(p)
	}
}
