package pipeline

import "sort"

// offsets tracks, per stream, which consumed positions are still in flight
// (waiting for their other half, or in a batch the sink has not
// acknowledged) and so how far the source may be committed: up to the
// oldest position in flight, or past the newest one seen when none is. It
// is the low watermark that lets a restart re-read what was not yet stored.
//
// Offsets that arrive in ascending order (the usual case) queue in a FIFO
// with their delivery counts beside them; marking one done is a binary
// search and a decrement, and done entries leave the front lazily, each
// once. Offsets that arrive below the queue's tail (a partition delivered
// again from an earlier offset after a rebalance or reconnect) go to a
// small map and a min-heap. So every operation is O(log n) amortised, and
// nothing is scanned or copied however many positions are in flight (no
// hash map either: a delete-heavy map of 200k offsets probed slowly).
//
// An offset consumed while an earlier delivery of it is in flight is
// counted twice and stays in flight until both are done; one consumed
// after it was done is in flight again. Not safe for concurrent use.
type offsets struct {
	streams map[string]*streamOffsets
}

type streamOffsets struct {
	pos      Position // a template for the stream (topic, partition)
	queue    []int64  // ascending offsets from head on
	qcount   []int32  // in-flight deliveries of queue[i]
	head     int
	extra    map[int64]int32 // in-flight deliveries of re-delivered offsets
	heap     offsetHeap      // the offsets of extra, and some done ones
	inflight int             // offsets with a delivery in flight
	next     int64           // one past the newest offset seen
	lastSent int64           // the last commit position handed out
}

// newOffsets returns an empty tracker.
func newOffsets() *offsets { return &offsets{streams: map[string]*streamOffsets{}} }

func (o *offsets) stream(p Position) *streamOffsets {
	s := o.streams[p.Stream]
	if s == nil {
		s = &streamOffsets{pos: p, extra: map[int64]int32{}, next: p.Offset, lastSent: -1}
		o.streams[p.Stream] = s
	}
	return s
}

// find returns the index of off in the live part of the queue.
func (s *streamOffsets) find(off int64) (int, bool) {
	q := s.queue[s.head:]
	lo, hi := 0, len(q)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if q[m] < off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return s.head + lo, lo < len(q) && q[lo] == off
}

// Consumed marks a position as read and in flight.
func (o *offsets) Consumed(p Position) {
	s := o.stream(p)
	off := p.Offset
	if p.Offset+1 > s.next {
		s.next = p.Offset + 1
	}
	if n := len(s.queue); n == s.head || s.queue[n-1] < off {
		s.queue = append(s.queue, off)
		s.qcount = append(s.qcount, 1)
		s.inflight++
		return
	}
	if i, ok := s.find(off); ok {
		if s.qcount[i] == 0 {
			s.inflight++
		}
		s.qcount[i]++
		return
	}
	if s.extra[off] == 0 {
		s.heap.push(off)
		s.inflight++
	}
	s.extra[off]++
}

// Done marks one delivery of each position as durably handled. A position
// not in flight is ignored.
func (o *offsets) Done(ps ...Position) {
	for _, p := range ps {
		s := o.streams[p.Stream]
		if s == nil {
			continue
		}
		if n := s.extra[p.Offset]; n > 0 {
			if n == 1 {
				delete(s.extra, p.Offset) // its heap entry is popped by low
				s.inflight--
			} else {
				s.extra[p.Offset] = n - 1
			}
			continue
		}
		if i, ok := s.find(p.Offset); ok && s.qcount[i] > 0 {
			if s.qcount[i]--; s.qcount[i] == 0 {
				s.inflight--
			}
		}
	}
}

// low drops done offsets off the front of the queue and the heap and
// returns the oldest offset in flight (ok=false when none is).
func (s *streamOffsets) low() (int64, bool) {
	for s.head < len(s.queue) && s.qcount[s.head] == 0 {
		s.head++
	}
	switch {
	case s.head == len(s.queue):
		s.queue, s.qcount, s.head = s.queue[:0], s.qcount[:0], 0
	case s.head > 1024 && s.head > len(s.queue)/2:
		// compact: each element moves at most once per halving
		s.queue = s.queue[:copy(s.queue, s.queue[s.head:])]
		s.qcount = s.qcount[:copy(s.qcount, s.qcount[s.head:])]
		s.head = 0
	}
	for len(s.heap) > 0 && s.extra[s.heap[0]] == 0 {
		s.heap.pop()
	}
	low, ok := int64(0), false
	if s.head < len(s.queue) {
		low, ok = s.queue[s.head], true
	}
	if len(s.heap) > 0 && (!ok || s.heap[0] < low) {
		low, ok = s.heap[0], true
	}
	return low, ok
}

// Next returns one past the newest offset seen on stream (0 if none).
func (o *offsets) Next(stream string) int64 {
	if s := o.streams[stream]; s != nil {
		return s.next
	}
	return 0
}

// Oldest returns the oldest offset of stream still in flight (ok=false
// when none is).
func (o *offsets) Oldest(stream string) (int64, bool) {
	if s := o.streams[stream]; s != nil {
		return s.low()
	}
	return 0, false
}

// Resume says that a stream is handled up to p.Offset (exclusive) by an
// earlier run: Commit may hand that out.
func (o *offsets) Resume(p Position) {
	s := o.stream(p)
	s.next = max(s.next, p.Offset)
}

// InFlight returns how many positions are not yet done.
func (o *offsets) InFlight() int {
	n := 0
	for _, s := range o.streams {
		n += s.inflight
	}
	return n
}

// Commit returns, for every stream whose commit position moved since the
// last call, the position to commit: the oldest offset still in flight, or
// one past the newest seen. Order is by stream name.
func (o *offsets) Commit() []Position {
	var out []Position
	for _, s := range o.streams {
		next := s.next
		if low, ok := s.low(); ok {
			next = low
		}
		if next == s.lastSent {
			continue
		}
		s.lastSent = next
		p := s.pos
		p.Offset = next
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Stream < out[j].Stream })
	return out
}

// Retry forgets that ps were handed out, so the next Commit returns their
// streams again: for a commit the source failed to make.
func (o *offsets) Retry(ps []Position) {
	for _, p := range ps {
		if s := o.streams[p.Stream]; s != nil {
			s.lastSent = -1
		}
	}
}

// offsetHeap is a min-heap of offsets, without container/heap's boxing.
// Offsets mostly arrive ascending, so a push rarely moves an element.
type offsetHeap []int64

func (h *offsetHeap) push(x int64) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		parent := (i - 1) / 2
		if a[parent] <= a[i] {
			break
		}
		a[parent], a[i] = a[i], a[parent]
		i = parent
	}
}

func (h *offsetHeap) pop() {
	a := *h
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		m, l, r := i, 2*i+1, 2*i+2
		if l < n && a[l] < a[m] {
			m = l
		}
		if r < n && a[r] < a[m] {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
}
