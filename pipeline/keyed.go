package pipeline

import (
	"math/bits"
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
// were put: a ring of entries that expiry and the size bound pop from its
// head, and a table from each key's hash to the sequence number of its
// newest entry. An entry whose key was put again since is skipped when it
// reaches the head. An entry may also be found by a second key of its own
// (alt), in a table of its own, for as long as the entry is in the ring
// and no newer entry took that key. Put, get and expiry are O(1)
// amortised, whatever the window holds; nothing copies the ring or
// rehashes a key's string. Per entry: its hashes, a timestamp and V in the
// ring, and 8 bytes a slot in each table that holds it (about 16 bytes an
// entry at the tables' load, where a Go map of the same took about 40).
// Values must be put in nondecreasing ts, as the chains Link exchanges.
type keyed[V any] struct {
	idx  seqTable // key -> sequence number of its newest entry
	alt  seqTable // second key -> sequence number
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
	return keyed[V]{max: maxKeys}
}

// keyOf returns the key, or the second key, of the entry at seq.
func (w *keyed[V]) keyOf(seq uint64, alt bool) hkey {
	e := w.ring.at(int(seq - w.head))
	if alt {
		return e.alt
	}
	return e.key
}

// get returns the newest value of k.
func (w *keyed[V]) get(k hkey) (*V, bool) { return w.at(&w.idx, k, false) }

// getAt returns the newest value of k and the ts it was written at.
func (w *keyed[V]) getAt(k hkey) (*V, int64, bool) {
	i, ok := w.find(&w.idx, k, false)
	if !ok {
		return nil, 0, false
	}
	e := w.ring.at(int(w.idx.seq(i, w.head) - w.head))
	return &e.v, e.ts, true
}

// getAlt returns the newest value whose second key is k.
func (w *keyed[V]) getAlt(k hkey) (*V, bool) { return w.at(&w.alt, k, true) }

func (w *keyed[V]) at(t *seqTable, k hkey, alt bool) (*V, bool) {
	i, ok := w.find(t, k, alt)
	if !ok {
		return nil, false
	}
	return &w.ring.at(int(t.seq(i, w.head) - w.head)).v, true
}

// front returns the oldest entry's value; false when the ring is empty.
func (w *keyed[V]) front() (*V, bool) {
	if w.ring.len() == 0 {
		return nil, false
	}
	return &w.ring.at(0).v, true
}

// put makes v the newest value of k, and of alt unless alt is zero,
// written at ts. A new key over the bound first forgets the oldest live
// one.
func (w *keyed[V]) put(k, alt hkey, ts int64, v V) {
	i, found := w.find(&w.idx, k, false)
	if !found && w.idx.n >= w.max {
		w.dropOldest()
		i, _ = w.find(&w.idx, k, false) // the table may have been cleaned
	}
	seq := w.head + uint64(w.ring.len())
	w.ring.push(keyedEntry[V]{key: k, alt: alt, ts: ts, v: v})
	w.set(&w.idx, i, found, k, seq, false)
	if alt != (hkey{}) {
		j, ok := w.find(&w.alt, alt, true)
		w.set(&w.alt, j, ok, alt, seq, true)
	}
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
	e := w.ring.at(0)
	seq := w.head
	if e.alt != (hkey{}) {
		if i, ok := w.find(&w.alt, e.alt, true); ok && w.alt.seq(i, w.head) == seq {
			w.alt.remove(i)
		}
	}
	gone := false
	if i, ok := w.find(&w.idx, e.key, false); ok && w.idx.seq(i, w.head) == seq {
		w.idx.remove(i)
		gone = true
	}
	w.ring.pop()
	w.head++
	return gone
}

// dropOldest forgets the oldest live key.
func (w *keyed[V]) dropOldest() {
	for w.ring.len() > 0 && !w.pop() {
	}
}

// len returns how many keys are live.
func (w *keyed[V]) len() int { return w.idx.n }

// find returns the slot of k in t: where k is when found, else where it
// goes (the first free slot of its probe sequence).
func (w *keyed[V]) find(t *seqTable, k hkey, alt bool) (int, bool) {
	if t.slots == nil {
		return -1, false
	}
	fp := fingerprint(k)
	free := -1
	for i := t.home(k); ; i = t.next(i) {
		s := t.slots[i]
		switch {
		case s == slotEmpty:
			if free < 0 {
				free = i
			}
			return free, false
		case s == slotGone:
			if free < 0 {
				free = i
			}
		case s&^seqMask == fp && w.keyOf(t.seq(i, w.head), alt) == k:
			return i, true
		}
	}
}

// set files seq under k at slot i, which find returned for k (found says
// whether k was there). A table that fills is rebuilt first.
func (w *keyed[V]) set(t *seqTable, i int, found bool, k hkey, seq uint64, alt bool) {
	if !found && (i < 0 || (t.slots[i] == slotEmpty && 4*(t.n+t.gone+1) > 3*len(t.slots))) {
		w.rebuild(t, alt)
		i, _ = w.find(t, k, alt)
	}
	if !found {
		if t.slots[i] == slotGone {
			t.gone--
		}
		t.n++
	}
	t.slots[i] = fingerprint(k) | seq&seqMask
}

// rebuild moves t's live slots into a table half full, leaving the
// removed ones behind: it runs once per n/2 slots taken or so, and reads
// each live entry's key from the ring.
func (w *keyed[V]) rebuild(t *seqTable, alt bool) {
	old := t.slots
	t.slots, t.gone = make([]uint64, max(1024, 2*(t.n+1))), 0
	for _, s := range old {
		if s == slotEmpty || s == slotGone {
			continue
		}
		i := t.home(w.keyOf(seqOf(s, w.head), alt))
		for t.slots[i] != slotEmpty {
			i = t.next(i)
		}
		t.slots[i] = s
	}
}

// seqTable finds a window's entries by key hash: open addressing by
// linear probing in a table at most 3/4 full, 8 bytes a slot. A key's
// first slot comes from the low half of its hash; a slot holds the low 40
// bits of the entry's sequence number (the ring holds fewer than 2⁴⁰
// entries, so they name one) and 23 bits of the high half of the hash,
// with the top bit set. A probe compares those bits and, where they
// agree, the whole key in the ring. Removal leaves a marker that probes
// pass over, until the next rebuild drops it.
type seqTable struct {
	slots   []uint64
	n, gone int // live slots, removed slots
}

const (
	slotEmpty = 0
	slotGone  = 1 // a removed entry: its top bit is clear, unlike a live one's
	seqBits   = 40
	seqMask   = 1<<seqBits - 1
)

// fingerprint is the part of a slot that comes from the key: 23 bits of
// the hash's high half, which the slot's index does not use, and the top
// bit, which no marker has.
func fingerprint(k hkey) uint64 { return (k.Hi>>(seqBits+1))<<seqBits | 1<<63 }

// home is k's first slot: the low half of its hash scaled to the table.
func (t *seqTable) home(k hkey) int {
	hi, _ := bits.Mul64(k.Lo, uint64(len(t.slots)))
	return int(hi) //nolint:gosec // G115: below len(t.slots)
}

func (t *seqTable) next(i int) int {
	if i++; i == len(t.slots) {
		return 0
	}
	return i
}

// seqOf returns the sequence number a slot holds: the one at or after
// head whose low bits are the slot's.
func seqOf(s, head uint64) uint64 { return head + (s-head)&seqMask }

func (t *seqTable) seq(i int, head uint64) uint64 { return seqOf(t.slots[i], head) }

func (t *seqTable) remove(i int) {
	t.slots[i] = slotGone
	t.n--
	t.gone++
}
