package classify

import (
	"hash/maphash"
	"sync/atomic"
)

// The names the classifier copies out of a body (method, tool name,
// protocol version) repeat from exchange to exchange: a few dozen per
// server. intern returns the string a slot already holds for the same
// bytes instead of a new one each time, which was two of the classifier's
// allocations per exchange. Direct-mapped and lossy (a colliding name
// replaces the slot's), so its memory is bounded; atomic, since Classify
// may run on several goroutines.
const (
	internSlots  = 512 // a power of two
	maxInternLen = 64  // longer names are copied, not kept
)

var (
	internTable [internSlots]atomic.Pointer[string]
	internSeed  = maphash.MakeSeed()
)

func intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxInternLen {
		return string(b)
	}
	slot := &internTable[maphash.Bytes(internSeed, b)&(internSlots-1)]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}

// vias are the ways a body reaches the envelope checks, which name the
// rule that decided as via + "-" + what (message, result).
var vias = [...]string{"json", "json-batch", "sse"}

// rules holds via + "-" + what for every via and every what the
// classifier names, built once, so that naming the rule of an exchange
// builds no string. Read only after init.
var rules = func() map[[2]string]string {
	whats := []string{
		"malformed", "not-object", "envelope", "jsonrpc-error",
		"tool-result-not-object", "result-not-object", "result-type",
		"input-required-empty", "input-required", "result",
		"content-not-array", "iserror-not-boolean", "tool-result",
		"tool-iserror",
	}
	m := make(map[[2]string]string, len(vias)*len(whats))
	for _, v := range vias {
		for _, w := range whats {
			m[[2]string{v, w}] = v + "-" + w
		}
	}
	return m
}()

// rule returns via + "-" + what, from rules when it is there.
func rule(via, what string) string {
	if r, ok := rules[[2]string{via, what}]; ok {
		return r
	}
	return via + "-" + what
}
