package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplens/mcplens/pipeline/kafkatest"
)

// TestFormatsFromFile: ingest reads agentgateway's access log and OTLP
// trace exports (the Collector file exporter's JSON lines) from files.
func TestFormatsFromFile(t *testing.T) {
	for _, tc := range []struct {
		format, file string
		want         int
		quarantined  string
	}{
		{"agentgateway", "../../pipeline/agentgateway/testdata/access.log", 6, "time"},
		{"otlp", "../../pipeline/otlpsource/testdata/python-sdk.json", 8, ""},
	} {
		t.Run(tc.format, func(t *testing.T) {
			cmd := exec.CommandContext(context.Background(), ingestBin, "--format", tc.format, "--from", "file:"+tc.file, "--to", "stdout", "--listen", "")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("ingest: %v\n%s", err, stderr.String())
			}
			if n := strings.Count(stdout.String(), "\n"); n != tc.want {
				t.Errorf("%d records, want %d:\n%s", n, tc.want, stdout.String())
			}
			if tc.quarantined != "" && !strings.Contains(stderr.String(), tc.quarantined) {
				t.Errorf("no quarantine about %q on stderr:\n%s", tc.quarantined, stderr.String())
			}
		})
	}
}

// TestOTLPFromKafka: the Collector's Kafka exporter writes one export
// request per message, otlp_proto by default or otlp_json; ingest reads
// both from one topic.
func TestOTLPFromKafka(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.NewTopic(t, brokers, 1)
	pb, err := os.ReadFile("../../pipeline/otlpsource/testdata/python-sdk.pb")
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile("../../pipeline/otlpsource/testdata/python-sdk.json")
	if err != nil {
		t.Fatal(err)
	}
	kafkatest.Produce(t, brokers, topic, pb, bytes.TrimSpace(js))
	out := filepath.Join(t.TempDir(), "out.ndjson")
	p := startIngest(t, "--format", "otlp", "--from", fmt.Sprintf("kafka://%s/%s?group=g-%s&start=first", brokers, topic, topic),
		"--to", "file:"+out, "--listen", "", "--flush-interval", "50ms", "--idle-advance", "300ms")
	// Both messages carry the same spans: the second is deduplicated.
	waitFor(t, "the spans' exchanges", 60*time.Second, func() bool { return len(outputIDs(t, out)) >= 8 })
	time.Sleep(time.Second)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	if n := len(outputIDs(t, out)); n != 8 {
		t.Errorf("%d exchanges, want the 8 server spans once", n)
	}
}

// TestAgentgatewayFromKafka: agentgateway's log lines forwarded to Kafka
// unchanged (one line per message, as a shipper without a mapping sends
// them) are read like the file: its own logs skipped, the line with a bad
// time quarantined, one exchange per request line.
func TestAgentgatewayFromKafka(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.NewTopic(t, brokers, 1)
	raw, err := os.ReadFile("../../pipeline/agentgateway/testdata/access.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	kafkatest.Produce(t, brokers, topic, lines...)
	out := filepath.Join(t.TempDir(), "out.ndjson")
	p := startIngest(t, "--format", "agentgateway", "--from", fmt.Sprintf("kafka://%s/%s?group=g-%s&start=first", brokers, topic, topic),
		"--to", "file:"+out, "--listen", "", "--flush-interval", "50ms", "--idle-advance", "300ms")
	// The GET line (the server's stream) comes out last, some 30 s after
	// the others here (in event time, which idle advance moves on).
	waitFor(t, "the request lines' exchanges", 120*time.Second, func() bool { return len(outputIDs(t, out)) >= 6 })
	time.Sleep(time.Second)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	if n := len(outputIDs(t, out)); n != 6 {
		t.Errorf("%d exchanges, want the 6 request lines once", n)
	}
	if !strings.Contains(p.stderr.String(), "time") {
		t.Errorf("no quarantine of the line with a bad time:\n%s", p.stderr.String())
	}
}
