package pipeline

import (
	"math/rand/v2"
	"testing"
)

// keyedModel is what keyed must answer, kept the plain way: every entry
// put, in order, the index of the oldest still in the window, and each
// key's newest entry.
type keyedModel struct {
	entries          []keyedEntry[int]
	head, keys, max  int
	newestK, newestA map[hkey]int
}

func (m *keyedModel) newest(k hkey, alt bool) (int, bool) {
	idx := m.newestK
	if alt {
		idx = m.newestA
	}
	if i, ok := idx[k]; ok && i >= m.head {
		return m.entries[i].v, true
	}
	return 0, false
}

// pop advances the head; it reports whether a key went.
func (m *keyedModel) pop() bool {
	m.head++
	if m.newestK[m.entries[m.head-1].key] == m.head-1 {
		m.keys--
		return true
	}
	return false
}

func (m *keyedModel) put(e keyedEntry[int]) {
	if _, ok := m.newest(e.key, false); !ok {
		if m.keys >= m.max {
			for m.head < len(m.entries) && !m.pop() {
			}
		}
		m.keys++
	}
	m.newestK[e.key] = len(m.entries)
	if e.alt != (hkey{}) {
		m.newestA[e.alt] = len(m.entries)
	}
	m.entries = append(m.entries, e)
}

func (m *keyedModel) expire(cut int64) {
	for m.head < len(m.entries) && m.entries[m.head].ts < cut {
		m.pop()
	}
}

// The window answers as the model does through random puts (keys and
// second keys from small sets, so that they repeat and collide), expiry
// and the key bound, with sequence numbers that cross the 2⁴⁰ a slot
// keeps of them, and tables rebuilt many times over.
func TestKeyedMatchesModel(t *testing.T) {
	for _, tc := range []struct {
		name          string
		keys, alts    int
		max           int
		startSeq      uint64
		expireEvery   int
		window, steps int
	}{
		{"few keys", 50, 30, 40, 0, 7, 60, 50_000},
		{"many keys, bound bites", 5_000, 3_000, 700, 0, 50, 4_000, 100_000},
		{"sequence wraps 40 bits", 2_000, 1_000, 1_500, 1<<seqBits - 30_000, 13, 900, 60_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.keys)))
			h := newKeyHasher()
			key := func(n int, prefix string) hkey { return h.of(prefix, string(rune('a'+n%26)), string(rune(n))) }
			w := newKeyed[int](tc.max)
			w.head = tc.startSeq
			m := &keyedModel{max: tc.max, newestK: map[hkey]int{}, newestA: map[hkey]int{}}
			ts := int64(0)
			for step := range tc.steps {
				ts += int64(rng.IntN(3))
				e := keyedEntry[int]{key: key(rng.IntN(tc.keys), "k"), ts: ts, v: step}
				if rng.IntN(4) > 0 {
					e.alt = key(rng.IntN(tc.alts), "a")
				}
				w.put(e.key, e.alt, e.ts, e.v)
				m.put(e)
				if step%tc.expireEvery == 0 {
					cut := ts - int64(tc.window)
					w.expire(cut)
					m.expire(cut)
				}
				if step%97 != 0 {
					continue
				}
				if w.len() != m.keys || w.ring.len() != len(m.entries)-m.head {
					t.Fatalf("step %d: %d keys, ring %d; want %d keys, ring %d", step, w.len(), w.ring.len(), m.keys, len(m.entries)-m.head)
				}
				for range 40 {
					k := key(rng.IntN(tc.keys), "k")
					a := key(rng.IntN(tc.alts), "a")
					got, ok := w.get(k)
					want, wok := m.newest(k, false)
					if ok != wok || (ok && *got != want) {
						t.Fatalf("step %d: get = %v %v, want %d %v", step, got, ok, want, wok)
					}
					got, ok = w.getAlt(a)
					want, wok = m.newest(a, true)
					if ok != wok || (ok && *got != want) {
						t.Fatalf("step %d: getAlt = %v %v, want %d %v", step, got, ok, want, wok)
					}
				}
			}
			// A table never holds more than 3/4 of its slots, removed
			// ones included.
			for _, st := range []*seqTable{&w.idx, &w.alt} {
				if 4*(st.n+st.gone) > 3*len(st.slots) {
					t.Errorf("table: %d live and %d removed of %d slots", st.n, st.gone, len(st.slots))
				}
			}
		})
	}
}

// Slots keep 40 bits of a sequence number: the ones at or after the head
// come back whole, across a carry into the bits the slot does not keep.
func TestSeqOf(t *testing.T) {
	for _, head := range []uint64{0, 5, seqMask - 2, seqMask, 1 << seqBits, 7<<seqBits + 12345} {
		for _, d := range []uint64{0, 1, 2, 3, 1000, seqMask - 1} {
			seq := head + d
			s := fingerprint(hkey{Hi: ^uint64(0)}) | seq&seqMask
			if got := seqOf(s, head); got != seq {
				t.Errorf("head %d, seq %d: got %d", head, seq, got)
			}
		}
	}
	if fingerprint(hkey{})&^seqMask == slotGone&^seqMask || fingerprint(hkey{}) == slotEmpty {
		t.Error("a live slot can look like a marker")
	}
}
