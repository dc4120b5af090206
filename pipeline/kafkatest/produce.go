package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// Record is one message for ProduceRecords.
type Record struct {
	// Partition the record goes to; 0 by default.
	Partition int
	// Key is optional; nil means no key.
	Key   []byte
	Value []byte
	// Time is the record's timestamp; zero lets the client set it.
	Time time.Time
}

// Produce writes values, in order, to partition 0 of topic and returns once
// all are acknowledged by every in-sync replica. On a fresh topic they get
// offsets 0..len(values)-1.
func Produce(t testing.TB, brokers, topic string, values ...[]byte) {
	t.Helper()
	records := make([]Record, len(values))
	for i, v := range values {
		records[i] = Record{Value: v}
	}
	ProduceRecords(t, brokers, topic, records...)
}

// ProduceRecords writes records synchronously, each to its own partition,
// keeping their order within a partition. It fails the test on any error.
func ProduceRecords(t testing.TB, brokers, topic string, records ...Record) {
	t.Helper()
	if err := produce(brokers, topic, records); err != nil {
		t.Fatalf("produce %d records to %q: %v", len(records), topic, err)
	}
}

func produce(brokers, topic string, records []Record) error {
	byPartition := map[int][]Record{}
	var order []int
	for _, r := range records {
		if _, ok := byPartition[r.Partition]; !ok {
			order = append(order, r.Partition)
		}
		byPartition[r.Partition] = append(byPartition[r.Partition], r)
	}

	client, done := newClient(brokers)
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for _, p := range order {
		for _, chunk := range chunks(byPartition[p], maxRequestBytes) {
			if err := producePartition(ctx, client, topic, p, chunk); err != nil {
				return fmt.Errorf("partition %d: %w", p, err)
			}
		}
	}
	return nil
}

// maxRequestBytes keeps each produce request under the broker's default
// message.max.bytes (about 1 MiB per record batch).
const maxRequestBytes = 512 << 10

// chunks splits records, in order, into runs of at most limit bytes.
func chunks(records []Record, limit int) [][]Record {
	var out [][]Record
	start, size := 0, 0
	for i, r := range records {
		n := len(r.Key) + len(r.Value) + 64
		if i > start && size+n > limit {
			out = append(out, records[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(records) {
		out = append(out, records[start:])
	}
	return out
}

// producePartition sends one request per partition, retrying only errors
// that mean nothing was written (no leader yet, stale metadata), so a retry
// never duplicates records.
func producePartition(ctx context.Context, client *kafka.Client, topic string, partition int, records []Record) error {
	for {
		res, err := client.Produce(ctx, &kafka.ProduceRequest{
			Topic:        topic,
			Partition:    partition,
			RequiredAcks: kafka.RequireAll,
			Records:      recordReader(records), // fresh: a reader is spent by one attempt
		})
		if err == nil {
			err = res.Error
		}
		if err == nil {
			for i, rerr := range res.RecordErrors {
				return fmt.Errorf("record %d: %w", i, rerr)
			}
			return nil
		}
		if !errors.Is(err, kafka.LeaderNotAvailable) && !errors.Is(err, kafka.NotLeaderForPartition) &&
			!errors.Is(err, kafka.UnknownTopicOrPartition) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func recordReader(records []Record) kafka.RecordReader {
	recs := make([]kafka.Record, len(records))
	for i, r := range records {
		recs[i].Value = kafka.NewBytes(r.Value)
		recs[i].Time = r.Time
		if r.Key != nil {
			recs[i].Key = kafka.NewBytes(r.Key)
		}
	}
	return kafka.NewRecordReader(recs...)
}

// Keyed pairs keys with values into records placed by key, as a hashing
// producer would (FNV-1a modulo partitions): both halves of an exchange,
// keyed by its session, land in one partition.
func Keyed(keys, values [][]byte, partitions int) []Record {
	recs := make([]Record, len(values))
	for i := range values {
		h := fnv.New32a()
		h.Write(keys[i])
		recs[i] = Record{Partition: int(h.Sum32() % uint32(partitions)), Key: keys[i], Value: values[i]}
	}
	return recs
}

// Sticky places values as a producer without keys and a sticky
// partitioner does: runs of run values to one partition, the partitions
// in turn, each value stamped as written at rate values per second from
// start, in order.
func Sticky(values [][]byte, partitions, run int, start time.Time, rate int) []Record {
	recs := make([]Record, len(values))
	for i, v := range values {
		recs[i] = Record{Partition: i / run % partitions, Value: v, Time: start.Add(time.Duration(i) * time.Second / time.Duration(rate))}
	}
	return recs
}
