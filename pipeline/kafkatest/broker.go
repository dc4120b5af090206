package kafkatest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mcplens/mcplens/internal/testport"
)

// Broker is a Kafka broker of one test alone, on its own port and data
// directory, started by deploy/kafka/kafka.sh: a test may stop and start
// it without disturbing any other test or the shared broker.
type Broker struct {
	// Addr is the broker's host:port.
	Addr string
	dir  string
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
	dir := t.TempDir()
	b := &Broker{Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, env: append(os.Environ(),
		fmt.Sprintf("MCPLENS_KAFKA_PORT=%d", port), "MCPLENS_KAFKA_DIR="+dir)}
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

// Kill SIGKILLs the broker and waits until it is gone: no clean shutdown,
// its connections just die. Start brings it back on the same data.
func (b *Broker) Kill(t testing.TB) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(b.dir, "kafka.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(20 * time.Millisecond)
	}
}

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
// (a broker's controller listens on port+1), below the kernel's ephemeral
// range so that no outgoing connection takes it while the broker restarts.
func FreePortPair(t testing.TB) int {
	t.Helper()
	return testport.Restartable(t, 2)
}

// Values reads every partition of topic from the start to its current end
// and returns the message values, partition by partition in offset order.
func Values(t testing.TB, brokers, topic string) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	client, done := newClient(brokers)
	defer done()
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(md.Topics) != 1 {
		t.Fatalf("metadata of %q: %v", topic, err)
	}
	var out [][]byte
	for _, p := range md.Topics[0].Partitions {
		conn, err := kafka.DialLeader(ctx, "tcp", Addrs(brokers)[0], topic, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		last, err := conn.ReadLastOffset()
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		if last == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: Addrs(brokers), Topic: topic, Partition: p.ID, MaxWait: 200 * time.Millisecond})
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("read %s/%d: %v", topic, p.ID, err)
			}
			out = append(out, m.Value)
			if m.Offset >= last-1 {
				break
			}
		}
		r.Close()
	}
	return out
}
