package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/segmentio/kafka-go"
)

// WriteTo writes every line of the load as NDJSON to w.
func (g *Generator) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	var n int64
	for _, line := range g.Lines() {
		k, err := bw.Write(line)
		n += int64(k)
		if err == nil {
			err = bw.WriteByte('\n')
			n++
		}
		if err != nil {
			return n, fmt.Errorf("write load: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("write load: %w", err)
	}
	return n, nil
}

// WriteFile writes the load of cfg to path and returns its ground truth.
func WriteFile(path string, cfg Config) (*Truth, error) {
	g, err := New(cfg)
	if err != nil {
		return nil, err
	}
	f, err := os.Create(path) //nolint:gosec // G304: the caller names the file
	if err != nil {
		return nil, fmt.Errorf("create %q: %w", path, err)
	}
	if _, err := g.WriteTo(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("close %q: %w", path, err)
	}
	return g.Truth(), nil
}

// Produce writes every line of the load to topic, keyed by session (the
// hash balancer puts a session's lines on one partition, in order), and
// returns once the brokers acknowledged all of them.
func (g *Generator) Produce(ctx context.Context, brokers []string, topic string) error {
	w := &kafka.Writer{
		Addr:         kafka.TCP(brokers...),
		Topic:        topic,
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		BatchSize:    2000,
		BatchBytes:   1_000_000, // under the broker's default message.max.bytes
		BatchTimeout: 20 * time.Millisecond,
		Compression:  kafka.Lz4,
	}
	defer w.Close() //nolint:errcheck // the close error repeats a write error
	batch := make([]kafka.Message, 0, 2000)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := w.WriteMessages(ctx, batch...); err != nil {
			return fmt.Errorf("produce %d lines to %q: %w", len(batch), topic, err)
		}
		batch = batch[:0]
		return nil
	}
	for key, line := range g.Lines() {
		batch = append(batch, kafka.Message{Key: append([]byte(nil), key...), Value: append([]byte(nil), line...)})
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// BenchLoad is the long benchmarks' traffic, written to a file.
type BenchLoad struct {
	Path    string
	Config  Config
	Truth   *Truth
	Minutes float64 // of event time
}

// WriteBench writes the long benchmarks' load (BenchMinutes of
// BenchConfig with seed) to a file in dir.
func WriteBench(dir string, seed uint64) (BenchLoad, error) {
	l := BenchLoad{Path: filepath.Join(dir, "steady.ndjson")}
	var err error
	if l.Minutes, err = BenchMinutes(); err != nil {
		return l, err
	}
	if l.Config, err = BenchConfig(seed, l.Minutes); err != nil {
		return l, err
	}
	l.Truth, err = WriteFile(l.Path, l.Config)
	return l, err
}
