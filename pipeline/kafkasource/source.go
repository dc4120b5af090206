// Package kafkasource is a pipeline.Source that reads one Kafka topic as a
// member of a consumer group, through kafka-go's Reader.
//
// Offsets are committed only when the pipeline calls Commit, after its sink
// has made the batch durable, and one Commit sends one OffsetCommit request
// for all its partitions: never one commit per message.
//
// Rebalances are handled by kafka-go: when the group's membership changes,
// the Reader joins the new generation, drops messages it had buffered for
// the old one, and resumes each partition it is assigned at the group's
// committed offset. Messages fetched but not yet committed before a
// rebalance (or a crash) are therefore delivered again, to this member or
// another one; the pipeline's dedupe on event_id absorbs them. Delivery is
// at least once.
package kafkasource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/mcplens/mcplens/pipeline"
)

// retryDelay spaces out the warnings while the Reader heals after an error.
const retryDelay = time.Second

// Source reads a topic as a consumer group member. Like any pipeline.Source
// it is used by one goroutine at a time; Close may be called from another.
type Source struct {
	cfg     Config
	log     zerolog.Logger
	reader  *kafka.Reader
	metrics *metrics
	probe   *prober

	mu    sync.Mutex
	parts map[int]*partition
}

var _ pipeline.Source = (*Source)(nil)

// New validates cfg (zero fields take their defaults), registers the
// source's gauges on reg (nil: none) and starts a group Reader. It does not
// wait for the broker: the Reader connects and joins the group in the
// background, and Fetch blocks until it has messages.
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
	return &Source{
		cfg:     cfg,
		log:     logger,
		reader:  kafka.NewReader(cfg.readerConfig(logger, clientID)),
		metrics: m,
		probe:   newProber(cfg, clientID),
		parts:   map[int]*partition{},
	}, nil
}

// readerConfig is the one adapter from Config to kafka-go options.
func (c Config) readerConfig(logger zerolog.Logger, clientID string) kafka.ReaderConfig {
	start := kafka.FirstOffset
	if c.Start == StartLast {
		start = kafka.LastOffset
	}
	return kafka.ReaderConfig{
		Brokers:               c.Brokers,
		GroupID:               c.Group,
		Topic:                 c.Topic,
		StartOffset:           start,
		MinBytes:              c.MinBytes,
		MaxBytes:              c.MaxBytes,
		MaxWait:               c.MaxWait,
		QueueCapacity:         c.QueueCapacity,
		SessionTimeout:        c.SessionTimeout,
		RebalanceTimeout:      c.RebalanceTimeout,
		CommitInterval:        0, // synchronous: Commit returns once the broker has the offsets
		WatchPartitionChanges: true,
		Dialer:                &kafka.Dialer{ClientID: clientID, Timeout: 10 * time.Second, DualStack: true},
		Logger:                logTo(logger.Debug),
		ErrorLogger:           logTo(logger.Warn),
	}
}

// logTo adapts a zerolog level to kafka-go's Printf-style logger, without
// formatting when the level is off.
func logTo(level func() *zerolog.Event) kafka.LoggerFunc {
	return func(msg string, args ...any) {
		if e := level(); e.Enabled() {
			e.Msg(strings.TrimSpace(fmt.Sprintf(msg, args...)))
		}
	}
}

// Fetch returns the next message of any assigned partition, with Pos.Offset
// the message's own offset. It blocks until a message arrives, ctx ends
// (ctx.Err()) or the Source is closed (io.EOF). Errors the Reader recovers
// from by itself (a broker restart, a failed group join) are logged and
// waited out, not returned.
func (s *Source) Fetch(ctx context.Context) (pipeline.Message, error) {
	for {
		m, err := s.reader.FetchMessage(ctx)
		switch {
		case err == nil:
			return s.message(m), nil
		case ctx.Err() != nil:
			return pipeline.Message{}, ctx.Err()
		case errors.Is(err, io.EOF):
			return pipeline.Message{}, io.EOF
		}
		s.log.Warn().Err(err).Msg("fetch from kafka failed; retrying")
		select {
		case <-ctx.Done():
			return pipeline.Message{}, ctx.Err()
		case <-time.After(retryDelay):
		}
	}
}

func (s *Source) message(m kafka.Message) pipeline.Message {
	p := s.partition(m.Partition)
	lag := max(0, m.HighWaterMark-m.Offset-1)
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
// next.Offset is handled: the group resumes there. Positions that do not
// move a partition past what this Source last committed are skipped, so a
// commit never goes backwards; all others go in one synchronous request.
func (s *Source) Commit(ctx context.Context, next []pipeline.Position) error {
	want := map[int]int64{}
	for _, pos := range next {
		if pos.Topic != s.cfg.Topic {
			return fmt.Errorf("commit position %s: not of topic %q", pos, s.cfg.Topic)
		}
		if pos.Offset > want[pos.Partition] {
			want[pos.Partition] = pos.Offset
		}
	}
	var msgs []kafka.Message
	for n, off := range want {
		if off <= 0 || off <= s.partition(n).committed {
			continue
		}
		// kafka-go commits msg.Offset+1, the next offset to read.
		msgs = append(msgs, kafka.Message{Topic: s.cfg.Topic, Partition: n, Offset: off - 1})
	}
	if len(msgs) == 0 {
		return nil
	}
	if err := s.reader.CommitMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("commit offsets of topic %q for group %q: %w", s.cfg.Topic, s.cfg.Group, err)
	}
	for _, m := range msgs {
		p := s.partition(m.Partition)
		p.committed = m.Offset + 1
		p.offset.Set(float64(p.committed))
	}
	return nil
}

// Close leaves the group and stops the Reader; a Fetch in progress returns
// io.EOF. Uncommitted messages are delivered again to the next member. The
// Source's gauges are removed. Close is safe to call more than once.
func (s *Source) Close() error {
	err := s.reader.Close()
	s.probe.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := range s.parts {
		s.metrics.forget(s.cfg.Topic, n)
	}
	clear(s.parts)
	if err != nil {
		return fmt.Errorf("close kafka reader: %w", err)
	}
	return nil
}
