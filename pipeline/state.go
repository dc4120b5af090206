package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/mcplens/mcplens/schema"
)

// The engine's state, kept in a [StateSink] with each batch (as Kafka
// Streams keeps a state store beside its changelog): the events waiting
// for their other half or for the merge window, and how far each stream
// is handled. With it the committed offset moves past waiting requests at
// once (they are durable in the state), and a restart resumes from the
// state: waiting halves come back, and messages before a stream's mark
// are skipped, so the re-read tail is neither paired again nor stored
// twice. Without a StateSink the engine commits only up to the oldest
// waiting event, and a restart re-reads from there.

// The first byte of a saved event says how the rest is encoded.
const (
	// stateCodec: the packed fields, then the request and the response
	// body, each a uvarint length and its bytes.
	stateCodec = 1
	// stateCodecS2: the same, compressed with S2 (block format). A
	// waiting request's bodies are JSON, which S2 made about 2x smaller
	// on production-shaped traffic (BenchmarkLoadgenWrite's saved-MB);
	// every waiting event is written to the store and deleted again a
	// batch or two later, so its bytes cost twice (the store's log, then
	// its merge).
	stateCodecS2 = 2
)

// savedEncoder makes the stored form of waiting events (encode), reusing
// its buffers, so that each event costs one allocation of its stored size.
type savedEncoder struct{ plain, comp []byte }

// encode is the stored form of a waiting event: its packed fields and
// bodies, compressed unless that does not make them smaller.
func (c *savedEncoder) encode(p packed) []byte {
	plain := appendPlainSaved(c.plain[:0], p)
	c.plain = plain
	if n := s2.MaxEncodedLen(len(plain) - 1); n >= 0 {
		if cap(c.comp) < 1+n {
			c.comp = make([]byte, 1+n)
		}
		comp := c.comp[:1+n]
		comp[0] = stateCodecS2
		if enc := s2.Encode(comp[1:], plain[1:]); len(enc) < len(plain)-1 {
			return slices.Clone(comp[:1+len(enc)])
		}
	}
	return slices.Clone(plain)
}

// appendPlainSaved appends the plain (stateCodec) form of a waiting event.
func appendPlainSaved(b []byte, p packed) []byte {
	b = append(b, stateCodec)
	b = appendString(b, string(p.blob))
	b = appendString(b, p.reqBody)
	return appendString(b, p.respBody)
}

// decodeSaved rebuilds a saved event; data must not change afterwards
// (the event's strings may point into it).
func decodeSaved(data []byte) (ev *schema.Event, err error) {
	defer func() {
		if r := recover(); r != nil {
			ev, err = nil, fmt.Errorf("corrupt saved event: %v", r)
		}
	}()
	if len(data) == 0 {
		return nil, errors.New("saved event: empty")
	}
	switch data[0] {
	case stateCodec:
		data = data[1:]
	case stateCodecS2:
		if data, err = s2.Decode(nil, data[1:]); err != nil {
			return nil, fmt.Errorf("saved event: %w", err)
		}
	default:
		return nil, fmt.Errorf("saved event: unknown encoding %d", data[0])
	}
	u := unpacker{b: data}
	blob := u.str()
	var p packed
	p.blob = []byte(blob)
	p.reqBody, p.respBody = u.str(), u.str()
	if u.i != len(data) || len(p.blob) == 0 {
		return nil, errors.New("saved event: bad length")
	}
	return p.unpack(), nil
}

// collectState adds to e.state the events to save and the streams' marks,
// and returns the positions it saved: they are done once the batch that
// carries them is stored. An event is saved once it has waited through
// Config.StateHold flushes (all of them when final); until then it stays
// in flight, so the commit waits at it, and its stream's mark lists it as
// held: a restart re-reads it rather than skipping it.
func (e *Engine) collectState(final bool) []Position {
	var saved []Position
	held := map[string][]int64{}
	// A message of another format may carry several events, some stored
	// already: held, it could only be read again whole.
	limit := e.cfg.StateHold
	if e.d.Format != nil {
		limit = 0
	}
	hold := func(holds *uint8) bool {
		if final || int(*holds) >= limit {
			return false
		}
		*holds++
		return true
	}
	halves := e.heldHalves[:0]
	for _, list := range [2][]*half{e.heldHalves, e.corr.takeFresh()} {
		for _, h := range list {
			if h.index < 0 || h.saved { // no longer waiting, or saved already
				continue
			}
			if hold(&h.holds) {
				halves = append(halves, h)
				held[h.st.pos.Stream] = append(held[h.st.pos.Stream], h.off)
				continue
			}
			h.saved = true
			e.state.Saved = append(e.state.Saved, schema.SavedEvent{
				EventRef: schema.EventRef{Stream: h.st.pos.Stream, Offset: h.off, EventID: h.ev.eventID()},
				TS:       time.Unix(0, h.ts).UTC(), Data: e.saveEnc.encode(h.ev),
			})
			saved = append(saved, h.pos())
			e.waiting.Consumed(h.pos())
		}
	}
	clear(halves[len(halves):cap(halves)]) // no pointers kept past their time
	e.heldHalves = halves
	obs := e.heldObs[:0]
	for _, list := range [2][]*observation{e.heldObs, e.corr.takeFreshObservations()} {
		for _, o := range list {
			if o.emitted || !slices.Contains(o.saved, false) {
				continue
			}
			if hold(&o.holds) {
				obs = append(obs, o)
				for i, p := range o.positions {
					if !o.saved[i] {
						held[p.Stream] = append(held[p.Stream], p.Offset)
					}
				}
				continue
			}
			for i, p := range o.positions {
				if o.saved[i] {
					continue
				}
				o.saved[i] = true
				ev := o.eventAt(i)
				e.state.Saved = append(e.state.Saved, schema.SavedEvent{
					EventRef: schema.EventRef{Stream: p.Stream, Offset: p.Offset, EventID: ev.EventID}, TS: ev.TS, Data: e.saveEnc.encode(pack(ev)),
				})
				saved = append(saved, p)
				e.waiting.Consumed(p)
			}
		}
	}
	clear(obs[len(obs):cap(obs)])
	e.heldObs = obs
	for _, st := range e.corr.order {
		name := st.pos.Stream
		next := e.offsets.Next(name)
		// Held events of the last run not yet read again stay held.
		h := append(held[name], e.reread[name].rest()...)
		slices.Sort(h)
		h = slices.Compact(h) // one event, two observers' records
		m, ok := e.marked[name]
		if ok && next <= m && slices.Equal(h, e.markedHeld[name]) {
			continue // not read in this run, or nothing changed since the last mark
		}
		if ok {
			next = max(next, m) // a stream not read again yet keeps its mark
		}
		low, ok := e.waiting.Oldest(name)
		if !ok {
			low = next
		}
		mark := schema.StreamMark{
			Stream: name, Topic: st.pos.Topic, Partition: st.pos.Partition, Next: next, Low: low, MaxTS: st.maxTS, Held: h,
		}
		mark.MergeLag, mark.MergeLagAt = e.corr.merging.lagState()
		e.state.Streams = append(e.state.Streams, mark)
	}
	return saved
}

// stateWritten records that st, a stored batch's state change, is stored.
func (e *Engine) stateWritten(st *schema.State) {
	for _, m := range st.Streams {
		e.marked[m.Stream] = m.Next
		e.markedHeld[m.Stream] = m.Held
	}
}

// resume loads the state of streams (nil: every stream) from the sink
// before their first message: the waiting events go back into the
// correlator (and their ids into dedupe), and each stream's mark says
// below which offset messages are already handled. A store that cannot be
// read is retried while ctx lasts: resuming without the state would pair
// the tail again.
func (e *Engine) resume(ctx context.Context, streams []string) error {
	backoff := e.cfg.RetryMin
	var states []schema.StreamState
	for {
		var err error
		states, err = e.stateful.LoadState(ctx, streams)
		if err == nil {
			break
		}
		e.d.Logger.Error().Err(err).Dur("retry_in", backoff).Msg("load ingest state failed; waiting before reading")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, e.cfg.RetryMax)
	}
	waiting, reread := 0, 0
	for _, s := range states {
		pos := Position{Stream: s.Mark.Stream, Topic: s.Mark.Topic, Partition: s.Mark.Partition, Offset: s.Mark.Next}
		e.marked[pos.Stream] = s.Mark.Next
		e.skipBelow[pos.Stream] = s.Mark.Next
		held := rereadOf(s)
		e.markedHeld[pos.Stream] = held
		if len(held) > 0 {
			e.reread[pos.Stream] = &rereadList{offs: held}
			// A mark is stored after its batch's rows: on a store without
			// transactions across tables a newer batch may have stored a
			// held event's exchange and not yet its marks.
			e.unsure[pos.Stream] = s.Mark.Next
		}
		if s.Unsure > s.Mark.Next {
			e.unsure[pos.Stream] = s.Unsure
			e.d.Logger.Info().Str("stream", pos.Stream).Int64("mark", s.Mark.Next).Int64("unsure_until", s.Unsure).
				Msg("the stream's last batch may be stored without its marks; rows formed before unsure_until are checked against the store")
		}
		// A stream with held events starts its event time over from them:
		// they are older than the newest event it read (the mark's MaxTS),
		// and their other views, read again too from other streams, must
		// find them waiting rather than released on the restored time.
		maxTS := s.Mark.MaxTS
		if len(held) > 0 {
			maxTS = time.Time{}
		}
		e.corr.resume(pos, maxTS)
		e.corr.merging.resumeLag(s.Mark.MergeLag, s.Mark.MergeLagAt)
		slices.SortFunc(s.Saved, func(a, b schema.SavedEvent) int { return int(a.Offset - b.Offset) })
		for _, sv := range s.Saved {
			ev, err := decodeSaved(sv.Data)
			if err != nil {
				// Never silently: the event is gone from the state, so say
				// which one. It cannot be re-read (its offset is committed).
				e.d.Logger.Error().Err(err).Str("stream", sv.Stream).Int64("offset", sv.Offset).Msg("saved event unreadable; dropped from the state")
				e.state.Released = append(e.state.Released, sv.EventRef)
				continue
			}
			e.dedupe.Seen(ev.EventID, ev.TS)
			p := pos
			p.Offset = sv.Offset
			e.corr.add(ev, p, true)
			e.waiting.Consumed(p)
			waiting++
		}
		reread += len(held)
	}
	e.corr.takeFresh()
	e.corr.takeFreshObservations()
	e.d.Logger.Info().Int("streams", len(states)).Int("waiting", waiting).Int("held", reread).Msg("resumed from the ingest state; held events are read again")
	return nil
}

// rereadList is a resumed stream's held offsets (StreamMark.Held), the
// events before its mark that a restart reads again; from i on they are
// not yet delivered (a stream whose held offsets all passed has none).
type rereadList struct {
	offs []int64
	i    int
}

// rest is what is still to be read again.
func (r *rereadList) rest() []int64 {
	if r == nil {
		return nil
	}
	return r.offs[r.i:]
}

// rereadOf returns a resumed stream's held offsets less those also saved
// (a batch that saved them may be stored without its marks): the saved
// copy is what resumes.
func rereadOf(s schema.StreamState) []int64 {
	if len(s.Mark.Held) == 0 {
		return nil
	}
	saved := make(map[int64]bool, len(s.Saved))
	for _, sv := range s.Saved {
		saved[sv.Offset] = true
	}
	held := slices.Clone(s.Mark.Held)
	slices.Sort(held)
	held = slices.Compact(held)
	return slices.DeleteFunc(held, func(off int64) bool { return saved[off] || off >= s.Mark.Next })
}

// replayed says whether m is before its stream's mark and not held by it:
// handled before a restart (stored, or in the state), delivered again
// because the source's commit lagged the store's. A held event is read
// again. Each message of a stream with a mark lets the source commit up
// to the next held event still to come, or to the mark.
func (e *Engine) replayed(m Message) bool {
	mark, ok := e.skipBelow[m.Pos.Stream]
	if !ok {
		return false
	}
	off, commitTo, again := m.Pos.Offset, mark, false
	if r := e.reread[m.Pos.Stream]; r != nil {
		// Offsets come in order; a held one passed without being
		// delivered is gone from the source (retention) and is not waited
		// for.
		i, found := slices.BinarySearch(r.offs[r.i:], off)
		again = found
		r.i += i
		if found {
			r.i++
			e.counts.reread.Add(1)
		}
		if r.i < len(r.offs) {
			commitTo = min(mark, r.offs[r.i])
		} else {
			delete(e.reread, m.Pos.Stream) // every held event passed
		}
	}
	p := m.Pos
	p.Offset = commitTo
	e.offsets.Resume(p)
	return !again && off < mark
}

// reassign follows a rebalance of an Assigner's group. The same streams
// as before: nothing to do (the source reads them again from their
// committed offsets; the offset tracker counts the deliveries and dedupe
// drops what was handled). Otherwise the engine stores what it holds
// (complete exchanges, and with a StateSink the waiting events and
// marks), forgets every stream as a restart would (a stream it keeps is
// read again from its committed offset, one it lost by its new owner),
// and resumes the assigned streams' state. Chains, clients and tool
// annotations are kept: they are what the stored exchanges taught.
func (e *Engine) reassign(ctx context.Context, a *Assignment) error {
	now := make(map[string]bool, len(a.Streams))
	names := make([]string, 0, len(a.Streams))
	for _, p := range a.Streams {
		now[p.Stream] = true
		names = append(names, p.Stream)
	}
	first := e.assigned == nil
	if !first && maps.Equal(now, e.assigned) {
		return nil
	}
	e.d.Logger.Info().Strs("streams", names).Bool("first", first).Msg("streams assigned")
	if !first {
		if err := e.drain(ctx); err != nil {
			return err
		}
		e.forgetStreams()
	}
	e.assigned = now
	if e.stateful == nil || len(names) == 0 {
		return nil
	}
	return e.resume(ctx, names)
}

// forgetStreams drops the pipeline's per-stream state after a flush, as
// a restart would: halves still waiting (stored in the state, or
// uncommitted and read again), their ids in dedupe, the offsets in
// flight and the marks.
func (e *Engine) forgetStreams() {
	corr := newCorrelator(e.cfg.Correlator)
	corr.now, corr.track = e.d.Now, e.stateful != nil
	e.corr = corr
	e.evictSeen = 0
	e.dedupe = newDedupe(e.cfg.Dedupe)
	e.offsets = newOffsets()
	e.waiting = newOffsets()
	clear(e.marked)
	clear(e.markedHeld)
	clear(e.skipBelow)
	clear(e.reread)
	clear(e.unsure)
	e.heldHalves, e.heldObs = nil, nil
}
