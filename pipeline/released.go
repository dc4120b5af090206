package pipeline

import (
	"time"

	"github.com/mcplens/mcplens/schema"
)

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
//   - that its exchange_id is taken. The late view comes out as a record
//     of its own, and under the same id a store would keep only one of
//     the two (it keeps an exchange id once: a replay's copy), often
//     dropping the gateway's: the late view's record takes an id of its
//     own (apartExchangeID).
//
// Only groups with an exchange_id can be matched after release. They are
// kept for the pair window (a view later than that has lost its request
// too), but only a view read within Lateness of the release asks for an
// extra wait: at 1,000 exchanges/s about 60,000 entries of about 80 bytes
// (an untaught view also its clock key), at most maxReleased, the oldest
// going first.

// released is what is kept of one released group, by exchange id. It
// holds no pointer, so the collector does not scan the set's map; times
// are Unix nanoseconds.
type released struct {
	at  int64 // the event time it was released at
	due int64 // when its wait ended
	// A lone view of an untaught observer: its request time on its own
	// clock, whose key is in releasedSet.clocks.
	ts       int64
	rank     int8 // the observerRank of its best view
	untaught bool
}

// releasedSet holds the released groups by exchange id, and their keys in
// release order. Expiry is O(1) amortised.
type releasedSet struct {
	byID   map[hkey]released
	clocks map[hkey]string // an untaught view's clock key (source NUL observer), by id
	queue  releasedQueue
}

func newReleasedSet() releasedSet {
	return releasedSet{byID: map[hkey]released{}, clocks: map[hkey]string{}}
}

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
	at  int64
}

func (q *releasedQueue) push(k hkey, at int64) {
	q.keys = append(q.keys, releasedKey{k, at})
}

// expire forgets the keys released before cut.
func (q *releasedQueue) expire(s *releasedSet, cut int64) {
	for q.head < len(q.keys) && q.keys[q.head].at < cut {
		q.pop(s)
	}
	q.compact()
}

// pop passes the oldest key, forgetting its group unless the key was
// released again since.
func (q *releasedQueue) pop(s *releasedSet) {
	k := q.keys[q.head]
	if r, ok := s.byID[k.key]; ok && r.at == k.at {
		s.forget(k.key, r)
	}
	q.head++
}

// compact drops the passed keys once they are more than half the queue.
func (q *releasedQueue) compact() {
	if q.head > len(q.keys)/2 {
		q.keys, q.head = q.keys[:copy(q.keys, q.keys[q.head:])], 0
	}
}

// makeRoom forgets the oldest groups kept while the set is full: the
// newest are the ones a late view is likeliest to miss.
func (s *releasedSet) makeRoom() {
	q := &s.queue
	for len(s.byID) >= maxReleased && q.head < len(q.keys) {
		q.pop(s)
	}
	q.compact()
}

// lagFade is how long, in event time, an extra wait takes to fade once no
// view joins or misses late any more.
const lagFade = 10 * time.Minute

// remember keeps what a miss of g would need, if g's views carry an
// exchange_id. The merge set released g at event time at.
func (m *mergeSet) remember(g *group, at time.Time) {
	if m.maxLag <= 0 || at.IsZero() {
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
	r := released{at: at.UnixNano(), due: g.due.UnixNano(), rank: int8(bestRank(g.obs) % 10)} //nolint:gosec // G115: below 10
	o := g.obs[0]
	if m.gateways && len(g.obs) == 1 && r.rank > 0 {
		if _, known := m.clockOf(o.first()); !known {
			r.untaught, r.ts = true, o.ts.UnixNano()
			m.released.clocks[id] = string(m.obsKey)
		}
	}
	if old, ok := m.released.byID[id]; ok && old.untaught && !r.untaught {
		delete(m.released.clocks, id)
	}
	m.released.keep(id, r)
}

// keep adds r, released under id, making room first.
func (s *releasedSet) keep(id hkey, r released) {
	s.makeRoom()
	s.byID[id] = r
	s.queue.push(id, r.at)
}

// seedReleased remembers rec, a record a restart was seeded with, as the
// released set remembered its group before the restart: a view of its
// exchange by another kind of observer, read after the restart, missed
// its merge, as it did for an uninterrupted run, and takes an id of its
// own instead of rec's (under which the store would drop it, taking it
// for a replay's copy). Only a record within the pair window of newest,
// the seed's newest, can still be missed; its release is taken as its
// merge window's end.
func (m *mergeSet) seedReleased(rec *schema.Exchange, newest time.Time) {
	if m.maxLag <= 0 || rec.ExchangeID == "" {
		return
	}
	due := later(rec.EndTS, rec.TS).Add(m.window)
	if due.Before(newest.Add(-m.pairWindow)) {
		return
	}
	id := m.h.of("e", baseExchangeID(rec.ExchangeID))
	if _, ok := m.released.byID[id]; ok {
		return
	}
	rank := 2
	for _, s := range rec.Sources {
		rank = min(rank, observerRank(s))
	}
	m.released.keep(id, released{at: due.UnixNano(), due: due.UnixNano(), rank: int8(rank)}) //nolint:gosec // G115: below 10
}

// forget drops what is kept of the group released under id.
func (s *releasedSet) forget(id hkey, r released) {
	delete(s.byID, id)
	if r.untaught {
		delete(s.clocks, id)
	}
}

// expireReleased forgets, at event time wm, the groups released more than
// the pair window before.
func (m *mergeSet) expireReleased(wm time.Time) {
	s := &m.released
	if s.queue.head == len(s.queue.keys) {
		return
	}
	s.queue.expire(s, wm.Add(-m.pairWindow).UnixNano())
}

// missed learns from o, a view of an exchange (by id) that was already
// released when o was read at event time now: by how much it missed,
// and, when the released view's clock was untaught and o is a more
// trusted view, that clock. It says whether o missed: a view of the same
// kind of observer is not a miss (a re-send under the same id).
func (m *mergeSet) missed(id hkey, o *observation, now time.Time) bool {
	r, ok := m.released.byID[id]
	if !ok {
		return false
	}
	rank := int8(observerRank(o.source())) //nolint:gosec // G115: below 10
	if rank == r.rank {
		return false
	}
	clock := m.released.clocks[id]
	m.released.forget(id, r)
	m.misses++
	if r.untaught {
		if rank < r.rank {
			m.clocks.teach([]byte(clock), time.Unix(0, r.ts).Sub(m.onRefClock(o, o.ts)), now)
		}
		return true // its due was on an untaught clock: not a measure of lateness
	}
	if now.UnixNano()-r.at > int64(m.maxLag) {
		return true // no wait up to Lateness would have merged it
	}
	if by := time.Duration(now.UnixNano() - r.due); by > 0 {
		m.joinedLate(by, now)
	}
	return true
}

// joinedLate notes a view read by event time past the end of its group's
// wait (now): missed, or caught only by the extra wait. Groups then wait
// that much longer, plus a quarter of the merge window, up to Lateness.
func (m *mergeSet) joinedLate(by time.Duration, now time.Time) {
	m.lag = min(max(m.extraWait(now), by+m.window/4), m.maxLag)
	m.lagAt = now
}

// lagState is the extra wait learned, as the state keeps it: zero when
// none is (or it faded).
func (m *mergeSet) lagState() (time.Duration, time.Time) {
	if m.lag <= 0 {
		return 0, time.Time{}
	}
	return m.lag, m.lagAt
}

// resumeLag takes back an extra wait a stream's mark kept (lagState),
// unless a newer one is known: the newest of the marks' is the merge
// set's as of the last stored batch.
func (m *mergeSet) resumeLag(lag time.Duration, at time.Time) {
	if lag <= 0 || at.IsZero() || !at.After(m.lagAt) && m.lag > 0 {
		return
	}
	m.lag, m.lagAt = min(lag, m.maxLag), at
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
	return m.fading(since)
}

// extraWaitNS is extraWait at now in Unix nanoseconds, without forgetting
// a lag that has faded (settle does).
func (m *mergeSet) extraWaitNS(now int64) int64 {
	if m.lag <= 0 {
		return 0
	}
	since := time.Duration(now - m.lagAt.UnixNano())
	if since >= lagFade {
		return 0
	}
	return int64(m.fading(since))
}

// fading is the extra wait since the last late view, less than lagFade.
func (m *mergeSet) fading(since time.Duration) time.Duration {
	if since <= 0 {
		return m.lag
	}
	return time.Duration(float64(m.lag) * float64(lagFade-since) / float64(lagFade))
}
