package pipeline

import (
	"math/rand/v2"
	"testing"
)

func commitOf(t *testing.T, o *offsets, stream string) int64 {
	t.Helper()
	o.Retry([]Position{{Stream: stream}})
	for _, p := range o.Commit() {
		if p.Stream == stream {
			return p.Offset
		}
	}
	t.Fatalf("no commit position for %s", stream)
	return 0
}

func TestOffsetsLowWatermark(t *testing.T) {
	o := newOffsets()
	at := func(off int64) Position { return Position{Stream: "t/0", Topic: "t", Offset: off} }
	for i := range int64(10) {
		o.Consumed(at(i))
	}
	o.Done(at(0), at(1), at(3))
	if got := commitOf(t, o, "t/0"); got != 2 {
		t.Fatalf("commit %d, want 2 (offset 2 in flight)", got)
	}
	o.Done(at(2))
	if got := commitOf(t, o, "t/0"); got != 4 {
		t.Fatalf("commit %d, want 4", got)
	}
	for i := range int64(10) {
		o.Done(at(i))
	}
	if got := commitOf(t, o, "t/0"); got != 10 || o.InFlight() != 0 {
		t.Fatalf("commit %d with %d in flight, want 10 and 0", got, o.InFlight())
	}
	if ps := o.Commit(); len(ps) != 0 {
		t.Errorf("an unchanged position is handed out again: %v", ps)
	}
}

// After a rebalance the partition is delivered again from its committed
// offset: a re-delivered offset whose first delivery is still in flight
// must not release it when the duplicate is done, and offsets below the
// newest seen are tracked again.
func TestOffsetsRedelivery(t *testing.T) {
	o := newOffsets()
	at := func(off int64) Position { return Position{Stream: "t/3", Topic: "t", Partition: 3, Offset: off} }
	for i := int64(100); i < 110; i++ {
		o.Consumed(at(i))
	}
	o.Done(at(100), at(101), at(103), at(104), at(105), at(106), at(107), at(108), at(109))
	// 102 waits for its other half; the group rebalances and the partition
	// comes back from the committed offset 102.
	if got := commitOf(t, o, "t/3"); got != 102 {
		t.Fatalf("commit %d, want 102", got)
	}
	for i := int64(102); i < 112; i++ {
		o.Consumed(at(i))
	}
	// The re-delivered copies are dropped as duplicates (done at once);
	// the first delivery of 102 still waits.
	for i := int64(102); i < 110; i++ {
		o.Done(at(i))
	}
	if got := commitOf(t, o, "t/3"); got != 102 {
		t.Fatalf("commit %d after the duplicates were done, want 102: the first delivery still waits", got)
	}
	o.Done(at(102))
	if got := commitOf(t, o, "t/3"); got != 110 {
		t.Fatalf("commit %d, want 110 (110 and 111 in flight)", got)
	}
	o.Done(at(110), at(111))
	if got := commitOf(t, o, "t/3"); got != 112 || o.InFlight() != 0 {
		t.Fatalf("commit %d with %d in flight, want 112 and 0", got, o.InFlight())
	}
}

// A random order of deliveries, re-deliveries and completions always
// commits exactly the oldest offset with a delivery not yet done.
func TestOffsetsAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	o := newOffsets()
	model := map[int64]int{}
	at := func(off int64) Position { return Position{Stream: "m", Offset: off} }
	o.Consumed(at(0))
	model[0]++
	next := int64(1)
	for step := range 20_000 {
		switch r := rng.IntN(10); {
		case r < 5: // the next offset
			o.Consumed(at(next))
			model[next]++
			next++
		case r < 6 && next > 0: // a re-delivery of a recent offset
			off := max(0, next-1-int64(rng.IntN(50)))
			o.Consumed(at(off))
			model[off]++
		default: // one in-flight delivery is done
			for off := range model {
				o.Done(at(off))
				if model[off]--; model[off] == 0 {
					delete(model, off)
				}
				break
			}
		}
		want := next
		for off := range model {
			want = min(want, off)
		}
		if got := commitOf(t, o, "m"); got != want {
			t.Fatalf("step %d: commit %d, want %d", step, got, want)
		}
	}
}

// BenchmarkOffsetsDone marks positions done with 200,000 in flight in
// steady state: each op consumes one new offset and finishes one old one,
// and commits every 1,000 ops. The cost must not grow with what is in
// flight (run with -benchtime at several sizes to see it flat).
func BenchmarkOffsetsDone(b *testing.B) {
	const inflight = 200_000
	o := newOffsets()
	at := func(off int64) Position { return Position{Stream: "t/0", Topic: "t", Offset: off} }
	for i := range int64(inflight) {
		o.Consumed(at(i))
	}
	b.ReportAllocs()
	next, oldest := int64(inflight), int64(0)
	for b.Loop() {
		o.Consumed(at(next))
		next++
		// out of order: finish the second oldest, then the oldest
		if oldest%2 == 0 {
			o.Done(at(oldest + 1))
		} else {
			o.Done(at(oldest - 1))
		}
		oldest++
		if oldest%1000 == 0 {
			o.Commit()
		}
	}
	if o.InFlight() < inflight-2 {
		b.Fatalf("%d in flight", o.InFlight())
	}
}
