package kafkasource

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mcplens/mcplens/pipeline/kafkatest"
)

// newFeed is a generation of n partitions whose buffers hold msgs, as
// their readers would have queued them.
func newFeed(n int, msgs ...kafka.Message) *feed {
	f := &feed{}
	for id := range n {
		f.parts = append(f.parts, &buffer{id: id, ch: make(chan kafka.Message, len(msgs)+1), behind: true})
	}
	for _, m := range msgs {
		f.parts[m.Partition].ch <- m
	}
	return f
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
	f := newFeed(3,
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
	f := newFeed(2, msg(0, 0, 10, 5), msg(1, 0, 1, 5))
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
	f.parts[1].ch <- msg(1, 1, 2, 4)
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
	f.parts[0].ch <- msg(0, 1, 11, 4)
	if b, _ = f.pick(start.Add(time.Second), time.Second); b == nil || b.id != 0 {
		t.Fatalf("stalled partition waited for again: picked %v", b)
	}
	f.parts[0].take()
	f.parts[1].ch <- msg(1, 2, 3, 3)
	if b, _ = f.pick(start.Add(2*time.Second), time.Second); b == nil || b.id != 1 || f.parts[1].waitSince != (time.Time{}) {
		t.Fatalf("the stalled partition sent: picked %v (wait since %v), want partition 1, its wait reset", b, f.parts[1].waitSince)
	}
}

func TestPickDoesNotWaitWithoutCause(t *testing.T) {
	now := time.Now()
	// Caught up: partition 1 said nothing follows its last message.
	f := newFeed(2, msg(0, 0, 10, 5), msg(1, 0, 1, 0))
	f.pick(now, time.Second)
	f.parts[1].take()
	if b, _ := f.pick(now, time.Second); b == nil || b.id != 0 {
		t.Errorf("caught-up partition waited for: picked %v", b)
	}
	// Behind, but its last message is already later than the oldest head:
	// partition 0's message at 10 comes after partition 1's at 15 was out.
	f = newFeed(2, msg(1, 0, 15, 5))
	f.parts[0].behind = false
	f.pick(now, time.Second)
	f.parts[1].take()
	f.parts[0].ch <- msg(0, 0, 10, 5)
	if b, _ := f.pick(now, time.Second); b == nil || b.id != 0 {
		t.Errorf("partition 1 (last at 15) waited for before partition 0's head at 10: picked %v", b)
	}
	// Without timestamps (an old producer) the partition with more after
	// its head goes first.
	f = newFeed(2, msg(0, 0, -1, 3), msg(1, 0, -1, 9))
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

// BenchmarkPick is Fetch's choice per message with every partition's
// buffer full, the case of a consumer catching up: it looks at each
// partition, so it grows with the partitions assigned.
func BenchmarkPick(b *testing.B) {
	for _, parts := range []int{1, 3, 12, 64} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			f := newFeed(parts)
			off := make([]int64, parts)
			refill := func(p int) {
				f.parts[p].ch <- msg(p, off[p], int(off[p])*parts+p, 1000)
				off[p]++
			}
			for p := range parts {
				refill(p)
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
