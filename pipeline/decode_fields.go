package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math"
	"slices"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
	"github.com/valyala/fastjson"
	"github.com/valyala/fastjson/fastfloat"
)

// The typed readers of decodeState: each reads one contract field, treats a
// JSON null as absent, and records the first type error.

// bytesString views b as a string without copying; only for values that do not
// outlive the parser's buffer.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) } //nolint:gosec // G103: read-only view, see above

// internBytes returns b as a string, shared with earlier equal strings of this
// Decoder, so repeated values (server, header names, content types) cost no
// allocation. The table is direct-mapped by a hash of the bytes: a string
// that collides replaces the one in its slot, so values that never repeat
// (request ids in headers) cost one allocation each and never a map's growth
// or clearing.
func (d *Decoder) internBytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxInternLen {
		return string(b)
	}
	if d.intern == nil {
		d.intern = new([internSlots]string)
	}
	slot := &d.intern[maphash.Bytes(internSeed, b)&(internSlots-1)]
	if *slot == string(b) {
		return *slot
	}
	*slot = string(b)
	return *slot
}

// internSeed seeds the intern table's hash, the same for every Decoder.
var internSeed = maphash.MakeSeed()

// quoteForError renders a value for an error message, cut to a readable length.
func quoteForError(b []byte) string {
	const max = 64
	if len(b) > max {
		return fmt.Sprintf("%q...", b[:max])
	}
	return fmt.Sprintf("%q", b)
}

func (s *decodeState) version(v *jval) {
	if v.kind == jNull {
		return
	}
	n, err := v.int()
	switch {
	case err != nil:
		s.fail("v", "want an integer, got %s", v.kind)
	case n < 1:
		s.fail("v", "invalid contract version %d", n)
	case n > schema.ContractVersion:
		s.fail("v", "unsupported contract version %d (this build speaks %d)", n, schema.ContractVersion)
	}
}

// strBytes returns the unescaped bytes of a string field (valid until the
// next parse), or ok=false when it is null or failed.
func (s *decodeState) strBytes(field string, v *jval) (b []byte, ok bool) {
	switch v.kind {
	case jNull:
		return nil, false
	case jString:
		b = s.d.unescaped(v)
		if err := checkText(b); err != "" {
			s.fail(field, "%s", err)
			return nil, false
		}
		return b, true
	}
	s.fail(field, "want a string, got %s", v.kind)
	return nil, false
}

// unescaped returns a string value unescaped (valid until the next call)
// and nil for any other value.
func (d *Decoder) unescaped(v *jval) []byte {
	if v.kind != jString {
		return nil
	}
	if bytes.IndexByte(v.raw, '\\') < 0 {
		return v.raw
	}
	d.text = unescapeJSON(slices.Grow(d.text[:0], len(v.raw))[:len(v.raw)], v.raw)
	return d.text
}

// int parses an integer value as fastjson did.
func (v *jval) int() (int, error) {
	if v.kind != jNumber {
		return 0, fmt.Errorf("value doesn't contain number; it contains %s", v.kind)
	}
	n, err := fastfloat.ParseInt64(bytesString(v.raw))
	if err != nil {
		return 0, err
	}
	if int64(int(n)) != n {
		return 0, fmt.Errorf("number %q doesn't fit int", v.raw)
	}
	return int(n), nil
}

// checkText says why b cannot be a stored text field ("" when it can):
// text columns hold valid UTF-8 without NUL, so a line with anything else
// in a text field is quarantined naming the field instead of wedging the
// store. Bodies are bytes and never checked.
func checkText(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return fmt.Sprintf("NUL byte at byte %d", i)
	}
	if !utf8.Valid(b) {
		for i := 0; i < len(b); {
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return fmt.Sprintf("invalid UTF-8 at byte %d", i)
			}
			i += n
		}
	}
	return ""
}

// str returns a string field, interned when its values are known to repeat.
func (s *decodeState) str(field string, v *jval, intern bool) string {
	b, ok := s.strBytes(field, v)
	switch {
	case !ok:
		return ""
	case intern:
		return s.d.internBytes(b)
	}
	return string(b)
}

func (s *decodeState) body(field string, v *jval, bit uint8) string {
	b, ok := s.bodyString(field, v)
	if ok {
		s.has |= bit
	}
	return b
}

func (s *decodeState) ts(v *jval) {
	b, ok := s.strBytes("ts", v)
	if !ok {
		return
	}
	if t, ok := s.d.minute.parse(b); ok {
		s.ev.TS = t
		s.has |= seenTS
		return
	}
	// time.Parse takes RFC3339Nano's fast path and accepts a missing
	// fraction; the shape check rejects what its slow path would also take
	// (one-digit hours).
	t, err := time.Parse(time.RFC3339Nano, bytesString(b))
	if err != nil || len(b) < len("2006-01-02T15:04:05Z") || b[4] != '-' || b[7] != '-' ||
		b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		s.fail("ts", "want an RFC 3339 time, got %s", quoteForError(b))
		return
	}
	// Years that int64 Unix nanoseconds (and DateTime64(9)) can hold.
	if t = t.UTC(); t.Year() < 1970 || t.Year() > 2261 {
		s.fail("ts", "year %d out of range [1970, 2261]", t.Year())
		return
	}
	s.d.minute.note(b, t)
	s.ev.TS = t
	s.has |= seenTS
}

func (s *decodeState) kind(v *jval) {
	b, ok := s.strBytes("kind", v)
	if !ok {
		return
	}
	switch string(b) {
	case schema.KindExchange:
		s.ev.Kind = schema.KindExchange
	case schema.KindRequest:
		s.ev.Kind = schema.KindRequest
	case schema.KindResponse:
		s.ev.Kind = schema.KindResponse
	default:
		s.fail("kind", "unknown kind %s (want exchange, request or response)", quoteForError(b))
		return
	}
	s.has |= seenKind
}

func (s *decodeState) source(v *jval) {
	b, ok := s.strBytes("source", v)
	if !ok {
		return
	}
	switch string(b) {
	case schema.SourceGateway:
		s.ev.Source = schema.SourceGateway
	case schema.SourceClient:
		s.ev.Source = schema.SourceClient
	case schema.SourceServer:
		s.ev.Source = schema.SourceServer
	default:
		s.fail("source", "unknown source %s (want gateway, client or server)", quoteForError(b))
		return
	}
	s.has |= seenSource
}

// integer reads an optional integer field within [lo, hi].
func (s *decodeState) integer(field string, v *jval, lo, hi int) (int, bool) {
	if v.kind == jNull {
		return 0, false
	}
	n, err := v.int()
	if err != nil {
		s.fail(field, "want an integer, got %s", quoteForError(v.appendJSON(nil)))
		return 0, false
	}
	if n < lo || n > hi {
		s.fail(field, "%d out of range [%d, %d]", n, lo, hi)
		return 0, false
	}
	return n, true
}

func (s *decodeState) status(v *jval) {
	if n, ok := s.integer("http.status", v, 0, 999); ok {
		s.ev.HTTPStatus = n // 0 counts as absent: no HTTP response
	}
}

func (s *decodeState) attempt(v *jval) {
	if n, ok := s.integer("attempt", v, 0, 1<<31-1); ok {
		s.ev.Attempt = n
	}
}

func (s *decodeState) bool(field string, v *jval) (bool, bool) {
	switch v.kind {
	case jNull:
		return false, false
	case jTrue:
		return true, true
	case jFalse:
		return false, true
	}
	s.fail(field, "want a boolean, got %s", v.kind)
	return false, false
}

func (s *decodeState) duration(v *jval) {
	if v.kind == jNull {
		return
	}
	f, err := fastfloat.Parse(bytesString(v.raw))
	if v.kind != jNumber || err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		s.fail("duration_ms", "want a finite number >= 0, got %s", quoteForError(v.appendJSON(nil)))
		return
	}
	s.ev.DurationMS = &f
}

// headers reads an object of string values, lower-casing the names, in
// name order; of a name given twice the last value counts.
func (s *decodeState) headers(field string, v *jval) classify.Header {
	if v.kind == jNull {
		return nil
	}
	if v.kind != jObject {
		s.fail(field, "want an object of strings, got %s", v.kind)
		return nil
	}
	h := make(classify.Header, 0, v.n)
	for m := v.members(); s.err == nil; {
		k, hv, ok := m.next()
		if !ok {
			break
		}
		k = unescapedKey(k)
		switch hv.kind {
		case jNull:
			continue
		case jString:
		default:
			s.fail(field, "value of %s: want a string, got %s", quoteForError(k), hv.kind)
			continue
		}
		s.d.lower = appendLowerASCII(s.d.lower[:0], k)
		h = append(h, classify.HeaderField{Name: s.d.internBytes(s.d.lower), Value: s.d.internBytes(s.d.unescaped(&hv))})
	}
	return h.Normalized()
}

func appendLowerASCII(dst, b []byte) []byte {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// attrs merges the line's "attrs" object into Event.Attrs; its entries win
// over unknown top-level fields of the same name.
func (s *decodeState) attrs(v *jval) {
	if v.kind == jNull {
		return
	}
	if v.kind != jObject {
		s.fail("attrs", "want an object, got %s", v.kind)
		return
	}
	for m := v.members(); s.err == nil; {
		k, av, ok := m.next()
		if !ok {
			break
		}
		s.setAttr(string(unescapedKey(k)), &av, true)
	}
}

// unknown keeps a field the contract does not name in Event.Attrs.
func (s *decodeState) unknown(k []byte, v *jval) {
	if _, ok := s.ev.Attrs[string(k)]; !ok {
		s.setAttr(string(k), v, false)
	}
}

func (s *decodeState) setAttr(name string, v *jval, explicit bool) {
	if s.err != nil {
		return
	}
	// The scan is as lenient as fastjson's parser (numbers such as nan), so
	// check the value before it leaves as JSON.
	raw := v.appendJSON(nil)
	if err := fastjson.ValidateBytes(raw); err != nil {
		field := "attrs"
		if !explicit {
			field = ""
		}
		s.fail(field, "not JSON: value of %s: %v", quoteForError([]byte(name)), err)
		return
	}
	if s.ev.Attrs == nil {
		s.ev.Attrs = make(map[string]json.RawMessage, 4)
	}
	s.ev.Attrs[name] = raw
}
