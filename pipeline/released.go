package pipeline

import "time"

// What the merge set keeps of the exchanges it released, to learn from a
// view that arrives after its exchange was released (a missed merge):
//
//   - by how much it missed (extraWait). Lines read further out of order
//     than the merge window (a shipper that batches, a client clock
//     running ahead in a time-sorted export) left each such view a record
//     of its own. A miss now makes every group wait that much longer, up
//     to Lateness, and the wait fades over lagFade of event time unless
//     views keep joining late. Traffic in order never misses, so it never
//     waits longer.
//   - the clock of an untaught observer. A client clock running more than
//     the merge window behind, its lines read in clock order, had each
//     view released alone before its gateway view was read: no merge ever
//     taught the clock, and none of its views merged.
//
// Only groups with an exchange_id can be matched after release. They are
// kept for Lateness (as long as a miss can still be waited out), a lone
// view of an untaught clock for the pair window: at 1,000 exchanges/s about
// 5,000 entries of about 100 bytes, at most maxReleased.

// released is what is kept of one released group, by exchange id.
type released struct {
	at   time.Time // the event time it was released at
	due  time.Time // when its wait ended
	rank int       // the observerRank of its best view
	// A lone view of an untaught observer: its clock key (source NUL
	// observer) and request time on that clock.
	clock string
	ts    time.Time
}

// releasedSet holds the released groups by exchange id, and their keys in
// release order in two queues: short ones kept for Lateness, untaught
// views for the pair window. Expiry is O(1) amortised.
type releasedSet struct {
	byID        map[hkey]released
	short, long releasedQueue
}

func newReleasedSet() releasedSet { return releasedSet{byID: map[hkey]released{}} }

// maxReleased bounds the released groups kept.
const maxReleased = 200_000

// releasedQueue is a queue of keys, passed by a head index and compacted
// once more than half of it is passed.
type releasedQueue struct {
	keys []releasedKey
	head int
}

type releasedKey struct {
	key hkey
	at  time.Time
}

func (q *releasedQueue) push(k hkey, at time.Time) {
	q.keys = append(q.keys, releasedKey{k, at})
}

// expire forgets the keys released before cut.
func (q *releasedQueue) expire(byID map[hkey]released, cut time.Time) {
	i := q.head
	for ; i < len(q.keys) && q.keys[i].at.Before(cut); i++ {
		if r, ok := byID[q.keys[i].key]; ok && r.at.Equal(q.keys[i].at) {
			delete(byID, q.keys[i].key)
		}
	}
	q.head = i
	if i > len(q.keys)/2 {
		q.keys, q.head = q.keys[:copy(q.keys, q.keys[i:])], 0
	}
}

// lagFade is how long, in event time, an extra wait takes to fade once no
// view joins or misses late any more.
const lagFade = 10 * time.Minute

// remember keeps what a miss of g would need, if g's views carry an
// exchange_id. The merge set released g at event time at.
func (m *mergeSet) remember(g *group, at time.Time) {
	if m.maxLag <= 0 || len(m.released.byID) >= maxReleased {
		return
	}
	var id hkey
	for _, k := range g.keys {
		if k.kind == keyID {
			id = k.h
			break
		}
	}
	if id == (hkey{}) {
		return
	}
	r := released{at: at, due: g.due, rank: bestRank(g.obs) % 10}
	o := g.obs[0]
	if m.gateways && len(g.obs) == 1 && r.rank > 0 {
		if _, known := m.clockOf(o.first()); !known {
			r.clock, r.ts = string(m.obsKey), o.ts
		}
	}
	m.released.byID[id] = r
	if r.clock != "" {
		m.released.long.push(id, at)
	} else {
		m.released.short.push(id, at)
	}
}

// expireReleased forgets what is kept past its time at event time wm:
// a group after Lateness, an untaught view after the pair window.
func (m *mergeSet) expireReleased(wm time.Time) {
	s := &m.released
	if s.short.head == len(s.short.keys) && s.long.head == len(s.long.keys) {
		return
	}
	s.short.expire(s.byID, wm.Add(-m.maxLag))
	s.long.expire(s.byID, wm.Add(-m.pairWindow))
}

// missed learns from o, a view of an exchange (by id) that was already
// released when o was read at event time now: by how much it missed,
// and, when the released view's clock was untaught and o is a more
// trusted view, that clock. A view of the same kind of observer is not a
// miss (a re-send under the same id).
func (m *mergeSet) missed(id hkey, o *observation, now time.Time) {
	r, ok := m.released.byID[id]
	if !ok {
		return
	}
	rank := observerRank(o.source())
	if rank == r.rank {
		return
	}
	delete(m.released.byID, id)
	m.misses++
	if r.clock != "" {
		if rank < r.rank {
			m.clocks.teach([]byte(r.clock), r.ts.Sub(m.onRefClock(o, o.ts)), now)
		}
		return // its due was on an untaught clock: not a measure of lateness
	}
	if by := now.Sub(r.due); by > 0 {
		m.joinedLate(by, now)
	}
}

// joinedLate notes a view read by event time past the end of its group's
// wait (now): missed, or caught only by the extra wait. Groups then wait
// that much longer, plus a quarter of the merge window, up to Lateness.
func (m *mergeSet) joinedLate(by time.Duration, now time.Time) {
	m.lag = min(max(m.extraWait(now), by+m.window/4), m.maxLag)
	m.lagAt = now
}

// extraWait is how much longer than its own wait a group waits at event
// time now: the last late view's lateness, fading over lagFade.
func (m *mergeSet) extraWait(now time.Time) time.Duration {
	if m.lag <= 0 {
		return 0
	}
	since := now.Sub(m.lagAt)
	if since >= lagFade {
		m.lag = 0
		return 0
	}
	if since <= 0 {
		return m.lag
	}
	return time.Duration(float64(m.lag) * float64(lagFade-since) / float64(lagFade))
}
