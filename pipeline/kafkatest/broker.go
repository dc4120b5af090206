package kafkatest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Broker is a Kafka broker of one test alone, on its own port and data
// directory, started by deploy/kafka/kafka.sh: a test may stop and start
// it without disturbing any other test or the shared broker.
type Broker struct {
	// Addr is the broker's host:port.
	Addr string
	env  []string
}

// StartBroker starts a broker of the test's own and stops it when the test
// ends. Like Brokers it skips the test when no shared broker is configured
// (kafka.sh and its jars are then likely missing), or fails it when
// CI=true. Starting takes some seconds of JVM time.
func StartBroker(t testing.TB) *Broker {
	t.Helper()
	Brokers(t)
	port := FreePortPair(t)
	b := &Broker{Addr: fmt.Sprintf("127.0.0.1:%d", port), env: append(os.Environ(),
		fmt.Sprintf("MCPLENS_KAFKA_PORT=%d", port), "MCPLENS_KAFKA_DIR="+t.TempDir())}
	b.Start(t)
	t.Cleanup(func() { b.Stop(t) })
	return b
}

// Start starts the broker again on the same port and data directory (a
// no-op while it runs) and returns once it answers metadata requests.
func (b *Broker) Start(t testing.TB) { t.Helper(); b.run(t, "start") }

// Restart stops and starts the broker on the same data directory.
func (b *Broker) Restart(t testing.TB) { t.Helper(); b.run(t, "restart") }

// Stop stops the broker (SIGTERM, then SIGKILL); its data is kept.
func (b *Broker) Stop(t testing.TB) { t.Helper(); b.run(t, "stop") }

func (b *Broker) run(t testing.TB, verb string) {
	t.Helper()
	cmd := exec.Command("bash", kafkaScript(), verb) //nolint:gosec // G204: the repository's own script
	cmd.Env = b.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kafka.sh %s: %v\n%s", verb, err, out)
	}
}

// kafkaScript is deploy/kafka/kafka.sh of this checkout, found from this
// source file, so that tests of any package can run it.
func kafkaScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "deploy", "kafka", "kafka.sh")
}

// FreePortPair returns a free loopback port whose successor is free too
// (a broker's controller listens on port+1).
func FreePortPair(t testing.TB) int {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if c, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+1)); err == nil {
			c.Close()
			return port
		}
	}
}
