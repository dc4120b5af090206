package pipeline

import (
	"time"

	"github.com/zeebo/xxh3"
)

// DedupeConfig bounds what the dedupe stage remembers. The zero value means the
// defaults.
type DedupeConfig struct {
	// MaxIDs is how many event ids are remembered at most; the oldest
	// inserted is forgotten first. Default 1,000,000 (about 32 bytes each).
	MaxIDs int
	// Window is how far behind the latest event time seen an id is still
	// remembered. Default 10 minutes.
	Window time.Duration
}

// Dedupe defaults.
const (
	defaultDedupeMaxIDs = 1_000_000
	DefaultDedupeWindow = 10 * time.Minute
)

func (c DedupeConfig) withDefaults() DedupeConfig {
	if c.MaxIDs <= 0 {
		c.MaxIDs = defaultDedupeMaxIDs
	}
	if c.Window <= 0 {
		c.Window = DefaultDedupeWindow
	}
	return c
}

// dedupe tells repeated event ids apart from new ones within a bounded
// window: the last MaxIDs ids, and at least those whose event time is within
// Window of the latest event time seen. It keeps 64-bit XXH3 hashes of the
// ids, not the ids (a false "repeat" needs a hash collision: about 3e-8 at
// a million ids), in an open-addressing set and a ring buffer of insertion
// order: Seen is O(1) amortised at any fill. Time is
// event time only: no wall clock, so a replay decides the same.
//
// A Dedupe is not safe for concurrent use. The zero value is not usable;
// call [newDedupe].
type dedupe struct {
	max    int
	window int64 // nanoseconds
	latest int64 // latest event time seen, Unix nanoseconds
	seen   idSet
	order  ring[dedupeEntry] // insertion order, oldest first
}

type dedupeEntry struct {
	hash uint64
	ts   int64 // event time, Unix nanoseconds
}

// newDedupe returns an empty Dedupe.
func newDedupe(cfg DedupeConfig) *dedupe {
	cfg = cfg.withDefaults()
	return &dedupe{
		max:    cfg.MaxIDs,
		window: int64(cfg.Window),
		latest: minTime,
	}
}

const minTime = -1 << 63

// Seen reports whether id was seen before within the window, and remembers
// it when not. ts is the event's time; it advances the window.
func (d *dedupe) Seen(id string, ts time.Time) bool {
	h := xxh3.HashString(id)
	if h == 0 {
		h = 1 // 0 marks an empty slot
	}
	t := ts.UnixNano()
	if t > d.latest {
		d.latest = t
		d.expire()
	}
	if d.seen.has(h) {
		return true
	}
	if d.order.len() == d.max {
		d.pop()
	}
	d.order.push(dedupeEntry{hash: h, ts: t})
	d.seen.add(h)
	return false
}

// Len is how many ids are remembered.
func (d *dedupe) Len() int { return d.order.len() }

// expire forgets ids from the head of the ring while they are older than the
// window. An id inserted late with an old time waits behind newer ones: it is
// remembered longer than the window, never shorter.
func (d *dedupe) expire() {
	cutoff := d.latest - d.window
	if d.latest < minTime+d.window {
		return // no id can be older than the window yet
	}
	for d.order.len() > 0 && d.order.front().ts < cutoff {
		d.pop()
	}
}

func (d *dedupe) pop() { d.seen.del(d.order.pop().hash) }

// idSet is a set of non-zero hashes: linear probing in a power-of-two table
// at most 3/4 full, deletion by backward shift (no tombstones). 8 bytes a
// slot, where a Go map[uint64]struct{} takes about 38 bytes an entry.
type idSet struct {
	slots []uint64 // 0: empty
	n     int
}

func (s *idSet) has(h uint64) bool {
	if s.slots == nil {
		return false
	}
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s.slots[i] {
		case h:
			return true
		case 0:
			return false
		}
	}
}

func (s *idSet) add(h uint64) {
	if 4*(s.n+1) > 3*len(s.slots) {
		s.grow()
	}
	mask := uint64(len(s.slots) - 1)
	i := h & mask
	for s.slots[i] != 0 {
		i = (i + 1) & mask
	}
	s.slots[i] = h
	s.n++
}

func (s *idSet) grow() {
	old := s.slots
	s.slots, s.n = make([]uint64, max(1024, 2*len(old))), 0
	for _, h := range old {
		if h != 0 {
			s.add(h)
		}
	}
}

func (s *idSet) del(h uint64) {
	mask := uint64(len(s.slots) - 1)
	i := h & mask
	for s.slots[i] != h {
		if s.slots[i] == 0 {
			return
		}
		i = (i + 1) & mask
	}
	// Shift back the entries after the hole that may not stay behind it.
	for j := (i + 1) & mask; s.slots[j] != 0; j = (j + 1) & mask {
		home := s.slots[j] & mask
		// The entry at j stays when its home is cyclically in (i, j].
		if (i < j && i < home && home <= j) || (i > j && (i < home || home <= j)) {
			continue
		}
		s.slots[i] = s.slots[j]
		i = j
	}
	s.slots[i] = 0
	s.n--
}
