package pipeline

import (
	"math/rand/v2"

	"github.com/zeebo/xxh3"
)

// hkey names a key by its 128-bit hash: a map of them holds 16 bytes per
// key instead of the key's string (often over 100 bytes: server, session,
// method, tool and a params hash). Two keys of one window share a hash
// with a probability of about n²/2¹²⁹ (10⁻²⁶ for a million keys); the
// hash is seeded per process, so a sender cannot aim for a collision.
type hkey = xxh3.Uint128

// keyHasher hashes keys made of parts, without allocating.
type keyHasher struct {
	seed uint64
	buf  []byte
}

func newKeyHasher() keyHasher { return keyHasher{seed: rand.Uint64()} } //nolint:gosec // G404: a hash seed, not a secret

// of hashes parts, each ended by a NUL (no part holds one after
// cleanText; a part that did could only merge keys by its own bytes).
func (h *keyHasher) of(parts ...string) hkey {
	b := h.buf[:0]
	for _, p := range parts {
		b = append(b, p...)
		b = append(b, 0)
	}
	h.buf = b
	return xxh3.Hash128Seed(b, h.seed)
}

// keyed is a window of the newest value per key, in the order the values
// were put: a map from each key's hash to the sequence number of its
// newest entry, and a ring of entries that expiry and the size bound pop
// from its head. An entry whose key was put again since is skipped when it
// reaches the head. An entry may also be found by a second key of its own
// (alt), in a map of its own, for as long as the entry is in the ring and
// no newer entry took that key. Put, get and expiry are O(1) amortised,
// whatever the window holds; nothing copies the ring or rehashes a key's
// string. Per entry: its hashes, a timestamp and V in the ring, and about
// 40 bytes in each map that holds it. Values must be put in nondecreasing
// ts, as the chains Link exchanges.
type keyed[V any] struct {
	idx  map[hkey]uint64 // key -> sequence number of its newest entry
	alt  map[hkey]uint64 // second key -> sequence number
	ring ring[keyedEntry[V]]
	head uint64 // sequence number of the ring's front
	max  int    // most live keys
}

type keyedEntry[V any] struct {
	key, alt hkey // alt is zero when the entry has none
	ts       int64
	v        V
}

func newKeyed[V any](maxKeys int) keyed[V] {
	return keyed[V]{idx: map[hkey]uint64{}, alt: map[hkey]uint64{}, max: maxKeys}
}

// get returns the newest value of k.
func (w *keyed[V]) get(k hkey) (*V, bool) { return w.at(w.idx, k) }

// getAlt returns the newest value whose second key is k.
func (w *keyed[V]) getAlt(k hkey) (*V, bool) { return w.at(w.alt, k) }

func (w *keyed[V]) at(m map[hkey]uint64, k hkey) (*V, bool) {
	seq, ok := m[k]
	if !ok {
		return nil, false
	}
	return &w.ring.at(int(seq - w.head)).v, true
}

// put makes v the newest value of k, and of alt unless alt is zero,
// written at ts. A new key over the bound first forgets the oldest live
// one.
func (w *keyed[V]) put(k, alt hkey, ts int64, v V) {
	if _, ok := w.idx[k]; !ok && len(w.idx) >= w.max {
		w.dropOldest()
	}
	seq := w.head + uint64(w.ring.len())
	w.idx[k] = seq
	if alt != (hkey{}) {
		w.alt[alt] = seq
	}
	w.ring.push(keyedEntry[V]{key: k, alt: alt, ts: ts, v: v})
}

// expire forgets the values written before cut.
func (w *keyed[V]) expire(cut int64) {
	for w.ring.len() > 0 && w.ring.front().ts < cut {
		w.pop()
	}
}

// pop removes the ring's front, and its key when that was the key's
// newest entry; it reports whether a key went.
func (w *keyed[V]) pop() bool {
	e := w.ring.pop()
	seq := w.head
	w.head++
	if e.alt != (hkey{}) {
		if cur, ok := w.alt[e.alt]; ok && cur == seq {
			delete(w.alt, e.alt)
		}
	}
	if cur, ok := w.idx[e.key]; ok && cur == seq {
		delete(w.idx, e.key)
		return true
	}
	return false
}

// dropOldest forgets the oldest live key.
func (w *keyed[V]) dropOldest() {
	for w.ring.len() > 0 && !w.pop() {
	}
}

// len returns how many keys are live.
func (w *keyed[V]) len() int { return len(w.idx) }
