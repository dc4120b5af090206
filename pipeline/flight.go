package pipeline

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mcplens/mcplens/schema"
)

// A batch is stored by a goroutine of its own while the loop reads,
// classifies and fills the next batch, so the ingester does not idle
// while the store works. At most one batch is in flight: the next flush
// first waits for it (a full batch holds the loop there, which bounds the
// memory to two batches), so batches reach the store in order, and the
// positions a batch covers are marked done, and the source committed past
// them, only after the store acknowledged it, on the loop.
//
// A write that fails is retried by its goroutine as before; the loop
// then stops reading until the batch is stored (the store's outage
// pauses consumption), and the time the write took is reported to the
// correlator as paused, not idle. A write that ends with the run's
// context (a shutdown) stays in flight and is stored again, before
// anything newer, by the final flush with its own deadline.

// inflight is a batch handed to its writer goroutine.
type inflight struct {
	batch      schema.Batch
	pos, saved []Position
	landed     chan struct{} // closed when the write returned
	failing    chan struct{} // closed at its first failed attempt
	fail       sync.Once
	cancel     context.CancelFunc

	// Set by the writer before landed is closed.
	err    error
	failed bool
	took   time.Duration // on Deps.Now's clock
}

// signals are the channels the loop waits on for f (nil channels, which
// never fire, for no batch in flight).
func (f *inflight) signals() (landed, failing <-chan struct{}) {
	if f == nil {
		return nil, nil
	}
	return f.landed, f.failing
}

// launch hands the batch, its positions and its state change to a writer
// goroutine and starts the next batch empty.
func (e *Engine) launch(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	f := &inflight{batch: e.batch, pos: e.batchPos, saved: e.savedPos,
		landed: make(chan struct{}), failing: make(chan struct{}), cancel: cancel}
	// The next batch starts with room for as many rows as the longest
	// of the last few batches: grown by append from nothing, a batch of
	// 10,000 exchanges was allocated and copied about twice over (a ninth
	// of what the engine allocated on production-shaped traffic), and with
	// room for as many as the batch just sent, a full batch after one a
	// flush tick cut short was copied whole again (most of what emit
	// allocated).
	e.room.note(len(f.batch.Exchanges), len(f.batch.Bodies), len(f.pos))
	e.batch = schema.Batch{Exchanges: take(&e.spare.ex, e.room.exchanges), Bodies: take(&e.spare.bo, e.room.bodies)}
	e.batchPos, e.savedPos, e.state = make([]Position, 0, e.room.pos), nil, schema.State{}
	e.batchBytes = 0
	e.fly = f
	go e.store(ctx, f)
}

// batchRoom is the room a new batch gets: the most rows of the batches
// before it, forgetting a quarter of a longer one's excess at each batch
// (a burst's size fades within a few flushes), and a sixteenth more.
type batchRoom struct{ exchanges, bodies, pos int }

func (r *batchRoom) note(exchanges, bodies, pos int) {
	fade := func(room, n int) int { return max(n+n/16+16, room-room/4) }
	r.exchanges, r.bodies, r.pos = fade(r.exchanges, exchanges), fade(r.bodies, bodies), fade(r.pos, pos)
}

// spare holds the arrays of a stored batch for the next one (Copier):
// cleared when kept, so they hold no stale strings, and taken when long
// enough for the room the next batch gets.
type spare struct {
	ex []schema.Exchange
	bo []schema.Body
}

// keep takes b's arrays if the sink copies batches.
func (s *spare) keep(sink Sink, b *schema.Batch) {
	if _, ok := sink.(Copier); !ok {
		return
	}
	clear(b.Exchanges)
	clear(b.Bodies)
	s.ex, s.bo = b.Exchanges[:0], b.Bodies[:0]
}

// take returns the kept array *a if it has room, else a new one.
func take[T any](a *[]T, room int) []T {
	kept := *a
	*a = nil
	if cap(kept) < room {
		return make([]T, 0, room)
	}
	return kept
}

// abandon ends the write in flight, if any, when the loop returns
// without having stored it (the final flush failed): no writer outlives
// Run. Its positions stay uncommitted.
func (e *Engine) abandon() {
	if f := e.fly; f != nil {
		f.cancel()
		<-f.landed
	}
}

// store writes f on the writer goroutine.
func (e *Engine) store(ctx context.Context, f *inflight) {
	defer f.cancel()
	defer close(f.landed)
	start, wall := e.d.Now(), time.Now()
	f.err = e.write(ctx, &f.batch, func() {
		f.failed = true
		f.fail.Do(func() { close(f.failing) })
	})
	f.took = e.d.Now().Sub(start)
	if f.err == nil {
		e.m.sinkSeconds.Observe(time.Since(wall).Seconds())
	}
}

// await waits for the batch in flight, if any, to be stored, and records
// it as stored. A batch whose write ended with an earlier context is
// written again with ctx, on the loop.
func (e *Engine) await(ctx context.Context) error {
	f := e.fly
	if f == nil {
		return nil
	}
	select {
	case <-f.landed:
	default:
		// The loop stands still from here until the store answers.
		wait := time.Now()
		select {
		case <-f.landed:
		case <-ctx.Done():
			return ctx.Err()
		}
		e.m.sinkBlocked.Add(time.Since(wait).Seconds())
	}
	if f.failed {
		e.corr.Paused(f.took)
		f.failed = false
	}
	if errors.Is(f.err, errGaveUp) {
		return f.err // the store refused it for --give-up-after already
	}
	if f.err != nil {
		start, failed := e.d.Now(), false
		f.err = e.write(ctx, &f.batch, func() { failed = true })
		if failed {
			e.corr.Paused(e.d.Now().Sub(start))
		}
		if f.err != nil {
			return f.err
		}
	}
	e.fly = nil
	e.m.sinkRows.Add(float64(f.batch.Len()))
	e.m.sinkBatchRows.Observe(float64(f.batch.Len()))
	e.m.sinkExchanges.Add(float64(len(f.batch.Exchanges)))
	e.counts.stored.Add(int64(len(f.batch.Exchanges)))
	e.offsets.Done(f.pos...)
	e.offsets.Done(f.saved...)
	e.stateWritten(&f.batch.State)
	e.spare.keep(e.d.Sink, &f.batch)
	return nil
}

// drain stores everything complete and commits: the batch in flight, then
// the current one.
func (e *Engine) drain(ctx context.Context) error {
	if err := e.flush(ctx, true); err != nil {
		return err
	}
	if err := e.await(ctx); err != nil {
		return err
	}
	return e.commit(ctx)
}
