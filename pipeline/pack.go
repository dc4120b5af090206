package pipeline

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"time"
	"unsafe"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// packed is an event waiting for its other half, held in one allocation
// apart from its bodies: a decoded schema.Event with its header maps costs
// about a kilobyte, its packed form a few hundred bytes. Strings unpacked
// from it point into the blob, which is never written after packing.
type packed struct {
	blob              []byte
	reqBody, respBody string
}

const (
	flagTruncated = 1 << iota
	flagDuration
	flagStream
	flagStreamComplete
	flagRequest
)

// pack encodes every field of ev except its bodies.
func pack(ev *schema.Event) packed {
	n := 64 + len(ev.EventID) + len(ev.Kind) + len(ev.Source) + len(ev.Observer) + len(ev.ExchangeID) +
		len(ev.Server) + len(ev.URL) + len(ev.ClientName) + len(ev.ClientVersion) + len(ev.SessionID) +
		len(ev.HTTPMethod) + len(ev.CloseReason) + len(ev.TransportError) + len(ev.RetryOrigin) +
		len(ev.IdempotencyKey) + len(ev.ClientOutcome)
	for _, f := range ev.RequestHeaders {
		n += len(f.Name) + len(f.Value) + 4
	}
	for _, f := range ev.ResponseHeaders {
		n += len(f.Name) + len(f.Value) + 4
	}
	for k, v := range ev.Attrs {
		n += len(k) + len(v) + 4
	}
	b := make([]byte, 0, n)
	var flags byte
	if ev.BodyTruncated {
		flags |= flagTruncated
	}
	if ev.DurationMS != nil {
		flags |= flagDuration
	}
	if ev.StreamComplete != nil {
		flags |= flagStream
		if *ev.StreamComplete {
			flags |= flagStreamComplete
		}
	}
	if ev.Kind == schema.KindRequest {
		flags |= flagRequest
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, int64(ev.V))
	b = binary.AppendVarint(b, ev.TS.UnixNano())
	b = binary.AppendVarint(b, int64(ev.HTTPStatus))
	b = binary.AppendVarint(b, int64(ev.Attempt))
	if ev.DurationMS != nil {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(*ev.DurationMS))
	}
	for _, s := range [...]string{ev.EventID, ev.Kind, ev.Source, ev.Observer, ev.ExchangeID, ev.Server, ev.URL,
		ev.ClientName, ev.ClientVersion, ev.SessionID, ev.HTTPMethod, ev.CloseReason, ev.TransportError,
		ev.RetryOrigin, ev.IdempotencyKey, ev.ClientOutcome} {
		b = appendString(b, s)
	}
	b = appendHeader(b, ev.RequestHeaders)
	b = appendHeader(b, ev.ResponseHeaders)
	b = binary.AppendUvarint(b, uint64(len(ev.Attrs)))
	for k, v := range ev.Attrs {
		b = appendString(b, k)
		b = appendString(b, unsafe.String(unsafe.SliceData(v), len(v)))
	}
	return packed{blob: b, reqBody: ev.RequestBody, respBody: ev.ResponseBody}
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendHeader(b []byte, h classify.Header) []byte {
	b = binary.AppendUvarint(b, uint64(len(h)))
	for _, f := range h {
		b = appendString(b, f.Name)
		b = appendString(b, f.Value)
	}
	return b
}

// isRequest reports whether the packed event is a request half.
func (p packed) isRequest() bool { return p.blob[0]&flagRequest != 0 }

// size estimates the bytes the packed event holds, bodies included.
func (p packed) size() int64 { return int64(len(p.blob) + len(p.reqBody) + len(p.respBody)) }

// The packed strings' places, in pack's order.
const (
	packedEventID = iota
	packedKind
	packedSource
	packedObserver
	packedExchangeID
	packedServer
	packedURL
	packedClientName
	packedClientVersion
	packedSessionID
)

// eventID reads the event id alone without unpacking the rest.
func (p packed) eventID() string { return p.str(packedEventID) }

// str reads the n-th string field (packedEventID...) alone, without
// unpacking the rest; it points into the blob.
func (p packed) str(n int) string {
	u := unpacker{b: p.blob, i: 1}
	flags := p.blob[0]
	for range 4 { // V, TS, HTTPStatus, Attempt
		u.varint()
	}
	if flags&flagDuration != 0 {
		u.i += 8
	}
	for range n {
		l, k := binary.Uvarint(u.b[u.i:])
		u.i += k + int(l)
	}
	return u.str()
}

// unpacker reads a blob written by pack.
type unpacker struct {
	b []byte
	i int
}

func (u *unpacker) varint() int64 {
	v, n := binary.Varint(u.b[u.i:])
	u.i += n
	return v
}

func (u *unpacker) str() string {
	l, n := binary.Uvarint(u.b[u.i:])
	u.i += n
	s := unsafe.String(unsafe.SliceData(u.b[u.i:]), int(l))
	u.i += int(l)
	return s
}

func (u *unpacker) header() classify.Header {
	l, n := binary.Uvarint(u.b[u.i:])
	u.i += n
	if l == 0 {
		return nil
	}
	h := make(classify.Header, l)
	for i := range h {
		h[i].Name = u.str()
		h[i].Value = u.str()
	}
	return h
}

// unpack rebuilds the event.
func (p packed) unpack() *schema.Event {
	u := unpacker{b: p.blob}
	ev := &schema.Event{RequestBody: p.reqBody, ResponseBody: p.respBody}
	flags := u.b[0]
	u.i = 1
	ev.V = int(u.varint())
	ev.TS = time.Unix(0, u.varint()).UTC()
	ev.HTTPStatus = int(u.varint())
	ev.Attempt = int(u.varint())
	ev.BodyTruncated = flags&flagTruncated != 0
	if flags&flagDuration != 0 {
		d := math.Float64frombits(binary.LittleEndian.Uint64(u.b[u.i:]))
		u.i += 8
		ev.DurationMS = &d
	}
	if flags&flagStream != 0 {
		c := flags&flagStreamComplete != 0
		ev.StreamComplete = &c
	}
	for _, dst := range [...]*string{&ev.EventID, &ev.Kind, &ev.Source, &ev.Observer, &ev.ExchangeID, &ev.Server, &ev.URL,
		&ev.ClientName, &ev.ClientVersion, &ev.SessionID, &ev.HTTPMethod, &ev.CloseReason, &ev.TransportError,
		&ev.RetryOrigin, &ev.IdempotencyKey, &ev.ClientOutcome} {
		*dst = u.str()
	}
	ev.RequestHeaders = u.header()
	ev.ResponseHeaders = u.header()
	l, n := binary.Uvarint(u.b[u.i:])
	u.i += n
	if l > 0 {
		ev.Attrs = make(map[string]json.RawMessage, l)
		for range l {
			k := u.str()
			v := u.str()
			ev.Attrs[k] = json.RawMessage(unsafe.Slice(unsafe.StringData(v), len(v)))
		}
	}
	return ev
}
