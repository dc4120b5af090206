package pipeline

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The decoder's JSON layer: one pass over the line that validates it with
// fastjson's grammar (which the decoder used before, so the lines accepted
// and refused are the same) and hands out values as spans of the line,
// without building a tree, copying the line or copying a body before it is
// unescaped. Strings stay escaped until a field reader asks for them.

// jkind is the JSON type of a value.
type jkind uint8

const (
	jNull jkind = iota
	jTrue
	jFalse
	jNumber
	jString
	jObject
	jArray
)

var jkindNames = [...]string{jNull: "null", jTrue: "true", jFalse: "false", jNumber: "number",
	jString: "string", jObject: "object", jArray: "array"}

func (k jkind) String() string { return jkindNames[k] }

// jval is one value of a scanned line. raw is the value as written: for a
// string its content between the quotes, still escaped; for the others the
// whole value. It points into the line.
type jval struct {
	raw  []byte
	n    int // members of an object
	kind jkind
}

// jmember is one member of the line's top-level object, its key still escaped.
type jmember struct {
	key []byte
	val jval
}

// maxDepth is how deep values may nest, as in fastjson.
const maxDepth = 300

// jscan walks a line. err is why the line is not JSON, set once.
type jscan struct {
	b   []byte
	i   int
	err string
}

func (s *jscan) fail(format string, args ...any) bool {
	if s.err == "" {
		s.err = fmt.Sprintf(format, args...) + fmt.Sprintf(" at byte %d", s.i)
	}
	return false
}

// ws skips JSON white space.
func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\n', '\t', '\r':
			s.i++
		default:
			return
		}
	}
}

// topObject scans a line that must be one JSON object and appends its
// members to dst. When the line is JSON but not an object, kind says what
// it is and ok is false with no err.
func (s *jscan) topObject(dst []jmember) (members []jmember, kind jkind, ok bool) {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '{' {
		s.i++
		_, ok = s.object(1, &dst)
		kind = jObject
	} else {
		var v jval
		v, ok = s.value(0)
		kind = v.kind
	}
	if !ok {
		return dst, kind, false
	}
	if s.ws(); s.i < len(s.b) {
		return dst, kind, s.fail("unexpected data after the JSON value")
	}
	return dst, kind, kind == jObject
}

// value scans one value at s.i, at nesting depth depth (of its container).
func (s *jscan) value(depth int) (jval, bool) {
	if s.i >= len(s.b) {
		return jval{}, s.fail("unexpected end of the line, want a value")
	}
	depth++
	if depth > maxDepth {
		return jval{}, s.fail("nested deeper than %d", maxDepth)
	}
	start := s.i
	switch s.b[s.i] {
	case '{':
		s.i++
		n, ok := s.object(depth, nil)
		if !ok {
			return jval{}, false
		}
		return jval{kind: jObject, raw: s.b[start:s.i], n: n}, true
	case '[':
		s.i++
		if !s.array(depth) {
			return jval{}, false
		}
		return jval{kind: jArray, raw: s.b[start:s.i]}, true
	case '"':
		s.i++
		raw, ok := s.str()
		return jval{kind: jString, raw: raw}, ok
	case 't':
		return s.literal("true", jTrue)
	case 'f':
		return s.literal("false", jFalse)
	case 'n':
		if rest := s.b[s.i:]; !bytes.HasPrefix(rest, []byte("null")) && len(rest) >= 3 && bytes.EqualFold(rest[:3], []byte("nan")) {
			s.i += 3
			return jval{kind: jNumber, raw: rest[:3]}, true
		}
		return s.literal("null", jNull)
	}
	return s.number()
}

func (s *jscan) literal(word string, kind jkind) (jval, bool) {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return jval{}, s.fail("unexpected value %s", quoteForError(s.b[s.i:]))
	}
	v := jval{kind: kind, raw: s.b[s.i : s.i+len(word)]}
	s.i += len(word)
	return v, true
}

// number scans a number as leniently as fastjson: a run of digits, signs,
// dots and exponents, or inf and nan; the typed readers parse it strictly.
func (s *jscan) number() (jval, bool) {
	b, start := s.b, s.i
	i := start
	for i < len(b) && isNumberByte(b[i]) {
		i++
	}
	if i < len(b) && (i == start || i == start+1 && (b[start] == '-' || b[start] == '+')) {
		if rest := b[i:]; len(rest) >= 3 && (bytes.EqualFold(rest[:3], []byte("inf")) || bytes.EqualFold(rest[:3], []byte("nan"))) {
			s.i = i + 3
			return jval{kind: jNumber, raw: b[start:s.i]}, true
		}
		return jval{}, s.fail("unexpected character %q", b[start:start+1])
	}
	s.i = i
	return jval{kind: jNumber, raw: b[start:i]}, true
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'
}

// str scans a string's content after its opening quote, up to the first
// quote not escaped by an odd run of backslashes; escapes are not checked
// here (the unescaping keeps an invalid one as written, as fastjson does).
// Searching eight bytes at a time all the way for a quote or a backslash
// measured slower than IndexByte per quote, even on JSON bodies inside JSON
// strings; the first eight bytes are looked at without a call (10% off the
// line's scan on loadgen traffic).
func (s *jscan) str() ([]byte, bool) {
	b, start := s.b, s.i
	for i := start; ; {
		// The next quote: within the next eight bytes (keys and short
		// values end there) without a call, else by the vectorized search.
		var j int
		if i+8 <= len(b) {
			if k := indexIn8(binary.LittleEndian.Uint64(b[i:]), '"'); k < 8 {
				j = i + k
			} else if j = bytes.IndexByte(b[i+8:], '"'); j >= 0 {
				j += i + 8
			}
		} else if j = bytes.IndexByte(b[i:], '"'); j >= 0 {
			j += i
		}
		if j < 0 {
			return nil, s.fail("no closing quote for the string")
		}
		k := j
		for k > start && b[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			s.i = j + 1
			return b[start:j], true
		}
		i = j + 1
	}
}

// object scans an object's members after its '{' and counts them,
// appending them to *dst unless dst is nil.
func (s *jscan) object(depth int, dst *[]jmember) (int, bool) {
	if s.ws(); s.i >= len(s.b) {
		return 0, s.fail("missing '}'")
	}
	if s.b[s.i] == '}' {
		s.i++
		return 0, true
	}
	for n := 1; ; n++ {
		if s.ws(); s.i >= len(s.b) || s.b[s.i] != '"' {
			return 0, s.fail("want '\"' to open an object key")
		}
		s.i++
		key, ok := s.str()
		if !ok {
			return 0, false
		}
		if s.ws(); s.i >= len(s.b) || s.b[s.i] != ':' {
			return 0, s.fail("missing ':' after object key")
		}
		s.i++
		s.ws()
		v, ok := s.value(depth)
		if !ok {
			return 0, false
		}
		if dst != nil {
			*dst = append(*dst, jmember{key: key, val: v})
		}
		if s.ws(); s.i >= len(s.b) {
			return 0, s.fail("unexpected end of object")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return n, true
		default:
			return 0, s.fail("missing ',' after object value")
		}
	}
}

func (s *jscan) array(depth int) bool {
	if s.ws(); s.i >= len(s.b) {
		return s.fail("missing ']'")
	}
	if s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		s.ws()
		if _, ok := s.value(depth); !ok {
			return false
		}
		if s.ws(); s.i >= len(s.b) {
			return s.fail("unexpected end of array")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return s.fail("missing ',' after array value")
		}
	}
}

// jmembers iterates the members of an object value already scanned (so
// known to be valid).
type jmembers struct{ s jscan }

func (v jval) members() jmembers { return jmembers{jscan{b: v.raw, i: 1}} }

// next returns the next member, its key still escaped; ok is false at the end.
func (m *jmembers) next() (key []byte, v jval, ok bool) {
	s := &m.s
	if s.ws(); s.i < len(s.b) && s.b[s.i] == ',' {
		s.i++
		s.ws()
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, jval{}, false
	}
	s.i++
	key, _ = s.str()
	s.ws()
	s.i++ // ':'
	s.ws()
	v, _ = s.value(0) // depth was checked by the first scan
	return key, v, true
}

// unescapedKey returns an object key unescaped; most keys have no escape
// and are returned as they are.
func unescapedKey(k []byte) []byte {
	if bytes.IndexByte(k, '\\') < 0 {
		return k
	}
	return unescapeJSON(make([]byte, len(k)), k)
}

// appendJSON appends v as fastjson rendered a value it had not
// type-checked: strings and numbers as written, objects and arrays without
// white space outside their strings.
func (v jval) appendJSON(dst []byte) []byte {
	switch v.kind {
	case jString:
		dst = append(dst, '"')
		dst = append(dst, v.raw...)
		return append(dst, '"')
	case jObject, jArray:
		return appendCompactJSON(dst, v.raw)
	}
	return append(dst, v.raw...)
}

// appendCompactJSON appends scanned JSON without the white space outside
// its strings.
func appendCompactJSON(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		switch c := raw[i]; c {
		case ' ', '\n', '\t', '\r':
			i++
		case '"':
			s := jscan{b: raw, i: i + 1}
			s.str()
			dst = append(dst, raw[i:s.i]...)
			i = s.i
		default:
			j := i + 1
			for j < len(raw) && raw[j] != '"' && raw[j] != ' ' && raw[j] != '\n' && raw[j] != '\t' && raw[j] != '\r' {
				j++
			}
			dst = append(dst, raw[i:j]...)
			i = j
		}
	}
	return dst
}
