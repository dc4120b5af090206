package kafkasource

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mcplens/mcplens/pipeline/kafkatest"
)

// testFeed is a generation of n partitions whose buffers hold msgs, as
// their readers would have queued them.
func testFeed(n int, msgs ...kafka.Message) *feed {
	var parts []*buffer
	for id := range n {
		parts = append(parts, &buffer{id: id, ch: make(chan kafka.Message, len(msgs)+2), behind: true})
	}
	f := newFeed(nil, parts)
	for _, m := range msgs {
		f.send(m)
	}
	return f
}

// send queues m on its partition's buffer as the partition's reader does.
func (f *feed) send(m kafka.Message) {
	if !f.put(context.Background(), f.parts[m.Partition], m) {
		panic("put without a context that ends")
	}
}

// msg is message off of partition p at second sec, with lag messages after it.
func msg(p int, off int64, sec int, lag int64) kafka.Message {
	var ts time.Time
	if sec >= 0 {
		ts = time.Unix(int64(1_800_000_000+sec), 0)
	}
	return kafka.Message{Partition: p, Offset: off, Time: ts, HighWaterMark: off + 1 + lag}
}

func TestPickOldestFirst(t *testing.T) {
	// Each partition read ahead in a different order of time; none is
	// behind once its last message is read (lag 0).
	f := testFeed(3,
		msg(0, 0, 1, 2), msg(0, 1, 5, 1), msg(0, 2, 9, 0),
		msg(1, 0, 2, 2), msg(1, 1, 3, 1), msg(1, 2, 8, 0),
		msg(2, 0, 4, 2), msg(2, 1, 6, 1), msg(2, 2, 7, 0),
	)
	now := time.Now()
	var got []int64
	for range 9 {
		b, wait := f.pick(now, time.Second)
		if b == nil {
			t.Fatalf("after %v: nothing picked (wait %v)", got, wait)
		}
		got = append(got, b.take().Time.Unix()-1_800_000_000)
	}
	if want := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Errorf("handed out seconds %v, want %v", got, want)
	}
	if b, wait := f.pick(now, time.Second); b != nil || wait != 0 {
		t.Errorf("all caught up and empty: picked %v, wait %v; want nothing and no timer", b, wait)
	}
}

func TestPickWaitsForAPartitionBehind(t *testing.T) {
	f := testFeed(2, msg(0, 0, 10, 5), msg(1, 0, 1, 5))
	now := time.Now()
	if b, _ := f.pick(now, time.Second); b == nil || b.id != 1 {
		t.Fatalf("picked %v, want partition 1 (second 1)", b)
	}
	f.parts[1].take()
	// Partition 1 is empty but has 5 more, its last at second 1, before
	// partition 0's head at 10: wait for it, for at most a second.
	b, wait := f.pick(now, time.Second)
	if b != nil || wait != time.Second {
		t.Fatalf("picked %v, wait %v; want to wait 1s for partition 1", b, wait)
	}
	if b, wait = f.pick(now.Add(600*time.Millisecond), time.Second); b != nil || wait != 400*time.Millisecond {
		t.Fatalf("0.6s later: picked %v, wait %v; want 400ms more", b, wait)
	}
	// Its next message arrives in time, and is older: it goes first.
	f.send(msg(1, 1, 2, 4))
	if b, _ = f.pick(now.Add(700*time.Millisecond), time.Second); b == nil || b.id != 1 {
		t.Fatalf("picked %v, want partition 1 (second 2)", b)
	}
	f.parts[1].take()
	// It stalls past the wait: partition 0 goes on, and the stalled one is
	// not waited for again until it sends.
	start := now.Add(time.Second)
	if b, _ = f.pick(start, time.Second); b != nil {
		t.Fatalf("picked %v, want to wait", b)
	}
	if b, _ = f.pick(start.Add(time.Second), time.Second); b == nil || b.id != 0 {
		t.Fatalf("after the wait: picked %v, want partition 0", b)
	}
	f.parts[0].take()
	f.send(msg(0, 1, 11, 4))
	if b, _ = f.pick(start.Add(time.Second), time.Second); b == nil || b.id != 0 {
		t.Fatalf("stalled partition waited for again: picked %v", b)
	}
	f.parts[0].take()
	f.send(msg(1, 2, 3, 3))
	if b, _ = f.pick(start.Add(2*time.Second), time.Second); b == nil || b.id != 1 || f.parts[1].waitSince != (time.Time{}) {
		t.Fatalf("the stalled partition sent: picked %v (wait since %v), want partition 1, its wait reset", b, f.parts[1].waitSince)
	}
}

func TestPickDoesNotWaitWithoutCause(t *testing.T) {
	now := time.Now()
	// Caught up: partition 1 said nothing follows its last message.
	f := testFeed(2, msg(0, 0, 10, 5), msg(1, 0, 1, 0))
	f.pick(now, time.Second)
	f.parts[1].take()
	if b, _ := f.pick(now, time.Second); b == nil || b.id != 0 {
		t.Errorf("caught-up partition waited for: picked %v", b)
	}
	// Behind, but its last message is already later than the oldest head:
	// partition 0's message at 10 comes after partition 1's at 15 was out.
	f = testFeed(2, msg(1, 0, 15, 5))
	f.parts[0].behind = false
	f.pick(now, time.Second)
	f.parts[1].take()
	f.send(msg(0, 0, 10, 5))
	if b, _ := f.pick(now, time.Second); b == nil || b.id != 0 {
		t.Errorf("partition 1 (last at 15) waited for before partition 0's head at 10: picked %v", b)
	}
	// Without timestamps (an old producer) the partition with more after
	// its head goes first.
	f = testFeed(2, msg(0, 0, -1, 3), msg(1, 0, -1, 9))
	if b, _ := f.pick(now, time.Second); b == nil || b.id != 1 {
		t.Errorf("no timestamps: picked %v, want the partition with more lag", b)
	}
}

// TestFetchInTimeOrderAcrossPartitions writes three partitions whose
// records interleave in time, one partition after another, and reads them
// with small fetches: each partition's reader races the others, and
// Fetch must still hand the records out in time order.
func TestFetchInTimeOrderAcrossPartitions(t *testing.T) {
	const parts, per = 3, 600
	f := newFixture(t, parts)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []kafkatest.Record
	for p := range parts {
		for i := range per {
			n := i*parts + (p+i)%parts // a different partition leads each round
			recs = append(recs, kafkatest.Record{Partition: p, Time: base.Add(time.Duration(n) * time.Millisecond), Value: fmt.Appendf(nil, "%d", n)})
		}
	}
	kafkatest.ProduceRecords(t, f.brokers, f.topic, recs...)

	s := f.open(t, "max_bytes=2048", "queue=60", "align_wait=1h")
	prev := -1
	for i, m := range fetchN(t, s, parts*per) {
		var n int
		if _, err := fmt.Sscanf(string(m.Value), "%d", &n); err != nil {
			t.Fatal(err)
		}
		if n < prev {
			t.Fatalf("message %d: %d (partition %d) after %d: not in time order", i, n, m.Pos.Partition, prev)
		}
		prev = n
	}
}

// TestFetchDoesNotWaitWhenLagFailsAtFirst: the empty partitions' lag
// cannot be read at first (as when a broker is slow or a leader moves);
// it is read again, so with an hour's align wait a message on the one
// partition that has one is still handed out within seconds. Read once, a
// failed lag had Fetch wait the hour for the empty partitions.
func TestFetchDoesNotWaitWhenLagFailsAtFirst(t *testing.T) {
	f := newFixture(t, 3)
	kafkatest.ProduceRecords(t, f.brokers, f.topic, kafkatest.Record{Partition: 1, Value: []byte("first")})
	var mu sync.Mutex
	failed := map[int]int{}
	orig := readLag
	t.Cleanup(func() { readLag = orig })
	readLag = func(ctx context.Context, r *kafka.Reader) (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		if p := r.Config().Partition; failed[p] < 2 {
			failed[p]++
			return 0, fmt.Errorf("partition %d: leader not available (injected)", p)
		}
		return orig(ctx, r)
	}
	s := f.open(t, "align_wait=1h")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for {
		m, err := s.Fetch(ctx)
		if err != nil {
			t.Fatalf("fetch: %v (waited for an empty partition whose lag failed?)", err)
		}
		if m.Assignment != nil {
			continue
		}
		if string(m.Value) != "first" {
			t.Fatalf("got %q", m.Value)
		}
		break
	}
	mu.Lock()
	defer mu.Unlock()
	if failed[0] != 2 || failed[2] != 2 {
		t.Fatalf("injected failures %v: the empty partitions' lag was not asked again", failed)
	}
}

// TestFetchDoesNotWaitForIdlePartitions: with an hour's align wait, a
// message on one partition is handed out at once when the others have
// nothing to read, at the start and after.
func TestFetchDoesNotWaitForIdlePartitions(t *testing.T) {
	f := newFixture(t, 3)
	kafkatest.ProduceRecords(t, f.brokers, f.topic, kafkatest.Record{Partition: 1, Value: []byte("first")})
	s := f.open(t, "align_wait=1h")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, want := range []string{"first", "second"} {
		if want == "second" {
			kafkatest.ProduceRecords(t, f.brokers, f.topic, kafkatest.Record{Partition: 2, Value: []byte(want)})
		}
		for {
			m, err := s.Fetch(ctx)
			if err != nil {
				t.Fatalf("fetch %q: %v (waited for an idle partition?)", want, err)
			}
			if m.Assignment != nil {
				continue
			}
			if string(m.Value) != want {
				t.Fatalf("got %q, want %q", m.Value, want)
			}
			break
		}
	}
}

// BenchmarkPick is Fetch's choice per message, as a consumer catching up
// makes it: every partition has a few messages read ahead, and its reader
// queues one more whenever one is taken. It picks from a heap of the
// partitions' heads, so the cost grows with the log of the partitions
// assigned, not with their number.
func BenchmarkPick(b *testing.B) {
	const ahead = 4
	for _, parts := range []int{1, 3, 12, 64, 256} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			var bufs []*buffer
			for id := range parts {
				bufs = append(bufs, &buffer{id: id, ch: make(chan kafka.Message, ahead), behind: true})
			}
			f := newFeed(nil, bufs)
			off := make([]int64, parts)
			refill := func(p int) {
				f.send(msg(p, off[p], int(off[p])*parts+p, 1000))
				off[p]++
			}
			for p := range parts {
				for range ahead - 1 {
					refill(p)
				}
			}
			now := time.Now()
			for b.Loop() {
				bf, _ := f.pick(now, time.Second)
				bf.take()
				refill(bf.id)
			}
		})
	}
}

// TestPickMatchesFullScan feeds random traffic to many partitions and
// checks every choice against the straightforward pick that looks at every
// partition each time (scanPick, the algorithm before the heap): the same
// buffer, the same wait, step by step, with partitions that start behind or
// not, lag that comes and goes, timestamps missing or tied, and messages
// that arrive between picks.
func TestPickMatchesFullScan(t *testing.T) {
	for seed := range int64(40) {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		parts := 1 + rng.IntN(40)
		alignWait := time.Duration(1+rng.IntN(3)) * time.Second
		mk := func() ([]*buffer, *feed) {
			var bufs []*buffer
			for id := range parts {
				b := &buffer{id: id, ch: make(chan kafka.Message, 1000), behind: true}
				b.startLag.Store(-1)
				bufs = append(bufs, b)
			}
			return bufs, newFeed(nil, bufs)
		}
		ref, _ := mk()
		_, f := mk()
		now := time.Unix(1_800_000_000, 0)
		off := make([]int64, parts)
		sec := make([]int, parts)
		// A partition in five gets nothing: a reader that finds nothing to
		// read at the start says so, and it is not waited for then.
		silent := func(p int) bool { return p%5 == 4 }
		var steps, picked int
		for steps = 0; steps < 3000; steps++ {
			// Messages arrive on a few partitions, or none.
			for range rng.IntN(4) {
				p := rng.IntN(parts)
				if silent(p) {
					continue
				}
				sec[p] += rng.IntN(3) // ties across partitions are common
				ts := sec[p]
				if rng.IntN(50) == 0 {
					ts = -1 // an old producer's message without a timestamp
				}
				m := msg(p, off[p], ts, int64(rng.IntN(3)))
				off[p]++
				ref[p].ch <- m
				f.send(m)
			}
			if steps < 8 { // readers learn their start lag, some within the align wait
				p, lag := rng.IntN(parts), int64(rng.IntN(2))
				if silent(p) {
					lag = 0
				}
				ref[p].startLag.Store(lag)
				f.parts[p].startLag.Store(lag)
			}
			now = now.Add(time.Duration(rng.IntN(300)) * time.Millisecond)
			want, wantWait := scanPick(ref, now, alignWait)
			got, gotWait := f.pick(now, alignWait)
			if (want == nil) != (got == nil) || wantWait != gotWait || (want != nil && want.id != got.id) {
				t.Fatalf("seed %d, %d partitions, step %d: picked %v (wait %v), want %v (wait %v)", seed, parts, steps, idOf(got), gotWait, idOf(want), wantWait)
			}
			if want != nil {
				if w, g := want.take(), got.take(); w.Partition != g.Partition || w.Offset != g.Offset {
					t.Fatalf("seed %d, step %d: took %+v, want %+v", seed, steps, g, w)
				}
				picked++
			}
		}
		if picked < steps/2 {
			t.Fatalf("seed %d: only %d of %d steps picked a message: the traffic tests too little", seed, picked, steps)
		}
	}
}

func idOf(b *buffer) any {
	if b == nil {
		return nil
	}
	return b.id
}

// scanPick is pick as it was before the heap: every partition polled and
// compared on every call. The test's reference.
func scanPick(parts []*buffer, now time.Time, alignWait time.Duration) (*buffer, time.Duration) {
	var best *buffer
	for _, b := range parts {
		b.fill()
		if !b.started && !b.full && b.startLag.Load() == 0 {
			b.behind = false
		}
		if b.full && (best == nil || b.before(best)) {
			best = b
		}
	}
	if best == nil {
		return nil, 0
	}
	var wait time.Duration
	for _, b := range parts {
		if !b.full && b.behind {
			wait = b.waitFor(best, now, alignWait, wait)
		}
	}
	if wait > 0 {
		return nil, wait
	}
	return best, 0
}

// TestPickWithConcurrentReaders runs a reader goroutine per partition
// that queues its messages as Source.read does (put, then a wake-up) while
// one consumer picks and takes as Fetch does, waiting for a wake-up when
// nothing is picked. Every message must come out once, each partition's in
// offset order: a lost notice would leave a message queued and the
// consumer waiting for ever.
func TestPickWithConcurrentReaders(t *testing.T) {
	const parts, per = 64, 500
	var bufs []*buffer
	for id := range parts {
		b := &buffer{id: id, ch: make(chan kafka.Message, 1+id%4), behind: true}
		b.startLag.Store(-1)
		bufs = append(bufs, b)
	}
	f := newFeed(nil, bufs)
	wake := make(chan struct{}, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for p := range parts {
		go func() {
			f.parts[p].startLag.Store(per)
			for off := range int64(per) {
				// Timestamps interleave across partitions; the last
				// message of each says nothing follows it.
				m := msg(p, off, int(off)*parts+(p*7)%parts, int64(per)-off-1)
				if !f.put(ctx, f.parts[p], m) {
					return
				}
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		}()
	}
	next := make([]int64, parts)
	for got := 0; got < parts*per; {
		b, wait := f.pick(time.Now(), 0)
		if b == nil {
			if wait != 0 {
				t.Fatalf("no align wait set, yet asked to wait %v", wait)
			}
			select {
			case <-wake:
			case <-ctx.Done():
				t.Fatalf("%d of %d messages out, then nothing picked for a minute with messages still to come: a notice was lost", got, parts*per)
			}
			continue
		}
		m := b.take()
		if m.Offset != next[m.Partition] {
			t.Fatalf("partition %d: offset %d out after %d", m.Partition, m.Offset, next[m.Partition]-1)
		}
		next[m.Partition]++
		got++
	}
}
