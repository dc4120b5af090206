package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/tap"
)

// openSink returns the sink for --to and how to close it. Every sink sits
// behind a tap.Queue, so none of them can hold up a call.
func openSink(to string, attempt time.Duration) (tap.BatchWriter, func() error, error) {
	switch {
	case to == "stdout":
		return tap.Batched(tap.NewNDJSON(os.Stdout)), func() error { return nil }, nil
	case strings.HasPrefix(to, "file:"):
		path := strings.TrimPrefix(to, "file:")
		if path == "" {
			return nil, nil, fmt.Errorf("--to %q: want file:PATH", to)
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("open event file: %w", err)
		}
		return tap.Batched(tap.NewNDJSON(f)), f.Close, nil
	case strings.HasPrefix(to, "kafka://"):
		rest := strings.TrimPrefix(to, "kafka://")
		hosts, topic, ok := strings.Cut(rest, "/")
		if !ok || hosts == "" || topic == "" || strings.ContainsAny(topic, "/?") {
			return nil, nil, fmt.Errorf("--to %q: want kafka://HOST:PORT[,HOST:PORT]/TOPIC", to)
		}
		w := &kafka.Writer{
			Addr:         kafka.TCP(strings.Split(hosts, ",")...),
			Topic:        topic,
			Balancer:     &kafka.Hash{},
			BatchTimeout: 5 * time.Millisecond,
			BatchSize:    500,
			RequiredAcks: kafka.RequireAll,
			Compression:  kafka.Lz4,
			// The queue retries; one attempt here is one try per message.
			MaxAttempts:  1,
			WriteTimeout: attempt,
			ReadTimeout:  attempt,
			// A new topic is created on first use where the broker allows
			// it (auto.create.topics.enable); production clusters create
			// it ahead with the partitions they want.
			AllowAutoTopicCreation: true,
			// After a broker restart the first metadata can show a
			// partition without a leader; kafka-go keeps metadata for its
			// TTL (6 s by default) and fails every produce meanwhile, which
			// outlasts a graceful stop. Refresh it every second instead.
			Transport: &kafka.Transport{MetadataTTL: time.Second},
		}
		return kafkaSink{w}, w.Close, nil
	}
	return nil, nil, fmt.Errorf("--to %q: want stdout, file:PATH or kafka://HOST:PORT/TOPIC", to)
}

// kafkaSink produces each event keyed by session (else exchange id), so
// that all of a session's traffic lands in one partition and one consumer.
type kafkaSink struct{ w *kafka.Writer }

// WriteEvents makes one produce attempt for the batch; the tap.Queue
// retries what failed with a retriable error.
func (k kafkaSink) WriteEvents(ctx context.Context, evs []schema.Event) error {
	msgs := make([]kafka.Message, 0, len(evs))
	var bad []int
	for i := range evs {
		line, err := tap.MarshalLine(evs[i])
		if err != nil {
			bad = append(bad, i)
			continue
		}
		key := evs[i].SessionID
		if key == "" {
			key = evs[i].ExchangeID
		}
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: line})
	}
	idx := make([]int, 0, len(msgs)) // message index -> event index
	for i := range evs {
		if !slices.Contains(bad, i) {
			idx = append(idx, i)
		}
	}
	err := k.w.WriteMessages(ctx, msgs...)
	if err == nil && len(bad) == 0 {
		return nil
	}
	be := &tap.BatchError{Rejected: bad, Err: err}
	if err == nil {
		be.Err = errors.New("event does not encode")
		return be
	}
	var wes kafka.WriteErrors
	if !errors.As(err, &wes) {
		if !retriable(err) {
			return fmt.Errorf("%w: %w", tap.ErrRejected, err)
		}
		be.Retry = idx
		return be
	}
	for i, e := range wes {
		switch {
		case e == nil:
		case retriable(e):
			be.Retry = append(be.Retry, idx[i])
		default:
			be.Rejected = append(be.Rejected, idx[i])
		}
	}
	return be
}

// retriable reports whether a produce error may go away: anything but a
// Kafka error the broker calls permanent (a message too large, an invalid
// or forbidden topic). A restarting broker answers with network errors,
// unknown topics and partitions without a leader for a while.
func retriable(err error) bool {
	var kerr kafka.Error
	if errors.As(err, &kerr) {
		return kerr.Temporary() || kerr == kafka.UnknownTopicOrPartition || kerr == kafka.LeaderNotAvailable ||
			kerr == kafka.NotLeaderForPartition || kerr == kafka.RequestTimedOut
	}
	return true
}
