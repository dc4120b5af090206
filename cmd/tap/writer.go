package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/tap"
)

// openWriter returns the event writer for --to and how to close it.
func openWriter(to string) (tap.Writer, func() error, error) {
	switch {
	case to == "stdout":
		return tap.NewNDJSON(os.Stdout), func() error { return nil }, nil
	case strings.HasPrefix(to, "file:"):
		path := strings.TrimPrefix(to, "file:")
		if path == "" {
			return nil, nil, fmt.Errorf("--to %q: want file:PATH", to)
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("open event file: %w", err)
		}
		return tap.NewNDJSON(f), f.Close, nil
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
			RequiredAcks: kafka.RequireAll,
			Compression:  kafka.Lz4,
			// A new topic is created on first use where the broker allows
			// it (auto.create.topics.enable); production clusters create
			// it ahead with the partitions they want.
			AllowAutoTopicCreation: true,
		}
		return kafkaWriter{w}, w.Close, nil
	}
	return nil, nil, fmt.Errorf("--to %q: want stdout, file:PATH or kafka://HOST:PORT/TOPIC", to)
}

// kafkaWriter produces each event keyed by session (else exchange id), so
// that all of a session's traffic lands in one partition and one consumer.
type kafkaWriter struct{ w *kafka.Writer }

func (k kafkaWriter) WriteEvent(ctx context.Context, ev schema.Event) error {
	line, err := tap.MarshalLine(ev)
	if err != nil {
		return err
	}
	key := ev.SessionID
	if key == "" {
		key = ev.ExchangeID
	}
	// The client already has its response; the event may wait for a broker
	// that restarts or moves a partition leader, up to produceTimeout.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), produceTimeout)
	defer cancel()
	backoff := 100 * time.Millisecond
	for {
		err := k.w.WriteMessages(ctx, kafka.Message{Key: []byte(key), Value: line})
		if err == nil {
			return nil
		}
		if !retriable(err) || ctx.Err() != nil {
			return fmt.Errorf("produce event %s: %w", ev.EventID, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("produce event %s: %w", ev.EventID, err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// produceTimeout bounds how long one event may wait for the broker.
const produceTimeout = 60 * time.Second

// retriable reports whether a produce error may go away: anything but a
// Kafka error the broker calls permanent (a message too large, an invalid
// or forbidden topic). A restarting broker answers with network errors,
// unknown topics and partitions without a leader for a while.
func retriable(err error) bool {
	var wes kafka.WriteErrors
	if errors.As(err, &wes) {
		for _, e := range wes {
			if e != nil && !retriable(e) {
				return false
			}
		}
		return true
	}
	var kerr kafka.Error
	if errors.As(err, &kerr) {
		return kerr.Temporary() || kerr == kafka.UnknownTopicOrPartition || kerr == kafka.LeaderNotAvailable ||
			kerr == kafka.NotLeaderForPartition || kerr == kafka.RequestTimedOut
	}
	return true
}
