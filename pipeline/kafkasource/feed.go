package kafkasource

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mcplens/mcplens/pipeline"
)

// feed is one generation's assignment and its partitions' read-ahead
// buffers.
//
// Choosing the next message costs O(log n) in the n partitions assigned,
// not O(n): the buffers holding a head wait in a heap ordered by it
// (ready); a buffer's channel is polled when its head was just handed out
// (out), and else only once its reader has queued a message since Fetch
// found the buffer idle (noted); and only the empty buffers whose
// partition has more to read are looked at for the align wait (waiting).
// A consumer with hundreds of partitions pays for the one it took from,
// caught up or not.
type feed struct {
	assign *pipeline.Assignment
	parts  []*buffer // by partition ID
	told   bool      // the assignment was handed out

	// Used by Fetch alone.
	ready   readyHeap // the full buffers, oldest head first
	out     *buffer   // the buffer pick returned last, taken since; still in ready
	waiting []*buffer // empty buffers that may be behind (buffer.inWaiting)
	polls   []*buffer // the noted buffers being polled (a reused list)

	// noted are buffers whose channel became non-empty, from the readers.
	mu     sync.Mutex
	noted  []*buffer
	nnoted atomic.Int32
}

// buffer is one partition's messages read ahead, and what Fetch knows of
// the partition. Only its channel, startLag and the feed's noted list are
// shared with the partition's reader.
type buffer struct {
	id        int
	ch        chan kafka.Message
	startLag  atomic.Int64  // messages from the assigned offset on, as the reader found at its start; -1 unknown
	started   bool          // a message was handed out
	head      kafka.Message // the next message to hand out, if full
	full      bool
	behind    bool      // more messages are in the partition: wait for them
	last      time.Time // timestamp of the last message handed out
	waitSince time.Time // when Fetch began waiting for it; zero if not
	index     int       // in feed.ready; -1 if not there
	inWaiting bool      // in feed.waiting
	// watched is false only while the buffer is idle (no head, nothing
	// queued when last polled): the reader's next message notes it.
	watched atomic.Bool
}

// newFeed returns the feed of parts, every buffer to be polled once and,
// being behind until its reader knows better, waited for.
func newFeed(assign *pipeline.Assignment, parts []*buffer) *feed {
	f := &feed{assign: assign, parts: parts}
	for _, b := range parts {
		b.index = -1
		b.watched.Store(true)
		f.note(b)
	}
	return f
}

// put queues m on b for Fetch, as b's reader does, and notes b if Fetch
// found it idle since: pick polls only the channels that may hold
// something. False if ctx ended first.
func (f *feed) put(ctx context.Context, b *buffer, m kafka.Message) bool {
	select {
	case b.ch <- m: // room: the common case, without a select's cost
	default:
		select {
		case b.ch <- m:
		case <-ctx.Done():
			return false
		}
	}
	if b.watched.CompareAndSwap(false, true) {
		f.note(b)
	}
	return true
}

func (f *feed) note(b *buffer) {
	f.mu.Lock()
	f.noted = append(f.noted, b)
	f.nnoted.Add(1)
	f.mu.Unlock()
}

// poll moves b's next message, if any, to its head, and files b: in the
// heap if it has a head, else among the waiting if it may be behind.
func (f *feed) poll(b *buffer) {
	b.fillOrIdle()
	switch {
	case b.full:
		if b.index < 0 {
			heap.Push(&f.ready, b)
		}
	case b.behind && !b.inWaiting:
		b.inWaiting = true
		f.waiting = append(f.waiting, b)
	}
}

// pick returns the buffer whose head is to be handed out now, which the
// caller then takes, or nil and how long to wait at most before asking
// again (0: until a buffer fills).
func (f *feed) pick(now time.Time, alignWait time.Duration) (*buffer, time.Duration) {
	if b := f.out; b != nil {
		// Still at the top of the heap, with the head taken: its next
		// message, if there, takes the head's place (one sift down)
		// instead of a pop and a push.
		f.out = nil
		if b.fillOrIdle() {
			heap.Fix(&f.ready, b.index)
		} else {
			heap.Remove(&f.ready, b.index)
			f.poll(b)
		}
	}
	if f.nnoted.Load() > 0 {
		f.mu.Lock()
		f.polls, f.noted = f.noted, f.polls[:0]
		f.nnoted.Store(0)
		f.mu.Unlock()
		for _, b := range f.polls {
			f.poll(b)
		}
		clear(f.polls) // no buffer of an old generation is kept from the collector
	}
	if len(f.ready) == 0 {
		f.settleWaiting()
		return nil, 0
	}
	best := f.ready[0]
	// Wait for an empty partition that is behind and whose next message may
	// be older than best's, until it has been waited for alignWait.
	var wait time.Duration
	for _, b := range f.settleWaiting() {
		wait = b.waitFor(best, now, alignWait, wait)
	}
	if wait > 0 {
		return nil, wait
	}
	f.out = best
	return best, 0
}

// waitFor returns wait, or less if the empty partition b, behind, is to
// be waited for before best's head is handed out: its next message may be
// older than that head, and it has been waited for less than alignWait.
func (b *buffer) waitFor(best *buffer, now time.Time, alignWait, wait time.Duration) time.Duration {
	if !b.last.IsZero() && b.last.After(best.head.Time) {
		return wait
	}
	if b.waitSince.IsZero() {
		b.waitSince = now
	}
	if left := alignWait - now.Sub(b.waitSince); left > 0 && (wait == 0 || left < wait) {
		return left
	}
	return wait
}

// settleWaiting drops from the waiting list the buffers that filled or are
// no longer behind, and returns what is left.
func (f *feed) settleWaiting() []*buffer {
	w := f.waiting[:0]
	for _, b := range f.waiting {
		if !b.started && !b.full && b.startLag.Load() == 0 {
			b.behind = false // nothing was there to read at the start
		}
		if b.full || !b.behind {
			b.inWaiting = false
			continue
		}
		w = append(w, b)
	}
	clear(f.waiting[len(w):])
	f.waiting = w
	return w
}

// fillOrIdle is fill, and when nothing is queued, marks b idle, so that
// its reader notes it with its next message. It polls again after the
// mark: a message queued before it, which the reader did not note, is
// taken now.
func (b *buffer) fillOrIdle() bool {
	if b.fill() {
		return true
	}
	b.watched.Store(false)
	return b.fill()
}

// fill moves the next message buffered, if any and if there is no head,
// to the head, and says whether there is one now.
func (b *buffer) fill() bool {
	if !b.full {
		select {
		case b.head = <-b.ch:
			b.full, b.waitSince = true, time.Time{}
		default:
		}
	}
	return b.full
}

// before orders heads by timestamp (a message without one, from an old
// producer, ranks as the oldest), then the partition with more messages
// after it, then the lower partition.
func (b *buffer) before(o *buffer) bool {
	if t, u := b.head.Time, o.head.Time; !t.Equal(u) {
		return t.Before(u)
	}
	if l, k := lagAfter(b.head), lagAfter(o.head); l != k {
		return l > k
	}
	return b.id < o.id
}

// take hands out the head and remembers whether the partition has more.
func (b *buffer) take() kafka.Message {
	m := b.head
	b.head, b.full, b.started = kafka.Message{}, false, true
	b.behind = lagAfter(m) > 0
	if !m.Time.IsZero() {
		b.last = m.Time
	}
	return m
}

// lagAfter is how many messages the partition held after m when m was
// fetched.
func lagAfter(m kafka.Message) int64 { return max(0, m.HighWaterMark-m.Offset-1) }

// readyHeap is container/heap's interface over the full buffers.
type readyHeap []*buffer

func (h readyHeap) Len() int           { return len(h) }
func (h readyHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h readyHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *readyHeap) Push(x any) {
	b := x.(*buffer)
	b.index = len(*h)
	*h = append(*h, b)
}
func (h *readyHeap) Pop() any {
	old := *h
	b := old[len(old)-1]
	old[len(old)-1] = nil
	b.index = -1
	*h = old[:len(old)-1]
	return b
}
