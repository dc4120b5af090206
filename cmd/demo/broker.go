package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// broker is a Kafka broker of the demo's own (deploy/kafka/kafka.sh on a
// free port, its data in the workdir), so the demo never publishes into a
// broker it happens to find on 127.0.0.1:9092.
type broker struct {
	addr   string
	script string
	env    []string
}

// startBroker starts the demo's broker and returns once it answers. It
// takes some seconds of JVM start; the first run also fetches Kafka's jars
// with Maven into ~/.cache/mcplens.
func startBroker(ctx context.Context, script, workdir string) (*broker, error) {
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("kafka script %s: %w (run the demo from the repository root)", script, err)
	}
	return retryStart(ctx, func() (*broker, error) {
		port, err := freePortPair()
		if err != nil {
			return nil, err
		}
		b := &broker{addr: fmt.Sprintf("127.0.0.1:%d", port), script: script, env: append(os.Environ(),
			fmt.Sprintf("MCPLENS_KAFKA_PORT=%d", port), "MCPLENS_KAFKA_DIR="+filepath.Join(workdir, "kafka"))}
		if out, err := b.run(ctx, "start"); err != nil {
			return nil, fmt.Errorf("start the demo's Kafka broker on port %d: %w\n%s", port, errors.Join(err, b.stop()), tailOf(out))
		}
		return b, nil
	})
}

// retryStart starts a server of the demo's own up to three times: its
// ports are picked free, but another process may take one before the
// server binds it, and the server then exits during its startup; each try
// picks new ports.
func retryStart[S any](ctx context.Context, start func() (S, error)) (S, error) {
	var errs []error
	for range 3 {
		s, err := start()
		if err == nil {
			return s, nil
		}
		if errs = append(errs, err); ctx.Err() != nil {
			break
		}
	}
	var zero S
	return zero, errors.Join(errs...)
}

func (b *broker) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := b.run(ctx, "stop"); err != nil {
		return fmt.Errorf("stop the demo's Kafka broker: %w\n%s", err, tailOf(out))
	}
	return nil
}

func (b *broker) run(ctx context.Context, verb string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "bash", b.script, verb) //nolint:gosec // G204: the repository's own script
	cmd.Env = b.env
	return cmd.CombinedOutput()
}

// freePortPair is a free loopback port whose successor (the broker's
// controller port) is free too.
func freePortPair() (int, error) {
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port: %w", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if c, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+1)); err == nil {
			c.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free pair of ports for a broker")
}

func tailOf(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.Join(lines[max(0, len(lines)-10):], "\n")
}
