package pipeline

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// bodyString returns a JSON string value unescaped into a fresh string,
// faster than fastjson's unescaping on the escape-dense bodies the contract
// carries (JSON inside a JSON string). The body is unescaped into the
// decoder's scratch and copied out at its unescaped size: a body is kept
// until its exchange is stored, and JSON inside a JSON string is a tenth or
// more shorter than as written. ok is false for null or a non-string.
func (s *decodeState) bodyString(field string, v *jval) (string, bool) {
	if v.kind != jString {
		if v.kind != jNull {
			s.fail(field, "want a string, got %s", v.kind)
		}
		return "", false
	}
	return string(s.d.unescaped(v)), true
}

// unescape decodes the JSON string content s into out (len(out) >= len(s):
// unescaping never grows a string) and returns the used part. Like fastjson,
// it is best effort: an invalid escape is kept as written, so a malformed
// body survives.
func unescapeJSON(out, s []byte) []byte {
	n, i := 0, 0
	for i < len(s) {
		// Copy up to the next backslash. Escapes close together (\" after
		// \\, a string of \u escapes) are found in the next eight bytes,
		// stored whole (the bytes past the backslash are overwritten next,
		// and n <= i leaves out the room). Past those, JSON held in a JSON
		// string has runs of tens of bytes between escapes, found and
		// copied fastest by the vectorized search and copy.
		found := false
		if i+8 <= len(s) {
			x := binary.LittleEndian.Uint64(s[i:])
			binary.LittleEndian.PutUint64(out[n:], x)
			if k := indexIn8(x, '\\'); k < 8 {
				i, n, found = i+k, n+k, true
			} else {
				i, n = i+8, n+8
			}
		}
		if !found {
			j := bytes.IndexByte(s[i:], '\\')
			if j < 0 {
				j = len(s) - i
			}
			n += copy(out[n:], s[i:i+j])
			i += j
		}
		if i+1 >= len(s) { // no escape, or a lone trailing backslash
			n += copy(out[n:], s[i:])
			break
		}
		c, w := s[i+1], 2
		switch c {
		case '"', '\\', '/':
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			r, w := unescapeRune(s[i:])
			if w == 0 { // invalid: keep "\u" and go on after it
				n += copy(out[n:], s[i:i+2])
				i += 2
				continue
			}
			n += utf8.EncodeRune(out[n:], r)
			i += w
			continue
		default: // unknown escape: keep it
			out[n] = '\\'
			n++
		}
		out[n] = c
		i, n = i+w, n+1
	}
	return out[:n]
}

// indexIn8 returns the offset of the first byte c in the eight bytes of
// the little-endian word x, or 8 when there is none. The test flags every
// byte equal to c and may flag bytes above one (a borrow), so the lowest
// flagged byte is exactly the first c.
func indexIn8(x uint64, c byte) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	y := x ^ (lo * uint64(c))
	return bits.TrailingZeros64((y-lo)&^y&hi) / 8
}

// unescapeRune decodes "\uXXXX" (and a following "\uXXXX" when the first is
// a surrogate) at the start of s; w is the bytes consumed, 0 when invalid.
// Same results as fastjson: a surrogate followed by a non-matching escape
// becomes U+FFFD, a lone surrogate at the end is kept as written.
func unescapeRune(s []byte) (r rune, w int) {
	x, ok := parseHex4(s, 2)
	if !ok {
		return 0, 0
	}
	if !utf16.IsSurrogate(rune(x)) {
		return rune(x), 6
	}
	if len(s) < 12 || s[6] != '\\' || s[7] != 'u' {
		return 0, 0
	}
	x1, ok := parseHex4(s, 8)
	if !ok {
		return 0, 0
	}
	return utf16.DecodeRune(rune(x), rune(x1)), 12
}

func parseHex4(s []byte, at int) (uint16, bool) {
	if len(s) < at+4 {
		return 0, false
	}
	var x uint16
	for _, c := range s[at : at+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		x = x<<4 | uint16(c)
	}
	return x, true
}
