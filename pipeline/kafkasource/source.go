// Package kafkasource is a pipeline.Source that reads one Kafka topic as a
// member of a consumer group, through kafka-go's ConsumerGroup and one
// partition Reader per assigned partition.
//
// Offsets are committed only when the pipeline calls Commit, after its sink
// has made the batch durable, and one Commit sends one OffsetCommit request
// for all its partitions: never one commit per message.
//
// Order across partitions: each partition is read ahead into its own
// buffer, and Fetch hands out the buffered message with the oldest Kafka
// timestamp (the producer's or the log's append time). While a partition
// known to have more messages has nothing buffered, Fetch waits for it, up
// to AlignWait, before handing out a later message of another partition.
// So an ingester catching up reads its partitions side by side in time, as
// they were written, instead of as fast as each partition's fetches happen
// to return: the engine merges the views of one exchange that arrive on
// different partitions within its merge window, and a partition left
// behind would otherwise stay behind. A partition that is caught up (or
// stalled past AlignWait) is not waited for, so live traffic is not
// delayed.
//
// Rebalances: every generation of the group starts with a message that
// carries the member's new assignment (pipeline.Assignment), before any
// message of that generation; messages of an earlier generation still
// buffered are dropped. Each assigned partition is read from the group's
// committed offset, so messages fetched but not yet committed before a
// rebalance (or a crash) are delivered again, to this member or another
// one. The engine hands over what it holds of a partition it lost, and
// loads the state of one it gained, when it reads the assignment. Commit
// skips partitions this member is no longer assigned.
package kafkasource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/mcplens/mcplens/pipeline"
)

// retryDelay spaces out the warnings while the group or a partition
// reader heals after an error, and is how long a failed join waits.
const retryDelay = time.Second

// Source reads a topic as a consumer group member. Like any pipeline.Source
// it is used by one goroutine at a time; Close may be called from another.
type Source struct {
	cfg     Config
	log     zerolog.Logger
	dialer  *kafka.Dialer
	group   *kafka.ConsumerGroup
	metrics *metrics
	probe   *prober
	ctx     context.Context // ends at Close
	stop    context.CancelFunc
	done    chan struct{} // closed when the generation loop returned
	wake    chan struct{} // signalled when a buffer or the generation changes
	aligned prometheus.Counter
	now     func() time.Time

	mu       sync.Mutex
	parts    map[int]*partition
	gen      *kafka.Generation // the current generation, nil before the first
	assigned map[int]bool      // its partitions
	next     *feed             // the current generation's buffers

	cur *feed // the generation Fetch hands out; used by Fetch alone
}

var (
	_ pipeline.Source   = (*Source)(nil)
	_ pipeline.Assigner = (*Source)(nil)
)

// New validates cfg (zero fields take their defaults), registers the
// source's gauges on reg (nil: none) and joins the group in the
// background. It does not wait for the broker: Fetch blocks until the
// first generation's assignment.
func New(cfg Config, logger zerolog.Logger, reg prometheus.Registerer) (*Source, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new kafka source: %w", err)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("new kafka source: %w", err)
	}
	clientID := newClientID()
	logger = logger.With().Str("source", "kafka").Str("topic", cfg.Topic).Str("group", cfg.Group).Str("client_id", clientID).Logger()
	dialer := &kafka.Dialer{ClientID: clientID, Timeout: 10 * time.Second, DualStack: true}
	group, err := kafka.NewConsumerGroup(cfg.groupConfig(logger, dialer))
	if err != nil {
		return nil, fmt.Errorf("new kafka source: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Source{
		cfg: cfg, log: logger, dialer: dialer, group: group, metrics: m, probe: newProber(cfg, clientID),
		ctx: ctx, stop: stop, done: make(chan struct{}), wake: make(chan struct{}, 1), now: time.Now,
		parts: map[int]*partition{}, aligned: m.aligned.WithLabelValues(cfg.Topic),
	}
	go s.run()
	return s, nil
}

// groupConfig is the adapter from Config to kafka-go's group options.
func (c Config) groupConfig(logger zerolog.Logger, dialer *kafka.Dialer) kafka.ConsumerGroupConfig {
	start := kafka.FirstOffset
	if c.Start == StartLast {
		start = kafka.LastOffset
	}
	return kafka.ConsumerGroupConfig{
		ID:                    c.Group,
		Brokers:               c.Brokers,
		Dialer:                dialer,
		Topics:                []string{c.Topic},
		HeartbeatInterval:     c.Heartbeat,
		SessionTimeout:        c.SessionTimeout,
		RebalanceTimeout:      c.RebalanceTimeout,
		JoinGroupBackoff:      retryDelay,
		WatchPartitionChanges: true,
		StartOffset:           start,
		Logger:                logTo(logger.Debug),
		ErrorLogger:           logTo(logger.Warn),
	}
}

// readerConfig is the adapter from Config to one partition's Reader.
func (c Config) readerConfig(logger zerolog.Logger, dialer *kafka.Dialer, partition int) kafka.ReaderConfig {
	return kafka.ReaderConfig{
		Brokers:       c.Brokers,
		Topic:         c.Topic,
		Partition:     partition,
		MinBytes:      c.MinBytes,
		MaxBytes:      c.MaxBytes,
		MaxWait:       c.MaxWait,
		QueueCapacity: max(1, c.QueueCapacity/4),
		// The lag comes from each message's high-water mark (message).
		ReadLagInterval: -1,
		Dialer:          dialer,
		Logger:          logTo(logger.Debug),
		ErrorLogger:     logTo(logger.Warn),
	}
}

// run joins each generation of the group in turn until Close.
func (s *Source) run() {
	defer close(s.done)
	for {
		gen, err := s.group.Next(s.ctx)
		switch {
		case s.ctx.Err() != nil || errors.Is(err, kafka.ErrGroupClosed):
			return
		case err != nil:
			s.log.Warn().Err(err).Msg("join consumer group failed; retrying")
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(retryDelay):
			}
			continue
		}
		s.begin(gen)
	}
}

// begin makes gen the current generation: its assignment is handed out
// first, then one reader per partition buffers its messages until the
// generation ends (a rebalance) or the Source closes.
func (s *Source) begin(gen *kafka.Generation) {
	parts := gen.Assignments[s.cfg.Topic]
	slices.SortFunc(parts, func(a, b kafka.PartitionAssignment) int { return a.ID - b.ID })
	assign := &pipeline.Assignment{Streams: make([]pipeline.Position, 0, len(parts))}
	bufs := make([]*buffer, 0, len(parts))
	capacity := max(1, s.cfg.QueueCapacity/max(1, len(parts)))
	ids := make([]int, 0, len(parts))
	s.mu.Lock()
	s.gen, s.assigned = gen, map[int]bool{}
	for _, pa := range parts {
		p := s.partitionLocked(pa.ID)
		p.committed = max(pa.Offset, 0)
		s.assigned[pa.ID] = true
		assign.Streams = append(assign.Streams, pipeline.Position{Stream: p.stream, Topic: s.cfg.Topic, Partition: pa.ID, Offset: max(pa.Offset, 0)})
		// Nothing is known of a new partition: it is waited for (up to
		// AlignWait) until its lag is read (learnLag) or a message comes.
		b := &buffer{id: pa.ID, ch: make(chan kafka.Message, capacity), behind: true}
		b.startLag.Store(-1)
		bufs = append(bufs, b)
		ids = append(ids, pa.ID)
	}
	f := newFeed(assign, bufs)
	s.next = f
	s.mu.Unlock()
	s.signal()
	s.log.Info().Int32("generation", gen.ID).Ints("partitions", ids).Msg("consumer group generation: partitions assigned")
	for i, pa := range parts {
		gen.Start(func(ctx context.Context) { s.read(ctx, pa, f, f.parts[i]) })
	}
}

// signal wakes a Fetch waiting for a buffer or a generation.
func (s *Source) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// read buffers one partition's messages from its assigned offset, and
// meanwhile finds how many there are (learnLag), so that Fetch does not
// wait for a partition with nothing to read.
func (s *Source) read(ctx context.Context, pa kafka.PartitionAssignment, f *feed, b *buffer) {
	r := kafka.NewReader(s.cfg.readerConfig(s.log, s.dialer, pa.ID))
	defer func() {
		if err := r.Close(); err != nil {
			s.log.Debug().Err(err).Int("partition", pa.ID).Msg("close partition reader")
		}
	}()
	if err := r.SetOffset(pa.Offset); err != nil {
		s.log.Error().Err(err).Int("partition", pa.ID).Int64("offset", pa.Offset).Msg("set partition offset")
		return
	}
	lctx, stopLag := context.WithCancel(ctx)
	finished, learning := make(chan struct{}), true
	go func() {
		defer close(finished)
		s.learnLag(lctx, r, pa.ID, b)
	}()
	defer func() {
		stopLag()
		<-finished
	}()
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn().Err(err).Int("partition", pa.ID).Msg("fetch from kafka failed; retrying")
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryDelay):
			}
			continue
		}
		if learning {
			stopLag() // the partition's messages speak for themselves now
			learning = false
		}
		if !f.put(ctx, b, m) {
			return
		}
		s.signal()
	}
}

// readLag is how learnLag asks a partition's reader for its lag (a test
// makes it fail).
var readLag = func(ctx context.Context, r *kafka.Reader) (int64, error) { return r.ReadLag(ctx) }

// learnLag finds how many messages b's partition holds from the assigned
// offset on, beside the reader's fetching, so that Fetch does not wait
// for a partition with nothing to read. Until it knows, the partition
// counts as behind and Fetch holds later messages of the others back for
// it, up to AlignWait. A failed read (a broker slow to answer, a leader
// that moved, a topic just created) is tried again, backing off to 5 s,
// until one succeeds, the partition's first message comes, or ctx ends:
// read once, as before, a failure made a later message wait the whole
// AlignWait even when the partition was empty (a test with an hour's
// AlignWait hung under load).
func (s *Source) learnLag(ctx context.Context, r *kafka.Reader, partition int, b *buffer) {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		lag, err := readLag(actx, r)
		cancel()
		if err == nil {
			b.startLag.Store(max(lag, 0))
			s.signal()
			return
		}
		if ctx.Err() != nil {
			return
		}
		ev := s.log.Debug()
		if attempt == 3 {
			ev = s.log.Warn()
		}
		ev.Err(err).Int("partition", partition).Int("attempt", attempt).Dur("retry_in", backoff).Msg("read partition lag failed; until it is read, later messages of other partitions may wait for this one up to align_wait")
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// AssignsStreams implements pipeline.Assigner: every generation's
// assignment comes as a message.
func (s *Source) AssignsStreams() {}

// logTo adapts a zerolog level to kafka-go's Printf-style logger, without
// formatting when the level is off.
func logTo(level func() *zerolog.Event) kafka.LoggerFunc {
	return func(msg string, args ...any) {
		if e := level(); e.Enabled() {
			e.Msg(strings.TrimSpace(fmt.Sprintf(msg, args...)))
		}
	}
}

// Fetch returns the next message of the current generation, with
// Pos.Offset the message's own offset, or the generation's assignment
// (Message.Assignment) before its first message. Of the partitions'
// buffered messages it returns the one with the oldest timestamp, after
// waiting up to AlignWait for a partition that is behind and has nothing
// buffered (see the package comment). It blocks until a message is there,
// ctx ends (ctx.Err()) or the Source is closed (io.EOF). Errors the group
// and readers recover from by themselves (a broker restart, a failed join)
// are logged and waited out, not returned.
func (s *Source) Fetch(ctx context.Context) (pipeline.Message, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.mu.Lock()
		next := s.next
		s.mu.Unlock()
		if next != s.cur { // a new generation: the old one's buffers are dropped
			s.cur = next
		}
		var wait time.Duration
		if f := s.cur; f != nil {
			if !f.told {
				f.told = true
				return pipeline.Message{Assignment: f.assign}, nil
			}
			var b *buffer
			b, wait = f.pick(s.now(), s.cfg.AlignWait)
			if b != nil {
				m := b.take()
				return s.message(m), nil
			}
		}
		var expire <-chan time.Time
		if wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			expire = timer.C
		}
		began := s.now()
		select {
		case <-ctx.Done():
			return pipeline.Message{}, ctx.Err()
		case <-s.ctx.Done():
			return pipeline.Message{}, io.EOF
		case <-s.wake:
		case <-expire:
		}
		if wait > 0 {
			s.aligned.Add(s.now().Sub(began).Seconds())
		}
	}
}

func (s *Source) message(m kafka.Message) pipeline.Message {
	p := s.partition(m.Partition)
	lag := lagAfter(m)
	p.lag.Set(float64(lag))
	s.mu.Lock()
	p.lagNow = lag
	s.mu.Unlock()
	return pipeline.Message{
		Value: m.Value,
		Pos: pipeline.Position{
			Stream:    p.stream,
			Topic:     m.Topic,
			Partition: m.Partition,
			Offset:    m.Offset,
		},
	}
}

func (s *Source) partition(n int) *partition {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.partitionLocked(n)
}

func (s *Source) partitionLocked(n int) *partition {
	p, ok := s.parts[n]
	if !ok {
		p = s.metrics.partition(s.cfg.Topic, n)
		s.parts[n] = p
	}
	return p
}

// Lag is the sum over the partitions fetched from of the messages after the
// last one fetched, as of each partition's last fetch, and how many
// partitions that covers. Safe for concurrent use; progress reports use it.
func (s *Source) Lag() (messages int64, partitions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.parts {
		messages += p.lagNow
	}
	return messages, len(s.parts)
}

// Commit records, for each position's partition, that every message before
// next.Offset is handled: the group resumes there. Positions of partitions
// this member is no longer assigned (their new owner commits them) and
// positions that do not move a partition past what was last committed are
// skipped, so a commit never goes backwards; all others go in one
// synchronous request of the current generation.
func (s *Source) Commit(_ context.Context, next []pipeline.Position) error {
	s.mu.Lock()
	gen, assigned := s.gen, s.assigned
	want := map[int]int64{}
	for _, pos := range next {
		if pos.Topic != s.cfg.Topic {
			s.mu.Unlock()
			return fmt.Errorf("commit position %s: not of topic %q", pos, s.cfg.Topic)
		}
		if !assigned[pos.Partition] || pos.Offset <= 0 || pos.Offset <= s.partitionLocked(pos.Partition).committed {
			continue
		}
		want[pos.Partition] = max(want[pos.Partition], pos.Offset)
	}
	s.mu.Unlock()
	if len(want) == 0 {
		return nil
	}
	if err := gen.CommitOffsets(map[string]map[int]int64{s.cfg.Topic: want}); err != nil {
		return fmt.Errorf("commit offsets of topic %q for group %q: %w", s.cfg.Topic, s.cfg.Group, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, off := range want {
		p := s.partitionLocked(n)
		p.committed = max(p.committed, off)
		p.offset.Set(float64(p.committed))
	}
	return nil
}

// Close leaves the group and stops the readers; a Fetch in progress
// returns io.EOF. Uncommitted messages are delivered again to the next
// member. The Source's gauges are removed. Close is safe to call more than
// once.
func (s *Source) Close() error {
	s.stop()
	err := s.group.Close()
	<-s.done
	s.probe.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := range s.parts {
		s.metrics.forget(s.cfg.Topic, n)
	}
	s.metrics.aligned.DeleteLabelValues(s.cfg.Topic)
	clear(s.parts)
	if err != nil && !errors.Is(err, kafka.ErrGroupClosed) {
		return fmt.Errorf("close kafka consumer group: %w", err)
	}
	return nil
}
