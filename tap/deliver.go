package tap

import (
	"context"
	"errors"
	"time"

	"github.com/mcplens/mcplens/schema"
)

// run is the Queue's one delivery goroutine. It alternates between the
// memory queue and the spill files, so a sink that keeps up again also
// works off what was spilled while it was down; after Close it goes on
// until both are empty or Close runs out of time.
func (q *Queue) run() {
	defer close(q.done)
	var (
		rd        *spillReader
		fromSpill bool
		batch     = make([]schema.Event, 0, q.cfg.Batch)
	)
	turnSpill := true
	for {
		batch, fromSpill = batch[:0], false
		if q.spill != nil && (turnSpill || len(q.ch) == 0) {
			if rd == nil {
				rd = q.spill.take()
			}
			if rd != nil {
				var bad int
				batch, bad = rd.read(batch, q.cfg.Batch)
				if bad > 0 {
					q.drop(bad, "dropped", errors.New("spill file line does not decode"))
				}
				fromSpill = true
				if len(batch) == 0 && rd.eof {
					q.spill.done(rd)
					rd = nil
					continue
				}
			}
		}
		turnSpill = !turnSpill
		if !fromSpill {
			batch = q.collect(batch)
			if len(batch) == 0 {
				q.finish(nil)
				return
			}
		}
		if left := q.deliver(batch); left != nil {
			if fromSpill {
				left = nil // still in its spill file, which stays for the next run
			}
			q.finish(left)
			return
		}
		if fromSpill && rd.eof {
			q.spill.done(rd)
			q.m.spillBytes.Set(float64(q.spill.size()))
			rd = nil
		}
	}
}

// collect waits for one event, then takes whatever else is queued, up to a
// batch. It returns an empty batch once Close was called and the memory
// queue is empty, or Close ran out of time.
func (q *Queue) collect(batch []schema.Event) []schema.Event {
	select {
	case ev := <-q.ch:
		batch = append(batch, ev)
	case <-q.closing:
		select {
		case ev := <-q.ch:
			batch = append(batch, ev)
		default:
			return batch
		}
	case <-q.abortCtx.Done():
		return batch
	}
	for len(batch) < q.cfg.Batch {
		select {
		case ev := <-q.ch:
			batch = append(batch, ev)
		default:
			q.m.queued.Set(float64(len(q.ch)))
			return batch
		}
	}
	q.m.queued.Set(float64(len(q.ch)))
	return batch
}

// deliver hands batch to the sink until it takes every event (or rejects
// them for good), retrying with backoff. It returns the events still
// undelivered when Close ran out of time, else nil.
func (q *Queue) deliver(batch []schema.Event) []schema.Event {
	backoff := q.cfg.RetryMin
	var failedSince time.Time
	var lastLog time.Time
	for {
		ctx, cancel := context.WithTimeout(q.abortCtx, q.cfg.AttemptTimeout)
		err := q.sink.WriteEvents(ctx, batch)
		cancel()
		if err == nil {
			q.delivered.Add(int64(len(batch)))
			q.m.events.WithLabelValues("delivered").Add(float64(len(batch)))
			if !failedSince.IsZero() {
				q.log.Info().Dur("down_for", time.Since(failedSince)).Int("queued", len(q.ch)).
					Int64("spill_bytes", q.spillSize()).Msg("tap: sink is back; delivering")
			}
			return nil
		}
		var be *BatchError
		switch {
		case errors.As(err, &be):
			ok := len(batch) - len(be.Retry) - len(be.Rejected)
			q.delivered.Add(int64(ok))
			q.m.events.WithLabelValues("delivered").Add(float64(ok))
			if len(be.Rejected) > 0 {
				q.drop(len(be.Rejected), "rejected", be.Err)
			}
			retry := make([]schema.Event, len(be.Retry))
			for i, j := range be.Retry {
				retry[i] = batch[j]
			}
			batch = retry
			if len(batch) == 0 {
				return nil
			}
		case errors.Is(err, ErrRejected):
			q.drop(len(batch), "rejected", err)
			return nil
		}
		q.m.sinkErrors.Inc()
		if failedSince.IsZero() {
			failedSince = time.Now()
		}
		if time.Since(lastLog) >= 10*time.Second {
			lastLog = time.Now()
			q.log.Warn().Err(err).Int("batch", len(batch)).Int("queued", len(q.ch)).Int64("spill_bytes", q.spillSize()).
				Dur("retry_in", backoff).Msg("tap: sink write failed; events wait in the queue and the spill files")
		}
		select {
		case <-time.After(backoff):
		case <-q.abortCtx.Done():
			return batch
		}
		backoff = min(2*backoff, q.cfg.RetryMax)
	}
}

func (q *Queue) spillSize() int64 {
	if q.spill == nil {
		return 0
	}
	return q.spill.size()
}

// finish stops accepting events into memory and spills (or drops) what is
// left: the undelivered batch and the memory queue.
func (q *Queue) finish(left []schema.Event) {
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	for i := range left {
		_ = q.overflow(left[i])
	}
	for {
		select {
		case ev := <-q.ch:
			_ = q.overflow(ev)
		default:
			q.m.queued.Set(0)
			return
		}
	}
}
