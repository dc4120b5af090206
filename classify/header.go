package classify

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Header holds an HTTP message's headers as the log contract records
// them: lower-case names, one value each. Decoded and built headers
// ([HeaderOf], [Header.Set]) are sorted by name; a literal may be in any
// order, and encoders sort it ([Header.Sorted]). A nil Header is empty.
//
// It is a slice, not a map: a message carries a handful of headers, and
// every event built, packed, unpacked and stored a map of them (its
// allocation, hashing and iteration order to sort away) where a short
// slice scanned in order does the same work for less.
type Header []HeaderField

// HeaderField is one header.
type HeaderField struct {
	Name, Value string
}

// HeaderOf returns m as a Header sorted by name (nil for an empty m).
func HeaderOf(m map[string]string) Header {
	if len(m) == 0 {
		return nil
	}
	h := make(Header, 0, len(m))
	for k, v := range m {
		h = append(h, HeaderField{k, v})
	}
	h.sort()
	return h
}

// Normalized sorts h by name in place, keeping of a name given more than
// once the value given last, and returns it (shorter by the repeats).
// O(n log n): a line may carry thousands of headers.
func (h Header) Normalized() Header {
	if slices.IsSortedFunc(h, compareFields) && !repeats(h) {
		return h
	}
	slices.SortStableFunc(h, compareFields)
	out := h[:0]
	for i := range h {
		if i+1 < len(h) && h[i+1].Name == h[i].Name {
			continue // a later value of the same name follows
		}
		out = append(out, h[i])
	}
	clear(h[len(out):])
	return out
}

// repeats says whether sorted h names a header twice.
func repeats(h Header) bool {
	for i := 1; i < len(h); i++ {
		if h[i].Name == h[i-1].Name {
			return true
		}
	}
	return false
}

// Get returns the value of the lower-case header name, or "".
func (h Header) Get(name string) string {
	v, _ := h.Lookup(name)
	return v
}

// Lookup returns the value of the lower-case header name and whether h
// has it.
func (h Header) Lookup(name string) (string, bool) {
	for i := range h {
		if h[i].Name == name {
			return h[i].Value, true
		}
	}
	return "", false
}

// Set sets the header name to value, in name order: appended, then moved
// back to its place. O(len(h)): for a handful of headers; build many with
// append and [Header.Normalized].
func (h *Header) Set(name, value string) {
	for i := range *h {
		if (*h)[i].Name == name {
			(*h)[i].Value = value
			return
		}
	}
	*h = append(*h, HeaderField{name, value})
	for i := len(*h) - 1; i > 0 && (*h)[i].Name < (*h)[i-1].Name; i-- {
		(*h)[i], (*h)[i-1] = (*h)[i-1], (*h)[i]
	}
}

// Sorted returns h sorted by name: h itself when it already is, else a
// sorted copy (h is never changed).
func (h Header) Sorted() Header {
	if slices.IsSortedFunc(h, compareFields) {
		return h
	}
	c := slices.Clone(h)
	c.sort()
	return c
}

func (h Header) sort() { slices.SortFunc(h, compareFields) }

func compareFields(a, b HeaderField) int { return strings.Compare(a.Name, b.Name) }

// Map returns h as a map (nil for an empty h).
func (h Header) Map() map[string]string {
	if len(h) == 0 {
		return nil
	}
	m := make(map[string]string, len(h))
	for _, f := range h {
		m[f.Name] = f.Value
	}
	return m
}

// MarshalJSON encodes h as a JSON object, names sorted, as a
// map[string]string encodes; a nil h as null. It leaves <, > and & alone:
// the encoder that called it escapes them or not, as for the map.
func (h Header) MarshalJSON() ([]byte, error) {
	if h == nil {
		return []byte("null"), nil
	}
	m := h.Map()
	if m == nil {
		m = map[string]string{} // empty, not absent: {}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON decodes a JSON object of strings (or null).
func (h *Header) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m == nil {
		*h = nil
		return nil
	}
	*h = HeaderOf(m)
	if *h == nil {
		*h = Header{}
	}
	return nil
}
