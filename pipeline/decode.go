package pipeline

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/mcplens/mcplens/schema"
	"github.com/zeebo/xxh3"
)

// DecodeError says why a line is not a valid contract-v1 event. [Decode]
// returns it wrapped with the line's position; get it with errors.As.
type DecodeError struct {
	// Field is the contract field at fault ("http.status"), or "" when the
	// line as a whole is rejected (not JSON, not an object). It is one of a
	// bounded set of names, fit for a metric label.
	Field string
	// Reason is a human-readable explanation.
	Reason string
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Decoder turns contract-v1 lines into events. It accepts the contract's
// flat dotted field names ("http.status") and the nested spelling
// ({"http":{"status":...}}); when a line holds both, the later one wins.
// Unknown fields go to Event.Attrs as raw JSON, where an entry of the
// line's own "attrs" object wins over an unknown top-level field of the same
// name. A JSON null counts as an absent field. TS is converted to UTC.
//
// A Decoder reuses its scratch space and a small table of interned strings
// between calls, so it is not safe for concurrent use: give each goroutine
// its own, or call the package-level [Decode]. The zero value is ready to use.
type Decoder struct {
	members []jmember            // scratch: the line's top-level members
	intern  *[internSlots]string // nil until the first interned string
	key     []byte               // scratch: prefixed names of nested fields
	lower   []byte               // scratch: lower-cased header names
	text    []byte               // scratch: an unescaped text value
	minute  tsMinute             // the last ts's minute (decode_ts.go)
}

const (
	maxInternLen       = 96      // longer strings are copied, never interned
	internSlots        = 4096    // slots of the intern table (a power of two)
	maxRetainedParse   = 1 << 20 // scratch that grew past this is dropped after use
	maxRetainedMembers = 1 << 10 // nor a members table longer than this
)

// NewDecoder returns a Decoder; the zero value works as well.
func NewDecoder() *Decoder { return new(Decoder) }

var decoders = sync.Pool{New: func() any { return new(Decoder) }}

// Decode decodes one line with a pooled [Decoder]; it is safe for concurrent
// use. The returned event shares no memory with line. Errors are a
// *[DecodeError] wrapped as "decode POSITION: ...".
func Decode(line []byte, pos Position) (schema.Event, error) {
	d := decoders.Get().(*Decoder)
	ev, err := d.Decode(line, pos)
	decoders.Put(d)
	return ev, err
}

// Decode decodes one line; see [Decoder] and the package-level [Decode].
func (d *Decoder) Decode(line []byte, pos Position) (schema.Event, error) {
	var ev schema.Event
	if err := d.DecodeTo(line, pos, &ev); err != nil {
		return schema.Event{}, err
	}
	return ev, nil
}

// DecodeTo decodes one line into *ev, which must be zero; on an error *ev
// holds part of the line. The engine decodes into the event it keeps, so a
// line costs one event allocation, not a second and a copy.
func (d *Decoder) DecodeTo(line []byte, pos Position, ev *schema.Event) error {
	err := d.decode(line, ev)
	if len(line) > maxRetainedParse {
		d.text = nil // do not pin huge buffers between calls
	}
	clear(d.members) // nor the line, through its spans
	d.members = d.members[:0]
	if cap(d.members) > maxRetainedMembers {
		d.members = nil
	}
	if err != nil {
		return fmt.Errorf("decode %s: %w", pos, err)
	}
	return nil
}

// Presence bits of the fields whose absence makes an event invalid.
const (
	seenTS = 1 << iota
	seenKind
	seenSource
	seenRequestBody
	seenResponseBody
)

// decodeState is one Decode call in progress.
type decodeState struct {
	d   *Decoder
	ev  *schema.Event
	err *DecodeError
	has uint8
}

func (d *Decoder) decode(line []byte, ev *schema.Event) error {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return &DecodeError{Reason: "not JSON: empty line"}
	}
	sc := jscan{b: line}
	members, kind, ok := sc.topObject(d.members[:0])
	d.members = members
	switch {
	case sc.err != "":
		return &DecodeError{Reason: "not JSON: " + sc.err}
	case !ok:
		return &DecodeError{Reason: "not a JSON object: got " + kind.String()}
	}
	s := decodeState{d: d, ev: ev}
	ev.V = schema.ContractVersion
	for i := range members { // first: a newer version may mean other fields
		if string(unescapedKey(members[i].key)) == "v" {
			s.version(&members[i].val)
			break
		}
	}
	for i := range members {
		if s.err != nil {
			break
		}
		s.field(unescapedKey(members[i].key), &members[i].val)
	}
	if s.err == nil {
		s.validate()
	}
	if s.err != nil {
		return s.err
	}
	if ev.EventID == "" {
		ev.EventID = deriveEventID(line)
	}
	return nil
}

// deriveEventID is the event id of a line that carries none: "h:" and the
// hex of the 128-bit XXH3 hash of the line without surrounding white space,
// so that the same line replayed dedupes. Safe for concurrent use.
func deriveEventID(line []byte) string {
	sum := xxh3.Hash128(bytes.TrimSpace(line)).Bytes()
	var buf [2 + 2*len(sum)]byte
	buf[0], buf[1] = 'h', ':'
	hex.Encode(buf[2:], sum[:])
	return string(buf[:])
}

func (s *decodeState) fail(field, format string, args ...any) {
	if s.err == nil {
		s.err = &DecodeError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
}

// field handles one top-level field (or one of a nested "http"/"stream"
// object, with its name already prefixed).
func (s *decodeState) field(k []byte, v *jval) {
	if s.err != nil {
		return
	}
	ev := s.ev
	switch string(k) {
	case "v": // handled first
	case "unmappable":
		// A log shipper's mapping marks a line it could not map
		// (deploy/shippers); the line is quarantined with its reason.
		s.fail("", "the shipper could not map the line: %s", string(s.d.unescaped(v)))
	case "event_id":
		ev.EventID = s.str("event_id", v, false)
	case "ts":
		s.ts(v)
	case "kind":
		s.kind(v)
	case "source":
		s.source(v)
	case "observer":
		ev.Observer = s.str("observer", v, true)
	case "exchange_id":
		ev.ExchangeID = s.str("exchange_id", v, false)
	case "server":
		ev.Server = s.str("server", v, true)
	case "url":
		ev.URL = s.str("url", v, true)
	case "client_name":
		ev.ClientName = s.str("client_name", v, true)
	case "client_version":
		ev.ClientVersion = s.str("client_version", v, true)
	case "session_id":
		ev.SessionID = s.str("session_id", v, true)
	case "http.method":
		ev.HTTPMethod = s.str("http.method", v, true)
	case "http.status":
		s.status(v)
	case "http.request_headers":
		ev.RequestHeaders = s.headers("http.request_headers", v)
	case "http.response_headers":
		ev.ResponseHeaders = s.headers("http.response_headers", v)
	case "request_body":
		ev.RequestBody = s.body("request_body", v, seenRequestBody)
	case "response_body":
		ev.ResponseBody = s.body("response_body", v, seenResponseBody)
	case "body_truncated":
		if b, ok := s.bool("body_truncated", v); ok {
			ev.BodyTruncated = b
		}
	case "duration_ms":
		s.duration(v)
	case "stream.complete":
		if b, ok := s.bool("stream.complete", v); ok {
			ev.StreamComplete = &b
		}
	case "stream.close_reason":
		ev.CloseReason = s.str("stream.close_reason", v, true)
	case "transport_error":
		ev.TransportError = s.str("transport_error", v, true)
	case "attempt":
		s.attempt(v)
	case "retry_origin":
		ev.RetryOrigin = s.str("retry_origin", v, true)
	case "idempotency_key":
		ev.IdempotencyKey = s.str("idempotency_key", v, false)
	case "client_outcome":
		ev.ClientOutcome = s.str("client_outcome", v, true)
	case "attrs":
		s.attrs(v)
	case "http", "stream":
		if v.kind != jObject {
			s.unknown(k, v)
			return
		}
		prefix := "http."
		if k[0] == 's' {
			prefix = "stream."
		}
		for m := v.members(); s.err == nil; {
			nk, nv, ok := m.next()
			if !ok {
				break
			}
			s.d.key = append(append(s.d.key[:0], prefix...), unescapedKey(nk)...)
			s.field(s.d.key, &nv) // no contract name has two dots: no deeper recursion
		}
	default:
		s.unknown(k, v)
	}
}

// validate checks the fields each kind requires, in the contract's words.
func (s *decodeState) validate() {
	ev := s.ev
	switch {
	case s.has&seenTS == 0:
		s.fail("ts", "required")
	case s.has&seenKind == 0:
		s.fail("kind", "required (exchange, request or response)")
	case s.has&seenSource == 0:
		s.fail("source", "required (gateway, client or server)")
	case ev.HasRequest() && ev.HTTPMethod == "":
		s.fail("http.method", "required for kind %q", ev.Kind)
	case ev.HasRequest() && s.has&seenRequestBody == 0:
		s.fail("request_body", "required for kind %q (may be empty)", ev.Kind)
	case ev.HasResponse() && ev.TransportError == "" && ev.HTTPStatus == 0:
		s.fail("http.status", "required for kind %q unless transport_error is set", ev.Kind)
	case ev.HasResponse() && ev.TransportError == "" && s.has&seenResponseBody == 0:
		s.fail("response_body", "required for kind %q unless transport_error is set (may be empty)", ev.Kind)
	}
}
