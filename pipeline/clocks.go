package pipeline

import (
	"math"
	"strings"
	"time"

	"github.com/mcplens/mcplens/schema"
)

// Bounds of the clocks the merges learn (clocks).
const (
	// clockIdle is how long of event time a clock no merge taught is
	// kept: its observer stopped logging, or a merge will teach it again.
	clockIdle = time.Hour
	// maxClocks caps the observers whose clocks are kept, the least
	// recently taught going first: 135 bytes each (BenchmarkClockMemory:
	// the key, the map slot and its ring entry), 13 MB at the cap.
	maxClocks = 100_000
)

// clocks is what the merges taught about each observer's clock (clock),
// by source NUL observer. A fleet of client hosts that come and go for
// days must not grow it without end, so a clock not taught for clockIdle
// is forgotten, and at most maxClocks are kept. Its expiry ring holds a
// clock again only after clockIdle/8 of teaching, not at every merge, so
// the ring stays within nine entries per clock while each lookup and
// teaching stays O(1) amortised. Not safe for concurrent use.
type clocks struct {
	byKey map[string]clock
	ring  ring[keyTime] // the key and queued of each clock's latest entry, and stale ones
}

func newClocks() clocks { return clocks{byKey: map[string]clock{}} }

func (c *clocks) len() int { return len(c.byKey) }

// get returns the clock of key; a lookup allocates nothing.
func (c *clocks) get(key []byte) (clock, bool) {
	k, ok := c.byKey[string(key)]
	return k, ok
}

// teach updates key's clock with one more pair of views that put it d off
// the reference, at event time at.
func (c *clocks) teach(key []byte, d time.Duration, at time.Time) {
	old, known := c.byKey[string(key)]
	k := old.taught(d, known)
	k.at = max(old.at, at.UnixNano())
	s := string(key)
	if !known || k.at-old.queued > int64(clockIdle/8) {
		k.queued = k.at
		c.ring.push(keyTime{key: s, ts: k.queued})
	}
	c.byKey[s] = k
	for len(c.byKey) > maxClocks {
		c.drop(c.ring.pop(), math.MaxInt64)
	}
}

// expire forgets the clocks not taught since clockIdle before now.
func (c *clocks) expire(now time.Time) {
	if now.IsZero() {
		return
	}
	cut := now.Add(-clockIdle).UnixNano()
	for c.ring.len() > 0 && c.ring.front().ts < cut {
		c.drop(c.ring.pop(), cut)
	}
}

// drop handles kt, an entry off the front of the ring: the clock it was
// queued for is forgotten if it was last taught before cut, else queued
// again at its last teaching. A stale entry (the clock was queued again,
// or forgotten) is ignored.
func (c *clocks) drop(kt keyTime, cut int64) {
	k, ok := c.byKey[kt.key]
	if !ok || k.queued != kt.ts {
		return
	}
	if k.at < cut {
		delete(c.byKey, kt.key)
		return
	}
	k.queued = k.at
	c.byKey[kt.key] = k
	c.ring.push(keyTime{key: kt.key, ts: k.queued})
}

// seedClocks teaches the clocks a stored record measured (its merged
// views against the gateway's request), as its merge taught them before
// a restart: a client whose clock is further off than the merge window
// merges again from the first line read after it. A malformed entry (a
// store edited by hand) is skipped.
func (m *mergeSet) seedClocks(rec *schema.Exchange) {
	for i, obs := range rec.MergedObservers {
		source, observer, ok := strings.Cut(obs, "/")
		if !ok || i >= len(rec.MergedOffsetsMS) || math.IsNaN(rec.MergedOffsetsMS[i]) || math.IsInf(rec.MergedOffsetsMS[i], 0) {
			continue
		}
		m.clocks.teach(m.clockKey(source, observer), time.Duration(rec.MergedOffsetsMS[i]*float64(time.Millisecond)), rec.TS)
	}
}
