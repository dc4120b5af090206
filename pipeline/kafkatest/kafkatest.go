// Package kafkatest connects tests to the real Kafka broker that
// deploy/kafka/kafka.sh starts (like Loki's testkafka): it finds the broker,
// makes throwaway topics and produces records synchronously.
//
// Tests call Brokers first. Without MCPLENS_KAFKA_BROKERS they skip, except
// under CI=true, where they fail: CI must never pass by skipping Kafka.
package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// EnvBrokers names the variable holding comma-separated broker addresses,
// as printed by `deploy/kafka/kafka.sh start`.
const EnvBrokers = "MCPLENS_KAFKA_BROKERS"

// opTimeout bounds each admin or produce call made by the helpers.
const opTimeout = 30 * time.Second

// Brokers returns the broker list from MCPLENS_KAFKA_BROKERS. When it is
// unset it skips the test, or fails it when CI=true.
func Brokers(t testing.TB) string {
	t.Helper()
	if b := strings.TrimSpace(os.Getenv(EnvBrokers)); b != "" {
		return b
	}
	const how = "start a broker with `deploy/kafka/kafka.sh start` and export its output"
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not set under CI=true: %s", EnvBrokers, how)
		return ""
	}
	t.Skipf("%s is not set: %s", EnvBrokers, how)
	return ""
}

// Addrs splits a comma-separated broker list into addresses.
func Addrs(brokers string) []string {
	var addrs []string
	for _, a := range strings.Split(brokers, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// UniqueName returns prefix, the sanitized test name and a random suffix,
// valid as a Kafka topic or group name.
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("read random suffix: %v", err)
	}
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, t.Name())
	if len(name) > 100 {
		name = name[:100]
	}
	return prefix + "-" + name + "-" + hex.EncodeToString(b[:])
}

// NewTopic creates a uniquely named topic with the given number of
// partitions (replication factor 1), waits until every partition has a
// leader, and deletes the topic when the test ends.
func NewTopic(t testing.TB, brokers string, partitions int) string {
	t.Helper()
	topic := UniqueName(t, "mcplens-test")
	client, done := newClient(brokers)
	defer done()

	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	res, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: 1,
	}}})
	if err == nil {
		err = res.Errors[topic]
	}
	if err != nil {
		t.Fatalf("create topic %q: %v", topic, err)
	}
	t.Cleanup(func() { deleteTopic(t, brokers, topic) })

	if err := waitLeaders(ctx, client, topic, partitions); err != nil {
		t.Fatalf("wait for topic %q: %v", topic, err)
	}
	return topic
}

func deleteTopic(t testing.TB, brokers, topic string) {
	client, done := newClient(brokers)
	defer done()
	// t.Context is already canceled when cleanups run.
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	res, err := client.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err == nil {
		err = res.Errors[topic]
	}
	if err != nil {
		// The broker may be down on purpose (restart tests): not a failure.
		t.Logf("delete topic %q: %v", topic, err)
	}
}

func waitLeaders(ctx context.Context, client *kafka.Client, topic string, partitions int) error {
	for {
		err := topicReady(ctx, client, topic, partitions)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func topicReady(ctx context.Context, client *kafka.Client, topic string, partitions int) error {
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return err
	}
	for _, tp := range md.Topics {
		if tp.Name != topic {
			continue
		}
		if tp.Error != nil {
			return tp.Error
		}
		if len(tp.Partitions) != partitions {
			return fmt.Errorf("%d of %d partitions visible", len(tp.Partitions), partitions)
		}
		for _, p := range tp.Partitions {
			if p.Error != nil || p.Leader.Host == "" {
				return fmt.Errorf("partition %d has no leader (%v)", p.ID, p.Error)
			}
		}
		return nil
	}
	return errors.New("topic not in metadata")
}

// newClient returns a client with its own transport, so metadata is fresh
// and no pooled connection outlives the helper call.
func newClient(brokers string) (*kafka.Client, func()) {
	tr := &kafka.Transport{ClientID: "mcplens-kafkatest", MetadataTTL: time.Second}
	return &kafka.Client{Addr: kafka.TCP(Addrs(brokers)...), Timeout: opTimeout, Transport: tr},
		tr.CloseIdleConnections
}

// Committed returns the sum over topic's partitions of group's committed
// offsets as the broker holds them (a partition without a commit counts
// 0): how many messages the group has handled, whichever member
// committed them. A retriable broker error (no coordinator yet, as on a
// broker started moments ago, or one loading its offsets) is retried
// until opTimeout.
func Committed(brokers, group, topic string) (int64, error) {
	client, done := newClient(brokers)
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var resp *kafka.OffsetFetchResponse
	var err error
	for {
		// No topics: every partition the group has committed.
		resp, err = client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group})
		if err == nil {
			err = resp.Error
		}
		var kerr kafka.Error
		if err == nil || !errors.As(err, &kerr) || !kerr.Temporary() || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return 0, fmt.Errorf("fetch the offsets of group %q: %w", group, err)
	}
	var n int64
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			return 0, fmt.Errorf("fetch the offset of group %q, partition %d: %w", group, p.Partition, p.Error)
		}
		n += max(p.CommittedOffset, 0)
	}
	return n, nil
}
