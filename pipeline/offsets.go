package pipeline

import "sort"

// offsets tracks, per stream, which consumed positions are still in flight
// (waiting for their other half, or in a batch the sink has not
// acknowledged) and so how far the source may be committed: up to the
// oldest position in flight, or past the newest one seen when none is. It
// is the low watermark that lets a restart re-read what was not yet stored.
// Not safe for concurrent use.
type offsets struct {
	streams map[string]*streamOffsets
}

type streamOffsets struct {
	pos      Position // a template for the stream (topic, partition)
	inflight []int64  // ascending offsets not yet done
	done     map[int64]bool
	next     int64 // one past the newest offset seen
	lastSent int64 // the last commit position handed out
}

// newOffsets returns an empty tracker.
func newOffsets() *offsets { return &offsets{streams: map[string]*streamOffsets{}} }

func (o *offsets) stream(p Position) *streamOffsets {
	s := o.streams[p.Stream]
	if s == nil {
		s = &streamOffsets{pos: p, done: map[int64]bool{}, next: p.Offset, lastSent: -1}
		o.streams[p.Stream] = s
	}
	return s
}

// Consumed marks a position as read and in flight. Positions of a stream
// arrive in ascending order.
func (o *offsets) Consumed(p Position) {
	s := o.stream(p)
	s.inflight = append(s.inflight, p.Offset)
	if p.Offset+1 > s.next {
		s.next = p.Offset + 1
	}
}

// Done marks positions as durably handled.
func (o *offsets) Done(ps ...Position) {
	for _, p := range ps {
		s := o.streams[p.Stream]
		if s == nil {
			continue
		}
		s.done[p.Offset] = true
		n := 0
		for n < len(s.inflight) && s.done[s.inflight[n]] {
			delete(s.done, s.inflight[n])
			n++
		}
		if n > 0 {
			s.inflight = append(s.inflight[:0], s.inflight[n:]...)
		}
	}
}

// InFlight returns how many positions are not yet done.
func (o *offsets) InFlight() int {
	n := 0
	for _, s := range o.streams {
		n += len(s.inflight)
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
		if len(s.inflight) > 0 {
			next = s.inflight[0]
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
