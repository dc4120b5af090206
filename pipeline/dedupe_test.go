package pipeline

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

var dedupeT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestDedupeReplay(t *testing.T) {
	d := newDedupe(DedupeConfig{})
	for i := range 1000 {
		if d.Seen(fmt.Sprint("ev-", i), dedupeT0.Add(time.Duration(i)*time.Millisecond)) {
			t.Fatalf("ev-%d: new id reported as a repeat", i)
		}
	}
	for i := range 1000 { // the same lines replayed, same event times
		if !d.Seen(fmt.Sprint("ev-", i), dedupeT0.Add(time.Duration(i)*time.Millisecond)) {
			t.Fatalf("ev-%d: replay not reported as a repeat", i)
		}
	}
	if d.Len() != 1000 {
		t.Errorf("Len %d, want 1000", d.Len())
	}
}

func TestDedupeEvictByCount(t *testing.T) {
	d := newDedupe(DedupeConfig{MaxIDs: 3000})
	for i := range 5000 {
		d.Seen(fmt.Sprint(i), dedupeT0)
	}
	if d.Len() != 3000 {
		t.Fatalf("Len %d, want 3000", d.Len())
	}
	f := func(id int, want bool) {
		t.Helper()
		if got := d.Seen(fmt.Sprint(id), dedupeT0); got != want {
			t.Errorf("Seen(%d) = %v, want %v", id, got, want)
		}
	}
	f(4999, true) // newest kept
	f(2000, true) // oldest kept
	f(1999, false)
	f(2000, false) // re-inserting 1999 evicted the then-oldest, 2000
}

func TestDedupeEvictByTime(t *testing.T) {
	d := newDedupe(DedupeConfig{Window: time.Minute})
	d.Seen("a", dedupeT0)
	d.Seen("late", dedupeT0.Add(-time.Hour)) // inserted after "a": waits behind it
	d.Seen("b", dedupeT0.Add(30*time.Second))
	if !d.Seen("a", dedupeT0.Add(59*time.Second)) {
		t.Error("a forgotten within the window")
	}
	d.Seen("c", dedupeT0.Add(61*time.Second)) // a falls out, and late with it
	if d.Len() != 2 {
		t.Errorf("Len %d, want 2 (b, c)", d.Len())
	}
	if d.Seen("a", dedupeT0.Add(61*time.Second)) {
		t.Error("a remembered beyond the window")
	}
	if !d.Seen("b", dedupeT0) { // an old time does not move the window back
		t.Error("b forgotten")
	}
}

func TestDedupeRingWraps(t *testing.T) {
	d := newDedupe(DedupeConfig{MaxIDs: 5000, Window: time.Second})
	for i := range 20000 {
		ts := dedupeT0.Add(time.Duration(i) * time.Millisecond)
		if d.Seen(fmt.Sprint(i), ts) {
			t.Fatalf("%d: new id reported as a repeat", i)
		}
		if i >= 3 && !d.Seen(fmt.Sprint(i-3), ts) {
			t.Fatalf("%d: recent id forgotten", i-3)
		}
	}
	if d.Len() > 1001 {
		t.Errorf("Len %d, want ids of the last second only", d.Len())
	}
}

// TestIDSet checks the open-addressing set against a map, with hashes
// crowded around the end of the table so probes wrap and clusters merge.
func TestIDSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var s idSet
	model := map[uint64]bool{}
	for range 200_000 {
		home := uint64(1000+rng.IntN(60)) % 1024
		h := rng.Uint64()<<20 | home | 1<<19 // never 0
		switch rng.IntN(3) {
		case 0, 1:
			if len(model) < 700 && !model[h] {
				s.add(h)
				model[h] = true
			}
		case 2:
			for k := range model { // delete a random member
				s.del(k)
				delete(model, k)
				break
			}
		}
		if s.n != len(model) {
			t.Fatalf("size %d, want %d", s.n, len(model))
		}
	}
	for k := range model {
		if !s.has(k) {
			t.Fatalf("lost %x", k)
		}
	}
	for range 1000 {
		if h := rng.Uint64() | 1<<63; !model[h] && s.has(h) {
			t.Fatalf("phantom %x", h)
		}
	}
}

func BenchmarkDedupeSeen(b *testing.B) {
	ids := make([]string, 1<<16)
	for i := range ids {
		ids[i] = fmt.Sprintf("h:%032x", i*7919)
	}
	d := newDedupe(DedupeConfig{MaxIDs: 1 << 15})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		d.Seen(ids[i&(len(ids)-1)], dedupeT0.Add(time.Duration(i)))
		i++
	}
}

// BenchmarkDedupeMemory reports the heap held per remembered id when full
// at the default MaxIDs.
func BenchmarkDedupeMemory(b *testing.B) {
	const n = defaultDedupeMaxIDs
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("h:%032x", i)
	}
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d := newDedupe(DedupeConfig{})
		for i, id := range ids {
			d.Seen(id, dedupeT0.Add(time.Duration(i)*time.Microsecond))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/id")
		runtime.KeepAlive(d)
	}
}
