package classify

import (
	"encoding/hex"

	"github.com/valyala/fastjson"
)

// FNV-1a, 64 bit.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvAdd(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

func fnvByte(h uint64, c byte) uint64 {
	h ^= uint64(c)
	return h * fnvPrime
}

// mix is a 64-bit finalizer (splitmix64) that spreads the bits of a
// per-member hash before members are summed.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// excludedParam reports the params members that do not make two calls
// different: protocol metadata and the MRTR continuation fields. Leaving
// them out makes an MRTR follow-up hash like the call it continues.
func excludedParam(k []byte) bool {
	switch string(k) {
	case "_meta", "inputResponses", "requestState":
		return true
	}
	return false
}

// hashParams returns a stable hash of method and params, independent of
// object key order and white space: two sends of the same call hash alike.
func hashParams(method []byte, params *fastjson.Value) string {
	h := fnvAdd(fnvOffset, method)
	h = fnvByte(h, 0)
	if params != nil {
		h = hashValue(h, params, true)
	}
	var out [16]byte
	var raw [8]byte
	for i := range raw {
		raw[i] = byte(h >> (56 - 8*i))
	}
	hex.Encode(out[:], raw[:])
	return string(out[:])
}

// hashValue folds v into h. Objects combine their members with a
// commutative sum, so key order does not matter and nothing is sorted.
func hashValue(h uint64, v *fastjson.Value, top bool) uint64 {
	t := v.Type()
	h = fnvByte(h, byte(t))
	switch t {
	case fastjson.TypeObject:
		o, _ := v.Object()
		var sum uint64
		o.Visit(func(k []byte, mv *fastjson.Value) {
			if top && excludedParam(k) {
				return
			}
			m := fnvAdd(fnvOffset, k)
			m = fnvByte(m, 0)
			sum += mix(hashValue(m, mv, false))
		})
		var b [8]byte
		for i := range b {
			b[i] = byte(sum >> (8 * i))
		}
		return fnvAdd(h, b[:])
	case fastjson.TypeArray:
		a, _ := v.Array()
		for _, it := range a {
			h = hashValue(h, it, false)
			h = fnvByte(h, ',')
		}
		return h
	case fastjson.TypeString:
		return fnvAdd(h, v.GetStringBytes())
	case fastjson.TypeNumber:
		var buf [32]byte
		return fnvAdd(h, v.MarshalTo(buf[:0]))
	default:
		return h
	}
}
