package kafkatest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func TestProduceConsume(t *testing.T) {
	brokers := Brokers(t)
	topic := NewTopic(t, brokers, 2)

	Produce(t, brokers, topic, []byte("a0"), []byte("a1"))
	ProduceRecords(t, brokers, topic,
		Record{Partition: 1, Key: []byte("k0"), Value: []byte("b0")},
		Record{Partition: 0, Value: []byte("a2")},
		Record{Partition: 1, Key: []byte("k1"), Value: []byte("b1")},
	)

	type kv struct {
		offset     int64
		key, value string
	}
	tests := []struct {
		partition int
		want      []kv
	}{
		{0, []kv{{0, "", "a0"}, {1, "", "a1"}, {2, "", "a2"}}},
		{1, []kv{{0, "k0", "b0"}, {1, "k1", "b1"}}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("partition%d", tt.partition), func(t *testing.T) {
			r := kafka.NewReader(kafka.ReaderConfig{
				Brokers: Addrs(brokers), Topic: topic, Partition: tt.partition,
				MaxWait: 100 * time.Millisecond,
			})
			defer r.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			var got []kv
			for range tt.want {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					t.Fatalf("read message %d: %v", len(got), err)
				}
				got = append(got, kv{m.Offset, string(m.Key), string(m.Value)})
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("partition %d: got %v, want %v", tt.partition, got, tt.want)
			}
		})
	}
}

func TestNewTopicIsUniqueAndDeleted(t *testing.T) {
	brokers := Brokers(t)
	var first string
	t.Run("create", func(t *testing.T) {
		first = NewTopic(t, brokers, 3)
		if second := NewTopic(t, brokers, 1); second == first {
			t.Fatalf("two calls gave the same topic %q", first)
		}
	})
	// The subtest's cleanup deleted the topic: it is gone from metadata.
	client, done := newClient(brokers)
	defer done()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for {
		md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{first}})
		if err != nil {
			t.Fatalf("metadata: %v", err)
		}
		if len(md.Topics) == 0 || md.Topics[0].Error != nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %q still exists after cleanup", first)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// recorder captures Skipf and Fatalf instead of stopping the goroutine.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Skipf(string, ...any)  { r.skipped = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

func TestBrokersWithoutEnv(t *testing.T) {
	f := func(ci string, wantSkip, wantFail bool) {
		t.Helper()
		t.Setenv(EnvBrokers, "")
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		if got := Brokers(r); got != "" || r.skipped != wantSkip || r.failed != wantFail {
			t.Errorf("CI=%q: got %q skipped=%v failed=%v, want skipped=%v failed=%v",
				ci, got, r.skipped, r.failed, wantSkip, wantFail)
		}
	}
	f("", true, false)
	f("false", true, false)
	f("true", false, true)
}

func TestAddrs(t *testing.T) {
	f := func(in string, want ...string) {
		t.Helper()
		if got := Addrs(in); !slices.Equal(got, want) {
			t.Errorf("Addrs(%q) = %q, want %q", in, got, want)
		}
	}
	f("127.0.0.1:9092", "127.0.0.1:9092")
	f(" a:1, b:2 ,", "a:1", "b:2")
	f("")
}
