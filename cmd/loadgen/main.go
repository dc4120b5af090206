// Command loadgen writes a production-shaped MCP traffic log (see
// internal/loadgen) as NDJSON to a file or stdout, or produces it to a
// Kafka topic keyed by session, and prints its ground truth counts on
// stderr.
//
//	loadgen -calls 100000 -seed 3 -out load.ndjson
//	loadgen -calls 100000 -kafka 127.0.0.1:9092 -topic mcp-logs
//
// Its events are dated from 2026-11-02T10:00:00Z unless -start moves
// them; -end-now dates them so that the last call is sent about now, for
// a store whose TTL would drop the default date's rows.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mcplens/mcplens/internal/loadgen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg loadgen.Config
	fs := flag.NewFlagSet("loadgen", flag.ExitOnError)
	cfg.RegisterFlags(fs)
	out := fs.String("out", "-", "file to write, - for stdout")
	brokers := fs.String("kafka", "", "comma-separated brokers: produce to -topic instead of writing a file")
	topic := fs.String("topic", "mcp-logs", "Kafka topic for -kafka")
	partitions := fs.Int("partitions", 0, "with -kafka: create -topic with this many partitions first, unless it exists (0: produce to it as it is)")
	_ = fs.Parse(os.Args[1:])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	g, err := loadgen.New(cfg)
	if err != nil {
		return err
	}
	switch {
	case *brokers != "":
		if *partitions > 0 {
			if err := createTopic(ctx, strings.Split(*brokers, ","), *topic, *partitions); err != nil {
				return err
			}
		}
		err = g.Produce(ctx, strings.Split(*brokers, ","), *topic)
	case *out == "-":
		_, err = g.WriteTo(os.Stdout)
	default:
		var f *os.File
		if f, err = os.Create(*out); err != nil {
			return fmt.Errorf("create %q: %w", *out, err)
		}
		_, err = g.WriteTo(f)
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close %q: %w", *out, cerr)
		}
	}
	if err != nil {
		return err
	}
	t := g.Truth()
	return json.NewEncoder(os.Stderr).Encode(map[string]any{
		"exchanges": t.Exchanges, "lines": t.Lines, "events": t.Events, "redelivered": t.Redelivered,
		"poison": t.Poison, "outcomes": t.Outcomes,
	})
}

// createTopic creates topic with the given partitions (replication 1), or
// leaves it as it is if it exists.
func createTopic(ctx context.Context, brokers []string, topic string, partitions int) error {
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 30 * time.Second}
	res, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: 1,
	}}})
	if err == nil {
		err = res.Errors[topic]
	}
	if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return fmt.Errorf("create topic %q: %w", topic, err)
	}
	return nil
}
