package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcplens/mcplens/redact"
	"github.com/mcplens/mcplens/schema"
)

// Pinger is a Sink that can tell whether it is reachable. When a write
// fails while Ping succeeds, the store is up and refused the data, so the
// engine isolates the rows it refuses instead of retrying the batch
// forever; a Sink without Ping is retried with backoff until it accepts.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Permanenter is a Sink that can tell an error no retry can pass (the
// store's configuration: a missing database or table, a user without the
// right) from an outage. The engine retries such errors for
// Config.GiveUp, then stops with the error, nothing committed past the
// last stored batch; a write that fails the same way every time is not
// retried forever.
type Permanenter interface {
	Permanent(err error) bool
}

// errGaveUp wraps the last error of writes that kept failing permanently.
var errGaveUp = errors.New("sink refused every write")

// write stores b, retrying with backoff while ctx lasts. A batch the sink
// refuses while it answers Ping is split until each refused row is alone:
// that row is quarantined with the store's reason and the others are
// stored, then the state change is stored on its own. A refusal that does
// not depend on the rows (every part fails, the quarantine row too) is
// retried like an outage; rewriting the parts already stored is harmless,
// since the stores skip what they hold. failed is called after each
// failed attempt. write touches no state of the loop: it runs on the
// batch's writer goroutine (flight.go).
func (e *Engine) write(ctx context.Context, b *schema.Batch, failed func()) error {
	backoff := e.cfg.RetryMin
	var since time.Time // of the failing run of permanent errors
	for {
		err := e.d.Sink.Write(ctx, b)
		if err == nil {
			return nil
		}
		failed()
		e.m.sinkErrors.Inc()
		if p, ok := e.d.Sink.(Permanenter); ok && ctx.Err() == nil && p.Permanent(err) {
			now := e.d.Now()
			if since.IsZero() {
				since = now
			}
			if d := now.Sub(since); d >= e.cfg.GiveUp {
				return fmt.Errorf("%w for %s (--give-up-after): %w", errGaveUp, d.Round(time.Second), err)
			}
		} else {
			since = time.Time{}
		}
		if e.refused(ctx) {
			e.d.Logger.Warn().Err(err).Int("rows", b.Len()).Msg("store refused the batch while reachable; isolating the refused rows")
			if err = e.isolate(ctx, b); err == nil {
				return nil
			}
		}
		e.d.Logger.Error().Err(err).Int("rows", b.Len()).Dur("retry_in", backoff).Msg("sink write failed; consumption paused")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, e.cfg.RetryMax)
	}
}

// refused says whether the sink is reachable, so a failed write was about
// the data.
func (e *Engine) refused(ctx context.Context) bool {
	p, ok := e.d.Sink.(Pinger)
	return ok && ctx.Err() == nil && p.Ping(ctx) == nil
}

func (e *Engine) isolate(ctx context.Context, b *schema.Batch) error {
	rows := *b
	rows.State = schema.State{}
	if err := e.writeSplit(ctx, rows); err != nil {
		return err
	}
	if b.State.Empty() {
		return nil
	}
	return e.d.Sink.Write(ctx, &schema.Batch{State: b.State, Token: b.Token + "/state"})
}

// writeSplit writes b, halving it on refusal down to single rows.
func (e *Engine) writeSplit(ctx context.Context, b schema.Batch) error {
	err := e.d.Sink.Write(ctx, &b)
	if err == nil || !e.refused(ctx) {
		return err
	}
	if units(&b) > 1 {
		lo, hi := splitBatch(&b)
		if err := e.writeSplit(ctx, lo); err != nil {
			return err
		}
		return e.writeSplit(ctx, hi)
	}
	q, ok := e.refusedRow(&b, err)
	if !ok {
		e.d.Logger.Error().Err(err).Msg("store refused a tool annotation; skipped")
		return nil
	}
	e.m.events.WithLabelValues("refused").Inc()
	e.m.quarantined.WithLabelValues("store").Inc()
	e.counts.quarantined.Add(1)
	e.d.Logger.Warn().Str("position", q.Position).Str("reason", q.Reason).Msg("row refused by the store quarantined")
	return e.d.Sink.Write(ctx, &schema.Batch{Quarantine: []schema.Quarantined{q}, Token: b.Token + "/q"})
}

// units counts a batch's rows, an exchange and its body as one.
func units(b *schema.Batch) int { return len(b.Exchanges) + len(b.Quarantine) + len(b.Annotations) }

// splitBatch halves b's rows, keeping each exchange with its body. The
// halves' tokens derive from b's, so they are as stable as b's.
func splitBatch(b *schema.Batch) (lo, hi schema.Batch) {
	n := units(b) / 2
	cut := func(total int) int { k := min(n, total); n -= k; return k }
	x, q, a := cut(len(b.Exchanges)), cut(len(b.Quarantine)), cut(len(b.Annotations))
	lo = schema.Batch{Exchanges: b.Exchanges[:x], Bodies: b.Bodies[:x], Quarantine: b.Quarantine[:q], Annotations: b.Annotations[:a], Token: b.Token + "/a", Unsure: b.Unsure}
	hi = schema.Batch{Exchanges: b.Exchanges[x:], Bodies: b.Bodies[x:], Quarantine: b.Quarantine[q:], Annotations: b.Annotations[a:], Token: b.Token + "/b", Unsure: b.Unsure}
	return lo, hi
}

// refusedRow is the quarantine row of the one row of b the store refused:
// an exchange becomes its record and body as JSON (already redacted),
// keyed store/EXCHANGE_ID; a quarantine row is kept with its text fields
// made valid UTF-8. ok is false for an annotation.
func (e *Engine) refusedRow(b *schema.Batch, err error) (schema.Quarantined, bool) {
	reason := "store refused the row: " + strings.ToValidUTF8(err.Error(), "\uFFFD")
	if len(reason) > maxQuarantineReason {
		reason = redact.TruncateUTF8(reason, maxQuarantineReason)
	}
	switch {
	case len(b.Exchanges) == 1:
		raw, merr := json.Marshal(struct {
			Exchange schema.Exchange `json:"exchange"`
			Body     schema.Body     `json:"body"`
		}{b.Exchanges[0], b.Bodies[0]})
		if merr != nil {
			raw = fmt.Appendf(nil, "%+v", b.Exchanges[0])
		}
		return schema.Quarantined{TS: e.d.Now().UTC(), Position: "store/" + strings.ToValidUTF8(b.Exchanges[0].ExchangeID, "\uFFFD"), Reason: reason, Raw: raw}, true
	case len(b.Quarantine) == 1:
		q := b.Quarantine[0]
		q.Position = strings.ToValidUTF8(q.Position, "\uFFFD")
		q.Reason = strings.ToValidUTF8(q.Reason, "\uFFFD") + "; " + reason
		return q, true
	}
	return schema.Quarantined{}, false
}
