package pipeline

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/mcplens/mcplens/schema"
)

// TestReleasePassesOverStreamsExactly reads production-shaped traffic
// (150 s of event time at 80 calls/s, longer than the pair window, 2% of
// the requests never answered) from 48 partitions by no key, some of them
// pausing for longer than the idle advance, and releases after every line
// twice: with Release's shortcuts (a stream with nothing due passed over,
// the slowest stream kept in a heap) and without them (every stream
// released in full, the slowest found by a scan). Both must emit the same
// groups, of the same views, closed at the same time, in the same order,
// and leave the merge set holding the same besides its groups.
func TestReleasePassesOverStreamsExactly(t *testing.T) {
	g, err := loadgen.New(loadgen.Config{Seed: 21, Calls: 12_000, Rate: 80, NoResponseShare: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	msgs := pausing(linesOf(g), 48)
	fast, fastStalls, fastState := releaseAll(t, msgs, false)
	full, fullStalls, fullState := releaseAll(t, msgs, true)
	if len(fast) < 12_000 {
		t.Fatalf("%d groups emitted for 12,000 calls", len(fast))
	}
	if fastStalls == 0 || fastStalls != fullStalls {
		t.Fatalf("streams stalled at a release: %d with the shortcuts, %d without; want some, and the same", fastStalls, fullStalls)
	}
	if i, ok := firstDiff(fast, full); !ok {
		t.Fatalf("group %d: %s with the shortcuts, %s without (%d and %d groups)", i, at(fast, i), at(full, i), len(fast), len(full))
	}
	if i, ok := firstDiff(fastState, fullState); !ok {
		t.Fatalf("after line %d: released ids, clocks, extra wait and groups waiting %s with the shortcuts, %s without", (i+1)*100, at(fastState, i), at(fullState, i))
	}
	t.Logf("%d groups from %d lines, the same both ways; a stream stalled at %d releases", len(fast), len(msgs), fastStalls)
}

// firstDiff returns the first index where a and b differ, and whether
// they are equal.
func firstDiff(a, b []string) (int, bool) {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i, false
		}
	}
	return min(len(a), len(b)), len(a) == len(b)
}

// at is s[i], or "nothing" past its end.
func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "nothing"
}

// pausing places lines on n partitions at random and reads them in
// rounds, two to four lines of each partition a round, except that every
// fifth partition pauses for a stretch of rounds now and then.
func pausing(lines [][]byte, n int) []Message {
	parts := scatter(lines, n, rand.New(rand.NewPCG(3, 4)))
	next := make([]int, n)
	var msgs []Message
	for round := 0; len(msgs) < len(lines); round++ {
		for p, part := range parts {
			take := 2 + p%3
			if p%5 == 0 && (round/40)%3 == 1 {
				take = 0 // paused: the slowest, and stalled once the idle advance passes
			}
			end := min(next[p]+take, len(part))
			msgs = append(msgs, part[next[p]:end]...)
			next[p] = end
		}
	}
	return msgs
}

// releaseAll decodes msgs into a correlator at the default settings and
// releases after each line, on a wall clock that moves 2 ms a line, with
// the idle advance every 500 lines. It returns each emitted group as text,
// how many releases found a stream stalled (read nothing for the idle
// advance), and every 100 lines what the merge set keeps besides its
// groups: the released ids and observer clocks it remembers, the extra
// wait, and how many groups wait.
func releaseAll(t *testing.T, msgs []Message, exhaustive bool) (groups []string, stalls int, state []string) {
	t.Helper()
	c := newCorrelator(CorrelatorConfig{})
	c.idle = 5 * time.Second
	c.exhaustive = exhaustive
	wall := time.Unix(1_900_000_000, 0)
	c.now = func() time.Time { return wall }
	emit := func(g *group) {
		var ids []string
		for _, o := range g.obs {
			for _, ev := range o.evs {
				ids = append(ids, ev.EventID)
			}
		}
		slices.Sort(ids)
		groups = append(groups, fmt.Sprintf("%v due %d", ids, g.due.UnixNano()))
	}
	d := NewDecoder()
	for i, m := range msgs {
		wall = wall.Add(2 * time.Millisecond)
		ev, err := d.Decode(m.Value, m.Pos)
		if err != nil {
			continue
		}
		c.Add(&ev, m.Pos)
		for _, st := range c.order {
			if !st.maxTS.IsZero() && wall.Sub(st.lastLine) >= c.idle {
				stalls++
				break
			}
		}
		c.Release(false, emit)
		if i%500 == 499 {
			c.AdvanceIdle(c.idle)
			c.Release(false, emit)
		}
		if i%100 == 99 {
			m := &c.merging
			state = append(state, fmt.Sprintf("%d/%d/%v/%d", len(m.released.byID), m.clocks.len(), m.lag, m.n))
		}
	}
	c.Release(true, emit)
	return groups, stalls, state
}

// BenchmarkReleaseStreams is the correlator's cost per line (Add, then
// Release as the engine calls it after every line) with the same traffic
// read from 1 to 96 partitions, each a stream, in turn: with Release's
// shortcuts (fast) and without them (full, every stream released in full
// and the slowest found by a scan, as before 2026-12-07). The shortcuts
// keep the cost from growing with the partitions assigned.
func BenchmarkReleaseStreams(b *testing.B) {
	g, err := loadgen.New(loadgen.Config{Seed: 31, Calls: 30_000})
	if err != nil {
		b.Fatal(err)
	}
	lines := linesOf(g)
	for _, streams := range []int{1, 3, 12, 48, 96} {
		msgs := pausing(lines, streams)
		for _, mode := range []string{"fast", "full"} {
			b.Run(fmt.Sprintf("streams=%d/%s", streams, mode), func(b *testing.B) {
				d := NewDecoder()
				evs := make([]schema.Event, len(msgs))
				for i, m := range msgs {
					evs[i], _ = d.Decode(m.Value, m.Pos)
				}
				b.ResetTimer()
				var n int
				for b.Loop() {
					c := newCorrelator(CorrelatorConfig{})
					c.idle = 5 * time.Second
					c.exhaustive = mode == "full"
					emit := func(*group) {}
					for i := range msgs {
						ev := evs[i] // a copy: the correlator keeps what it is given
						c.Add(&ev, msgs[i].Pos)
						c.Release(false, emit)
					}
					c.Release(true, emit)
					n += len(msgs)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/line")
			})
		}
	}
}
