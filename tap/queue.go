package tap

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/schema"
)

// BatchWriter delivers events to a sink in batches. The [Queue] calls it
// from its one delivery goroutine with a context bounded by
// [QueueConfig.AttemptTimeout]; it should make one attempt and return, the
// Queue retries.
type BatchWriter interface {
	WriteEvents(ctx context.Context, evs []schema.Event) error
}

// ErrRejected marks a sink error that retrying cannot cure (the broker
// refused the message as too large, the topic is forbidden): the Queue
// counts such events as rejected instead of retrying them forever.
var ErrRejected = errors.New("rejected by the sink")

// BatchError is what a [BatchWriter] returns when only some events of a
// batch failed: the Queue retries the events at Retry and counts the ones
// at Rejected. Indexes are into the batch passed to WriteEvents.
type BatchError struct {
	Retry, Rejected []int
	Err             error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("%d events failed, %d rejected: %v", len(e.Retry), len(e.Rejected), e.Err)
}

func (e *BatchError) Unwrap() error { return e.Err }

// Batched adapts a Writer to a BatchWriter that writes events one by one.
func Batched(w Writer) BatchWriter { return batched{w} }

type batched struct{ w Writer }

func (b batched) WriteEvents(ctx context.Context, evs []schema.Event) error {
	var retry []int
	var first error
	for i := range evs {
		if err := b.w.WriteEvent(ctx, evs[i]); err != nil {
			retry = append(retry, i)
			first = cmpOr(first, err)
		}
	}
	if len(retry) == 0 {
		return nil
	}
	return &BatchError{Retry: retry, Err: first}
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// QueueConfig configures a [Queue]. The zero value is usable.
type QueueConfig struct {
	// Size is how many events wait in memory for the sink. Default 10000.
	Size int
	// Batch is the most events handed to the sink in one attempt.
	// Default 500.
	Batch int
	// SpillDir, when set, holds the events that found the memory queue
	// full, as NDJSON segment files, until the sink takes them; at Close
	// it also receives what could not be delivered, and a new Queue on the
	// same directory delivers it first. Empty: such events are dropped and
	// counted.
	SpillDir string
	// MaxSpillBytes caps the spill files together; past it events are
	// dropped and counted. Default 256 MiB.
	MaxSpillBytes int64
	// AttemptTimeout bounds one delivery attempt. Default 10s.
	AttemptTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between failed attempts.
	// Defaults 100ms and 5s.
	RetryMin, RetryMax time.Duration
}

// RegisterFlags registers the queue's flags on fs.
func (c *QueueConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Size, "tap.queue-size", 10000, "events waiting in memory for the sink; a full queue spills to --tap.spill-dir")
	fs.StringVar(&c.SpillDir, "tap.spill-dir", "", "directory for events that do not fit in memory while the sink is slow or down (empty: they are dropped and counted in mcplens_tap_events_total{result=\"dropped\"})")
	fs.Int64Var(&c.MaxSpillBytes, "tap.max-spill-bytes", 256<<20, "cap on the spill files together; past it events are dropped and counted")
	fs.DurationVar(&c.AttemptTimeout, "tap.sink-timeout", 10*time.Second, "bound on one delivery attempt to the sink")
}

// Validate reports every invalid field at once.
func (c *QueueConfig) Validate() error {
	var errs []error
	if c.Size < 0 || c.Batch < 0 || c.MaxSpillBytes < 0 || c.AttemptTimeout < 0 || c.RetryMin < 0 || c.RetryMax < 0 {
		errs = append(errs, errors.New("tap queue: sizes and durations must not be negative"))
	}
	return errors.Join(errs...)
}

func (c QueueConfig) withDefaults() QueueConfig {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Size, 10000)
	def(&c.Batch, 500)
	if c.MaxSpillBytes == 0 {
		c.MaxSpillBytes = 256 << 20
	}
	if c.AttemptTimeout == 0 {
		c.AttemptTimeout = 10 * time.Second
	}
	if c.RetryMin == 0 {
		c.RetryMin = 100 * time.Millisecond
	}
	if c.RetryMax == 0 {
		c.RetryMax = 5 * time.Second
	}
	return c
}

// QueueDeps are the Queue's collaborators.
type QueueDeps struct {
	// Sink receives the events. Required.
	Sink BatchWriter
	// Logger reports sink failures, recoveries and drops. Zero: discard.
	Logger zerolog.Logger
	// Registerer registers the mcplens_tap_* metrics; nil: not registered.
	Registerer prometheus.Registerer
}

// QueueStats counts what happened to the events given to a Queue.
type QueueStats struct {
	Delivered, Spilled, Dropped, Rejected int64
}

// Queue is the [Writer] the tap records into: WriteEvent never waits for
// the sink. Events wait in a bounded memory queue; when it is full they go
// to the spill files, and when those are full (or there are none) they are
// dropped, counted in mcplens_tap_events_total{result="dropped"} and
// logged. One goroutine delivers them in batches, retrying with backoff
// while the sink is down, and delivers the spilled events once it is back.
// It is safe for concurrent use; Close stops it.
type Queue struct {
	cfg  QueueConfig
	sink BatchWriter
	log  zerolog.Logger
	m    queueMetrics

	ch      chan schema.Event
	spill   *spill // nil without SpillDir
	closing chan struct{}
	once    sync.Once
	// abortCtx ends delivery attempts and backoffs when Close runs out of
	// time.
	abortCtx context.Context
	abort    context.CancelFunc
	done     chan struct{}

	mu      sync.RWMutex // held for writing once the goroutine has stopped
	stopped bool

	delivered, spilled, dropped, rejected atomic.Int64
	lastDropLog                           atomic.Int64 // unix nanos
}

// NewQueue starts a Queue in front of deps.Sink. Events a previous Queue
// spilled into cfg.SpillDir are delivered first.
func NewQueue(cfg QueueConfig, deps QueueDeps) (*Queue, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Sink == nil {
		return nil, errors.New("tap queue: a sink is required")
	}
	cfg = cfg.withDefaults()
	q := &Queue{
		cfg: cfg, sink: deps.Sink, log: deps.Logger, m: newQueueMetrics(deps.Registerer),
		ch:      make(chan schema.Event, cfg.Size),
		closing: make(chan struct{}), done: make(chan struct{}),
	}
	q.abortCtx, q.abort = context.WithCancel(context.Background())
	if cfg.SpillDir != "" {
		sp, err := openSpill(cfg.SpillDir, cfg.MaxSpillBytes)
		if err != nil {
			return nil, err
		}
		q.spill = sp
		q.m.spillBytes.Set(float64(sp.size()))
		if n := sp.size(); n > 0 {
			q.log.Info().Int64("bytes", n).Str("dir", cfg.SpillDir).Msg("tap: delivering events spilled by an earlier run")
		}
	}
	go q.run()
	return q, nil
}

// WriteEvent queues ev without waiting: into memory, else the spill files,
// else it is dropped and counted. It returns an error only for a drop.
func (q *Queue) WriteEvent(_ context.Context, ev schema.Event) error {
	q.mu.RLock()
	stopped := q.stopped
	if !stopped {
		select {
		case q.ch <- ev:
			q.mu.RUnlock()
			q.m.queued.Set(float64(len(q.ch)))
			return nil
		default:
		}
	}
	q.mu.RUnlock()
	return q.overflow(ev)
}

// overflow spills ev, or drops and counts it.
func (q *Queue) overflow(ev schema.Event) error {
	var err error
	if q.spill != nil {
		var line []byte
		if line, err = MarshalLine(ev); err == nil {
			if err = q.spill.add(line); err == nil {
				q.spilled.Add(1)
				q.m.events.WithLabelValues("spilled").Inc()
				q.m.spillBytes.Set(float64(q.spill.size()))
				return nil
			}
		}
	} else {
		err = errors.New("memory queue full and no spill directory")
	}
	q.drop(1, "dropped", err)
	return fmt.Errorf("tap: event %s dropped: %w", ev.EventID, err)
}

// drop counts n lost events and logs it, at most once a second (the count
// in the log line is the running total).
func (q *Queue) drop(n int, result string, err error) {
	total := q.dropped.Add(int64(n))
	if result == "rejected" {
		total = q.rejected.Add(int64(n))
	}
	q.m.events.WithLabelValues(result).Add(float64(n))
	now := time.Now().UnixNano()
	last := q.lastDropLog.Load()
	if now-last >= int64(time.Second) && q.lastDropLog.CompareAndSwap(last, now) {
		q.log.Error().Err(err).Str("result", result).Int64("total", total).Msg("tap: events lost: not delivered to the sink")
	}
}

// Stats returns the counts so far.
func (q *Queue) Stats() QueueStats {
	return QueueStats{Delivered: q.delivered.Load(), Spilled: q.spilled.Load(), Dropped: q.dropped.Load(), Rejected: q.rejected.Load()}
}

// Close delivers what waits in memory while ctx lasts, then spills the
// rest (or counts it as dropped without a spill directory) and stops.
// Spilled events stay in SpillDir for the next Queue. Events written after
// Close go straight to the spill files.
func (q *Queue) Close(ctx context.Context) error {
	q.once.Do(func() { close(q.closing) })
	select {
	case <-q.done:
	case <-ctx.Done():
		q.abort()
		<-q.done
	}
	q.abort()
	if q.spill != nil {
		return q.spill.close()
	}
	return nil
}
