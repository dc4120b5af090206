package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/mcplens/mcplens/redact"
	"github.com/mcplens/mcplens/schema"
)

// Deps are the engine's collaborators.
type Deps struct {
	Source     Source
	Sink       Sink
	Logger     zerolog.Logger
	Registerer prometheus.Registerer // nil: metrics are not registered
	// Now is the wall clock, used only to stamp quarantine rows and to pace
	// flushes; nil means time.Now.
	Now func() time.Time
	// Format maps each message of another log format to contract-v1
	// lines; nil: the source yields contract-v1 lines.
	Format Format
}

// Engine runs the pipeline: fetch, decode, dedupe, redact, correlate and
// classify, merge, chain, batch, write, commit. It commits source positions only
// after the sink acknowledged every exchange that used them.
type Engine struct {
	cfg      Config
	d        Deps
	m        *metrics
	dec      *Decoder
	dedupe   *dedupe
	redactor *redact.Redactor
	corr     *correlator
	chains   *chains
	clients  *clients
	ann      *annotations
	offsets  *offsets

	batch    schema.Batch
	batchPos []Position
	// batchBytes estimates what the batch holds: its bodies, headers and
	// quarantined lines, and a row's worth for each row (see full).
	batchBytes int64
	room       batchRoom           // for the next batch (see launch)
	spare      spare               // a stored batch's arrays, with a Copier sink
	tokener    schema.BatchTokener // names each batch (batchToken)
	evictSeen  int
	missSeen   int // merging.misses counted into mergeMissed
	counts     counters

	// With a StateSink (see state.go): the state change not yet stored,
	// the positions it saved, each stream's stored mark, and below which
	// offset a stream's messages were handled before this run.
	stateful  StateSink
	state     schema.State
	saveEnc   savedEncoder // the stored form of waiting events
	savedPos  []Position
	marked    map[string]int64
	skipBelow map[string]int64
	// markedHeld is each stream's held offsets as its stored mark lists
	// them; reread, of a stream resumed from a mark that held events,
	// those it reads again; heldHalves and heldObs are the waiting events
	// not saved yet (Config.StateHold).
	markedHeld map[string][]int64
	reread     map[string]*rereadList
	heldHalves []*half
	heldObs    []*observation
	// unsure holds, per stream resumed from a state whose last batch may
	// be stored without its marks, the offset below which the rows formed
	// may be stored already ([schema.StreamState.Unsure]).
	unsure map[string]int64
	// waiting holds the positions of the saved events still waiting: the
	// oldest of a stream is its mark's Low.
	waiting *offsets

	// With an Assigner: the streams of its last assignment (nil before
	// the first).
	assigner bool
	assigned map[string]bool

	// fly is the batch being stored while the loop reads on (nil: none,
	// see flight.go); due says a flush tick came meanwhile.
	fly *inflight
	due bool
	// yield gives the writer its turn (runtime.Gosched) while a write
	// is in flight (yieldToWriter); sinceYield and sinceYieldBytes
	// count the messages handled since the last turn.
	yield                       func()
	sinceYield, sinceYieldBytes int
}

// New builds an engine. Start it with Run.
func New(cfg Config, d Deps) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if d.Source == nil || d.Sink == nil {
		return nil, errors.New("pipeline: source and sink are required")
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	red, err := redact.New(cfg.Redact)
	if err != nil {
		return nil, fmt.Errorf("build redactor: %w", err)
	}
	ann := newAnnotations()
	corr := newCorrelator(cfg.Correlator)
	corr.idle = cfg.IdleAdvance
	corr.now = d.Now
	e := &Engine{
		cfg: cfg, d: d, m: newMetrics(d.Registerer, cfg.MetricsMaxServers),
		dec:        NewDecoder(),
		dedupe:     newDedupe(cfg.Dedupe),
		redactor:   red,
		corr:       corr,
		ann:        ann,
		chains:     newChains(cfg.Chains, ann),
		clients:    newClients(cfg.Clients),
		offsets:    newOffsets(),
		marked:     map[string]int64{},
		skipBelow:  map[string]int64{},
		unsure:     map[string]int64{},
		markedHeld: map[string][]int64{},
		reread:     map[string]*rereadList{},
		waiting:    newOffsets(),
		yield:      runtime.Gosched,
	}
	e.stateful, _ = d.Sink.(StateSink)
	corr.track = e.stateful != nil
	_, e.assigner = d.Source.(Assigner)
	e.chains.sessionStart, e.chains.sessionSeen = e.clients.started, e.clients.lastSeen
	e.chains.unreleased = corr.unreleased
	return e, nil
}

// Seed warms chain state with exchanges and annotations a store already
// holds (the last chain window of them), so that a restarted ingester
// links retries whose earlier attempt was stored before the restart, and
// deduplication with the events of the views merged into them, and the
// merge set with the clocks of those views and with the exchanges a view
// read after the restart may have missed (so that it takes an id of its
// own, as for an uninterrupted run).
func (e *Engine) Seed(recs []schema.Exchange, anns []schema.ToolAnnotation) {
	for _, a := range anns {
		e.ann.Set(a)
	}
	// A re-send whose retry_of names no stored exchange named an attempt
	// released after it (chains.flightOf), still to come after the
	// restart, unless that attempt lies before the window the store gave
	// (the chain window back from its newest exchange): it was sent at
	// most a pair window (and the merge waits) before the re-send.
	stored := make(map[string]bool, len(recs))
	var newest time.Time
	for i := range recs {
		stored[recs[i].ExchangeID] = true
		if recs[i].TS.After(newest) {
			newest = recs[i].TS
		}
	}
	windowStart := newest.Add(-e.chains.cfg.Window)
	c := &e.corr.cfg
	for i := range recs {
		rec := recs[i]
		e.clients.Seed(&rec)
		// A view merged into a stored record is handled: a copy of its
		// line sent again after the restart is a duplicate, as it is to an
		// uninterrupted run, whose deduplication remembered it.
		for _, id := range rec.MergedEventIDs {
			e.dedupe.Seen(id, rec.TS)
		}
		e.corr.merging.seedClocks(&rec)
		e.corr.merging.seedReleased(&rec, newest)
		ahead := rec.RetryOf != "" && !stored[rec.RetryOf] && rec.TS.Sub(windowStart) > c.PairWindow+c.MergeWindow+c.Lateness
		e.chains.Seed(&rec, ahead)
	}
}

// Run consumes the source until it ends (io.EOF: everything pending is
// emitted, flushed and committed) or ctx is done (a graceful stop: what is
// complete is flushed and committed; halves still waiting stay uncommitted
// and are re-read on the next start). It returns nil on both.
func (e *Engine) Run(ctx context.Context) error {
	if e.stateful != nil && !e.assigner { // an Assigner's streams are resumed as assigned
		if err := e.resume(ctx, nil); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	msgs := make(chan Message, 256)
	g, gctx := errgroup.WithContext(ctx)
	fetchErr := make(chan error, 1)
	g.Go(func() error {
		defer close(msgs)
		for {
			m, err := e.d.Source.Fetch(gctx)
			switch {
			case errors.Is(err, io.EOF):
				fetchErr <- io.EOF
				return nil
			case err != nil && gctx.Err() != nil:
				return nil
			case err != nil:
				fetchErr <- err
				return nil
			}
			select {
			case msgs <- m:
			case <-gctx.Done():
				return nil
			}
		}
	})
	g.Go(func() error { return e.loop(ctx, msgs, fetchErr) })
	return g.Wait()
}

func (e *Engine) loop(ctx context.Context, msgs <-chan Message, fetchErr <-chan error) error {
	tick := time.NewTicker(e.cfg.FlushInterval)
	defer tick.Stop()
	// onTick advances idle streams, releases what is complete and hands
	// the batch to the store.
	onTick := func() error {
		e.corr.AdvanceIdle(e.cfg.IdleAdvance)
		e.corr.Release(false, e.emit)
		if err := e.flush(ctx, false); err != nil {
			return err
		}
		// The next batch gets a whole interval after this write:
		// against a store that takes longer than the interval, a
		// tick queued meanwhile would flush again at once, a few
		// rows per round trip.
		tick.Reset(e.cfg.FlushInterval)
		return nil
	}
	// settle records the batch in flight as stored (waiting for it if
	// its write is failing) and commits what it stored. A tick that came
	// meanwhile advances and releases now, and its flush waits a whole
	// interval: flushed at once, a store slower than the interval would
	// get one small batch after another, each what came in during the
	// write before it.
	settle := func() error {
		if err := e.await(ctx); err != nil {
			return err
		}
		if e.due {
			e.due = false
			e.corr.AdvanceIdle(e.cfg.IdleAdvance)
			e.corr.Release(false, e.emit)
			tick.Reset(e.cfg.FlushInterval)
		}
		if e.full() {
			// It grew while the store worked: it goes at once (flush
			// commits too).
			return e.flush(ctx, false)
		}
		return e.commit(ctx)
	}
	defer e.abandon()
	for {
		landed, failing := e.fly.signals()
		select {
		case m, ok := <-msgs:
			if !ok {
				var err error
				select {
				case err = <-fetchErr:
				default:
				}
				if errors.Is(err, io.EOF) {
					e.corr.Release(true, e.emit)
					return e.stop("end of input")
				}
				if err != nil {
					_ = e.stop("source failed")
					return fmt.Errorf("fetch: %w", err)
				}
				return e.stop("shutdown")
			}
			if m.Assignment != nil {
				if err := e.reassign(ctx, m.Assignment); err != nil {
					return e.stopAfter(err)
				}
				continue
			}
			size := len(m.Value)
			e.handle(m)
			m.Release()
			e.yieldToWriter(size)
			if e.full() {
				if err := e.flush(ctx, false); err != nil {
					return e.stopAfter(err)
				}
			}
		case <-tick.C:
			if e.fly != nil {
				// A write is in flight: what is complete goes into the
				// next batch; the idle advance and the flush wait for
				// the write (one that fails holds the loop, and its
				// time is not the source being idle).
				e.corr.Release(false, e.emit)
				e.due = true
				continue
			}
			if err := onTick(); err != nil {
				return e.stopAfter(err)
			}
		case <-landed:
			if err := settle(); err != nil {
				return e.stopAfter(err)
			}
		case <-failing:
			// The store fails the write: stop reading until it is
			// stored, as the write's retries pause consumption.
			if err := settle(); err != nil {
				return e.stopAfter(err)
			}
		case <-ctx.Done():
			return e.stop("shutdown")
		}
	}
}

// yieldEvery and yieldBytes are how much the loop handles, while a write
// is in flight, between the turns it gives the writer: 64 messages or
// 128 KiB of them, whichever comes first, about 2 ms of work on
// production-shaped traffic (large bodies take longer per message).
//
// With one P (GOMAXPROCS=1, the ingester's usual share of a machine or
// cpuset) the writer runs only when the loop gives up the P. The loop
// rarely blocks while input is there, and the runtime notices a socket
// the writer waits on only in its monitor's poll (every 10 ms), after
// which the writer still waits for the loop to be preempted. An insert
// into ClickHouse takes several round trips, so each write took tenths
// of a second longer than the server needed, and the loop then stood
// still waiting for it: on a 6-minute Kafka topic into ClickHouse,
// 10-11 s of a 27-35 s run. Yielding every 64 messages brought that to
// 0.2-1 s (see the README's "The writer's turn").
const (
	yieldEvery = 64
	yieldBytes = 128 << 10
)

// yieldToWriter counts a message of size bytes handled and gives the
// writer goroutine its turn at yieldEvery messages or yieldBytes bytes
// while a write is in flight. Without one, it does nothing.
func (e *Engine) yieldToWriter(size int) {
	if e.fly == nil {
		return
	}
	e.sinceYield++
	e.sinceYieldBytes += size
	if e.sinceYield >= yieldEvery || e.sinceYieldBytes >= yieldBytes {
		e.sinceYield, e.sinceYieldBytes = 0, 0
		e.yield()
	}
}

// stopAfter ends the loop after a flush failed because ctx ended.
func (e *Engine) stopAfter(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return e.stop("shutdown")
	}
	return err
}

// stop flushes and commits what is complete, with its own deadline since
// the run's context is usually done by now.
func (e *Engine) stop(why string) error {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.ShutdownTimeout)
	defer cancel()
	start := time.Now()
	err := e.drain(ctx)
	pending, _ := e.corr.Pending()
	e.d.Logger.Info().Str("reason", why).Int64("took_ms", time.Since(start).Milliseconds()).Int("pending_uncommitted", pending).
		Int("inflight_positions", e.offsets.InFlight()).Err(err).Msg("pipeline stopped")
	if err != nil {
		return fmt.Errorf("final flush: %w", err)
	}
	return nil
}

// handle takes one raw line through decode, dedupe, redact and correlate.
func (e *Engine) handle(m Message) {
	if e.stateful != nil && e.replayed(m) {
		e.m.events.WithLabelValues("replayed").Inc()
		return
	}
	if e.d.Format == nil {
		e.handleLine(m)
		return
	}
	n := 0
	e.d.Format.Expand(m.Value, func(line []byte, err error) {
		n++
		part := Message{Value: line, Pos: m.Pos}
		if err != nil {
			e.offsets.Consumed(m.Pos)
			e.quarantine(part, err)
			return
		}
		e.handleLine(part)
	})
	if n == 0 {
		// Nothing of MCP in it (spans of other traffic): done at once.
		e.offsets.Consumed(m.Pos)
		e.offsets.Done(m.Pos)
		e.m.events.WithLabelValues("ignored").Inc()
	}
}

// handleLine takes one contract-v1 line through decode, dedupe, redact and
// correlate.
func (e *Engine) handleLine(m Message) {
	e.offsets.Consumed(m.Pos)
	ev := new(schema.Event) // kept by the observation it completes, if any
	if err := e.dec.DecodeTo(m.Value, m.Pos, ev); err != nil {
		e.quarantine(m, err)
		return
	}
	if e.dedupe.Seen(ev.EventID, ev.TS) {
		e.offsets.Done(m.Pos)
		e.m.duplicate.Inc()
		e.counts.duplicates.Add(1)
		return
	}
	e.m.accepted.Inc()
	e.counts.accepted.Add(1)
	e.redactor.Apply(ev)
	e.corr.Add(ev, m.Pos)
	e.corr.Release(false, e.emit)
	if n := e.corr.Evictions(); n > e.evictSeen {
		e.m.evicted.Add(float64(n - e.evictSeen))
		e.counts.evicted.Add(int64(n - e.evictSeen))
		e.d.Logger.Warn().Int("evicted", n-e.evictSeen).Str("position", m.Pos.String()).Msg("pending state full: oldest halves evicted and emitted alone")
		e.evictSeen = n
	}
}

// rowBytes is what full counts for a row besides its bodies: the
// exchange record's fields and the slices' share.
const rowBytes = 512

// bodyBytes estimates the memory of an exchange's bodies and headers.
func bodyBytes(b *schema.Body) int64 {
	return int64(len(b.RequestBody) + len(b.ResponseBody) + 64*(len(b.RequestHeaders)+len(b.ResponseHeaders)))
}

// full says whether the batch goes to the store now: once it holds
// BatchSize rows if no write is in flight; while one is, only once it
// holds BatchMaxSize rows or BatchMaxBytes, so that reading goes on
// while the store works and a slow store gets fewer, larger writes
// (Config.BatchMaxSize). The batch left then goes when the write lands
// (settle in loop).
func (e *Engine) full() bool {
	n := e.batch.Len()
	if n < e.cfg.BatchSize {
		return false
	}
	return e.fly == nil || n >= e.cfg.BatchMaxSize || e.batchBytes >= e.cfg.BatchMaxBytes
}

// quarantine puts a message that cannot be handled into the batch's
// quarantine rows; its position is done once the batch is stored.
func (e *Engine) quarantine(m Message, err error) {
	q := quarantineRecord(m, err, e.d.Now(), e.redactor)
	e.batch.Quarantine = append(e.batch.Quarantine, q)
	e.batchBytes += int64(len(q.Raw)) + rowBytes
	e.batchPos = append(e.batchPos, m.Pos)
	if e.isUnsure(m.Pos) {
		e.batch.Unsure.Quarantine = append(e.batch.Unsure.Quarantine, q.Position)
	}
	e.m.events.WithLabelValues("quarantined").Inc()
	e.m.quarantined.WithLabelValues(m.Pos.Stream).Inc()
	e.counts.quarantined.Add(1)
	e.d.Logger.Warn().Str("position", m.Pos.String()).Str("reason", q.Reason).Msg("line quarantined")
}

// emit turns a released group into rows of the current batch.
func (e *Engine) emit(g *group) {
	rec, body := g.record()
	e.clients.Identify(&rec, &body)
	cleanText(&rec)
	anns := e.ann.Learn(&rec, &body)
	e.chains.Link(&rec)
	e.chains.LinkCancel(&rec, &body, &e.clients.p)
	if len(e.batch.Exchanges) == cap(e.batch.Exchanges) {
		e.batch.Exchanges = growRows(e.batch.Exchanges, max(e.cfg.BatchMaxSize, e.cfg.BatchSize))
	}
	if len(e.batch.Bodies) == cap(e.batch.Bodies) {
		e.batch.Bodies = growRows(e.batch.Bodies, max(e.cfg.BatchMaxSize, e.cfg.BatchSize))
	}
	e.batch.Exchanges = append(e.batch.Exchanges, rec)
	e.batch.Bodies = append(e.batch.Bodies, body)
	e.batch.Annotations = append(e.batch.Annotations, anns...)
	e.batchBytes += bodyBytes(&body) + int64(2+len(anns))*rowBytes
	unsure := false
	for _, o := range g.obs {
		o.emitted = true
		for i, p := range o.positions {
			unsure = unsure || e.isUnsure(p)
			if o.saved[i] {
				e.state.Released = append(e.state.Released, schema.EventRef{Stream: p.Stream, Offset: p.Offset, EventID: o.eventAt(i).EventID})
				e.waiting.Done(p)
			} else {
				e.batchPos = append(e.batchPos, p)
			}
		}
	}
	if unsure {
		e.batch.Unsure.Exchanges = append(e.batch.Unsure.Exchanges, rec.ExchangeID)
	}
	e.m.exchange(&rec)
	e.counts.exchange(rec.Outcome)
}

// growRows gives a full array of rows room for as many again, up to most
// rows in all (at least one more). A batch outgrows the room it started
// with (batchRoom) while the write before it is in flight, up to
// --batch-max-size; grown by append, a quarter at a time at these sizes,
// the 840-byte exchange records were copied about four times over on the
// way from 10,000 rows to 40,000 (the append was 4% of a profile of file ->
// ClickHouse). Doubling copies them about once.
func growRows[T any](s []T, most int) []T {
	g := make([]T, len(s), len(s)+max(min(cap(s), most-len(s)), 1))
	copy(g, s)
	return g
}

// isUnsure says whether the event at p may be stored already, by a batch
// of the stream's previous owner that was not stored whole.
func (e *Engine) isUnsure(p Position) bool {
	end, ok := e.unsure[p.Stream]
	return ok && p.Offset < end
}

// cleanText makes the record's text fields that come from bodies and
// headers (what the classifier extracts) valid UTF-8 without NUL, as text
// columns require: a server that answers a raw 0xFF inside an error
// message must not make the store refuse the row. The body keeps the
// bytes as logged, so nothing is lost.
func cleanText(rec *schema.Exchange) {
	for _, p := range [...]*string{&rec.ErrorMessage, &rec.JSONRPCID, &rec.Method, &rec.ToolName,
		&rec.ProtocolVersion, &rec.ContentType, &rec.ParamsHash} {
		if !utf8.ValidString(*p) || strings.IndexByte(*p, 0) >= 0 {
			*p = strings.ReplaceAll(strings.ToValidUTF8(*p, "\uFFFD"), "\x00", "\uFFFD")
		}
	}
}

// flush hands the batch and, with a StateSink, the state change to a
// writer of their own (see flight.go), after the batch before them is
// stored, and commits the source up to the low watermark of what is
// stored.
func (e *Engine) flush(ctx context.Context, final bool) error {
	if err := e.await(ctx); err != nil {
		return err
	}
	pending, bytes := e.corr.Pending()
	e.m.pending.Set(float64(pending))
	e.m.pendingBytes.Set(float64(bytes))
	e.m.mergeWaiting.Set(float64(e.corr.merging.Len()))
	e.m.mergeExtra.Set(e.corr.extraWait().Seconds())
	if n := e.corr.merging.misses; n > e.missSeen {
		e.m.mergeMissed.Add(float64(n - e.missSeen))
		e.missSeen = n
	}
	if e.stateful != nil {
		e.savedPos = append(e.savedPos, e.collectState(final)...)
	}
	if e.batch.Len() > 0 || !e.state.Empty() {
		e.batch.Token = e.batchToken()
		e.batch.State = e.state
		e.launch(ctx)
	}
	return e.commit(ctx)
}

// commit commits the source up to what the stores acknowledged.
func (e *Engine) commit(ctx context.Context) error {
	e.m.inflight.Set(float64(e.offsets.InFlight()))
	ps := e.offsets.Commit()
	if len(ps) == 0 {
		return nil
	}
	if err := e.d.Source.Commit(ctx, ps); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The data is stored; only the commit failed (a broker restart, a
		// rebalance). Try again at the next flush: until then a restart
		// re-reads a little more, which the state's marks (or dedupe and
		// the stores) absorb.
		e.offsets.Retry(ps)
		e.m.commitErrors.Inc()
		e.d.Logger.Warn().Err(err).Int("positions", len(ps)).Msg("commit failed; retrying at the next flush")
		return nil
	}
	for _, p := range ps {
		e.m.committed.WithLabelValues(p.Stream).Set(float64(p.Offset))
		e.d.Logger.Debug().Str("stream", p.Stream).Int64("next", p.Offset).Msg("committed")
	}
	return nil
}

// batchToken names the batch by what it covers ([schema.BatchTokener]):
// the positions it stores and saves, the saved events it releases, the
// marks and its exchange ids. A batch of exchanges made only of saved
// events has no position of its own; the released events and ids still
// tell it apart.
func (e *Engine) batchToken() string {
	t := &e.tokener
	for _, ps := range [][]Position{e.batchPos, e.savedPos} {
		for _, p := range ps {
			t.Add(p.Offset, p.Stream)
		}
	}
	for _, r := range e.state.Released {
		t.Add(r.Offset, "released\x00", r.Stream, "\x00", r.EventID)
	}
	for _, m := range e.state.Streams {
		t.Add(m.Next, "mark\x00", m.Stream)
	}
	for i := range e.batch.Exchanges {
		t.Add(0, "exchange\x00", e.batch.Exchanges[i].ExchangeID)
	}
	return t.Token()
}
