package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/enginetest"
	"github.com/mcplens/mcplens/pipeline/kafkasource"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
	"github.com/mcplens/mcplens/pipeline/pipelinetest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
	"github.com/mcplens/mcplens/store/duckstore"
)

// countingSink counts the exchanges its store acknowledged.
type countingSink struct {
	pipeline.Sink
	n atomic.Int64
}

func (c *countingSink) Write(ctx context.Context, b *schema.Batch) error {
	if err := c.Sink.Write(ctx, b); err != nil {
		return err
	}
	c.n.Add(int64(len(b.Exchanges)))
	return nil
}

// BenchmarkKafkaToDuckDB consumes a topic from the real broker into a
// fresh DuckDB file (opened as ingest opens a store it only writes:
// duckstore.WriterOptions) with the whole pipeline and reports events/s: 30,000
// exchanges (1 KiB bodies, half split records: 45,000 events) over 3
// partitions, each iteration with a new consumer group.
func BenchmarkKafkaToDuckDB(b *testing.B) {
	benchKafkaTo(b, func(iter int) (pipeline.Sink, func()) {
		store, err := duckstore.Open(context.Background(), filepath.Join(b.TempDir(), fmt.Sprintf("k%d.duckdb", iter)), duckstore.WriterOptions())
		if err != nil {
			b.Fatal(err)
		}
		return store, func() { store.Close() }
	})
}

// BenchmarkKafkaToClickHouse is BenchmarkKafkaToDuckDB into a fresh
// database per iteration on the real ClickHouse server of CLICKHOUSE_DSN
// (make bench runs it with -cpu=1: the ingester on one core, the broker
// and the server in their own processes).
func BenchmarkKafkaToClickHouse(b *testing.B) {
	dsn := clickhousetest.DSN(b)
	benchKafkaTo(b, func(int) (pipeline.Sink, func()) {
		dbDSN, _ := clickhousetest.NewDatabase(b, dsn)
		store, err := chstore.Open(context.Background(), dbDSN, chstore.DefaultConfig(), zerolog.Nop(), nil)
		if err != nil {
			b.Fatal(err)
		}
		opts := schema.DefaultOptions()
		opts.TTL, opts.BodyTTL = 0, 0 // loadgen's event time is fixed: a TTL counted from today would delete rows
		if err := store.Migrate(context.Background(), opts); err != nil {
			b.Fatal(err)
		}
		return store, func() { store.Close() }
	})
}

// benchKafkaTo runs the Kafka benchmark into the stores open makes, one
// per iteration.
func benchKafkaTo(b *testing.B, open func(iter int) (pipeline.Sink, func())) {
	brokers := kafkatest.Brokers(b)
	topic := kafkatest.NewTopic(b, brokers, 3)
	c := pipelinetest.Generate(30_000, 1024)
	kafkatest.ProduceRecords(b, brokers, topic, kafkatest.Keyed(c.Keys, c.Lines, 3)...)
	cfg := pipeline.DefaultConfig()
	cfg.Correlator.MergeWindow, cfg.Correlator.Lateness, cfg.IdleAdvance = 200*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond
	cfg.FlushInterval = 200 * time.Millisecond
	iter := 0
	var events int64
	var elapsed, cpu time.Duration
	for b.Loop() {
		iter++
		kc, err := kafkasource.ParseURL(fmt.Sprintf("kafka://%s/%s?group=bench-%d-%s&start=first", brokers, topic, iter, topic))
		if err != nil {
			b.Fatal(err)
		}
		src, err := kafkasource.New(kc, zerolog.Nop(), prometheus.NewRegistry())
		if err != nil {
			b.Fatal(err)
		}
		store, closeStore := open(iter)
		sink := &countingSink{Sink: store}
		e, err := pipeline.New(cfg, pipeline.Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start, c0 := time.Now(), enginetest.ProcessCPU()
		go func() { done <- e.Run(ctx) }()
		for sink.n.Load() < int64(len(c.IDs)) {
			time.Sleep(5 * time.Millisecond)
		}
		elapsed, cpu = elapsed+time.Since(start), cpu+enginetest.ProcessCPU()-c0
		events += int64(len(c.Lines))
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		src.Close()
		closeStore()
	}
	b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(events)/cpu.Seconds(), "events/cpu-s")
}
