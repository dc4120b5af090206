package pipeline

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/mcplens/mcplens/schema"
)

var clockT0 = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

func clockKey(i int) []byte { return fmt.Appendf(nil, "client\x00host-%06d", i) }

// TestClocksTaughtEverySecondStaySmall: a clock taught at every merge for
// three idle periods is one entry, and its ring a few.
func TestClocksTaughtEverySecondStaySmall(t *testing.T) {
	c := newClocks()
	key := clockKey(1)
	for s := range int(3 * clockIdle / time.Second) {
		now := clockT0.Add(time.Duration(s) * time.Second)
		c.teach(key, 2*time.Second, now)
		c.expire(now)
	}
	if c.len() != 1 || c.ring.len() > 9 {
		t.Errorf("%d clocks, %d ring entries; want 1 and at most 9", c.len(), c.ring.len())
	}
	if k, ok := c.get(key); !ok || k.off != 2*time.Second || k.n != int(3*clockIdle/time.Second) {
		t.Errorf("clock %+v (known %v), want 2s off after every merge", k, ok)
	}
}

func TestClocksForgetIdleObservers(t *testing.T) {
	c := newClocks()
	gone, stays := clockKey(1), clockKey(2)
	c.teach(gone, time.Second, clockT0)
	for m := 0; m <= 90; m++ {
		now := clockT0.Add(time.Duration(m) * time.Minute)
		c.teach(stays, 3*time.Second, now)
		c.expire(now)
		_, ok := c.get(gone)
		if want := time.Duration(m)*time.Minute <= clockIdle; ok != want {
			t.Fatalf("at %d min: idle clock known %v, want %v", m, ok, want)
		}
	}
	if _, ok := c.get(stays); !ok || c.len() != 1 {
		t.Errorf("the clock taught every minute was forgotten (%d clocks)", c.len())
	}
	// A forgotten clock is learned again from its next merge.
	c.teach(gone, 4*time.Second, clockT0.Add(2*time.Hour))
	if k, ok := c.get(gone); !ok || k.off != 4*time.Second || k.n != 1 {
		t.Errorf("relearned clock %+v (known %v), want 4s off from one merge", k, ok)
	}
}

// TestClocksCapDropsLeastRecentlyTaught fills the cap, teaches the first
// clock again later, and adds one more: the oldest untaught one goes.
func TestClocksCapDropsLeastRecentlyTaught(t *testing.T) {
	c := newClocks()
	for i := range maxClocks {
		c.teach(clockKey(i), time.Second, clockT0)
	}
	later := clockT0.Add(clockIdle / 4)
	c.teach(clockKey(0), time.Second, later)
	c.teach(clockKey(maxClocks), time.Second, later)
	if c.len() != maxClocks {
		t.Fatalf("%d clocks, want the cap %d", c.len(), maxClocks)
	}
	for i, want := range map[int]bool{0: true, 1: false, 2: true, maxClocks: true} {
		if _, ok := c.get(clockKey(i)); ok != want {
			t.Errorf("clock %d known %v, want %v", i, ok, want)
		}
	}
}

// BenchmarkClockMemory reports the heap held per observer clock at the
// cap.
func BenchmarkClockMemory(b *testing.B) {
	keys := make([][]byte, maxClocks)
	for i := range keys {
		keys[i] = clockKey(i)
	}
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := newClocks()
		for i, k := range keys {
			c.teach(k, time.Second, clockT0.Add(time.Duration(i)*time.Millisecond))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/maxClocks, "B/clock")
		runtime.KeepAlive(&c)
	}
}

// TestSeedTeachesClocks: the clocks a stored record measured are learned
// again from it, as its merge taught them (so that a client further off
// than the merge window merges again after a restart: the kill harness,
// TestKillsWithClocksFurtherOff); entries a hand-edited store may hold
// (no source, an offset missing or not a number) are skipped.
func TestSeedTeachesClocks(t *testing.T) {
	m := newMergeSet(2 * time.Second)
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	for i, off := range []float64{-2500, -2510, -2490} {
		m.seedClocks(&schema.Exchange{TS: at.Add(time.Duration(i) * time.Second),
			MergedObservers: []string{"client/cli-1", "cli-2", "client/cli-3", "client/cli-4"},
			MergedOffsetsMS: []float64{off, 100, math.NaN()}})
	}
	c, ok := m.clockOf(&schema.Event{Source: schema.SourceClient, Observer: "cli-1"})
	if !ok || c.n != 3 || c.off < -2510*time.Millisecond || c.off > -2490*time.Millisecond {
		t.Errorf("cli-1's clock: %+v (known %v), want about -2.5 s off from three merges", c, ok)
	}
	for _, o := range []string{"cli-2", "cli-3", "cli-4"} {
		if c, ok := m.clockOf(&schema.Event{Source: schema.SourceClient, Observer: o}); ok {
			t.Errorf("%s: learned %+v from a malformed entry", o, c)
		}
	}
	if w := m.tolerance(&observation{req: &schema.Event{Source: schema.SourceClient, Observer: "cli-1"}}); w >= 2*time.Second {
		t.Errorf("cli-1's tolerance %s: still the merge window after three merges", w)
	}
}
