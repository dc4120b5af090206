package schema

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/mcplens/mcplens/classify"
)

// The appenders below write JSON exactly as encoding/json does with
// SetEscapeHTML(false), without reflection or allocation: the output path
// encodes every exchange record, and reflection was a tenth of the
// pipeline's time. exchange_json_test.go holds them to encoding/json byte
// for byte.

func appendKey(b []byte, key string) []byte {
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

const hexDigits = "0123456789abcdef"

// load8 is the eight bytes of s from i on, the first in the lowest byte.
func load8(s string, i int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
}

// plain8 says whether all eight bytes of x go into a JSON string as they
// are: ASCII, not a control byte, neither " nor \. The tests for a byte
// below 0x20 and for a zero byte (after the XOR) are exact once no byte
// has its high bit set, which the first term rules out. appendString so
// skips eight plain bytes at a time: record fields (ids, URLs, methods,
// messages) are mostly plain, and byte by byte their encoding was 2% of
// the engine's CPU into stdout.
func plain8(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	ctl := (x - 0x20*lo) &^ x & hi
	q := x ^ ('"' * lo)
	q = (q - lo) &^ q & hi
	bs := x ^ ('\\' * lo)
	bs = (bs - lo) &^ bs & hi
	return x&hi|ctl|q|bs == 0
}

// appendString appends s as a JSON string: ", \ and control bytes escaped
// (\b \f \n \r \t by name), invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped, everything else as is.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start, miss := 0, 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while they are plain; then byte by byte
		// through the next eight, or further the more such stretches
		// came in a row (up to 128 bytes), so that text seldom plain
		// (another script) pays few tests.
		for i+8 <= len(s) && plain8(load8(s, i)) {
			i += 8
			miss = 0
		}
		end := min(i+8<<miss, len(s))
		miss = min(miss+1, 4)
		for i < end {
			c := s[i]
			if c < utf8.RuneSelf {
				if c >= 0x20 && c != '"' && c != '\\' {
					i++
					continue
				}
				b = append(b, s[start:i]...)
				switch c {
				case '\\', '"':
					b = append(b, '\\', c)
				case '\b':
					b = append(b, '\\', 'b')
				case '\f':
					b = append(b, '\\', 'f')
				case '\n':
					b = append(b, '\\', 'n')
				case '\r':
					b = append(b, '\\', 'r')
				case '\t':
					b = append(b, '\\', 't')
				default:
					b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
				}
				i++
				start = i
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				b = append(b, s[start:i]...)
				b = append(b, `\ufffd`...)
			case r == '\u2028' || r == '\u2029':
				b = append(b, s[start:i]...)
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			default:
				i += size
				continue
			}
			i += size
			start = i
		}
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendBool(b []byte, v bool) []byte { return strconv.AppendBool(b, v) }

func appendInt(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) }

// appendFloat writes a finite float64 as encoding/json does (ES6 number
// formatting); NaN and infinities, which encoding/json refuses, are null.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendTime writes t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds, trailing zeros dropped).
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// AppendHeader appends h as a JSON object with its names sorted, as
// encoding/json encodes the same headers as a map[string]string with
// SetEscapeHTML(false); a nil or empty h as {}. Decoded headers are
// sorted already; a literal out of order is sorted in a copy.
func AppendHeader(b []byte, h classify.Header) []byte {
	b = append(b, '{')
	for i, f := range h.Sorted() {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f.Name)
		b = append(b, ':')
		b = appendString(b, f.Value)
	}
	return append(b, '}')
}
