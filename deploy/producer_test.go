package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/pipeline"
)

// runProducer runs compose/produce-sample.sh on corpus with a stand-in for
// kafka-console-producer.sh that records its arguments and input.
func runProducer(t *testing.T, corpus string) (args []string, lines []string) {
	t.Helper()
	dir := t.TempDir()
	fake := `#!/bin/sh
printf '%s\n' "$@" > "$FAKE_OUT.args"
cat > "$FAKE_OUT.data"
`
	if err := os.WriteFile(filepath.Join(dir, "kafka-console-producer.sh"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", filepath.Join(composeDir, "produce-sample.sh"))
	cmd.Env = append(os.Environ(), "KAFKA_BIN="+dir, "KAFKA_BOOTSTRAP=kafka:19092", "KAFKA_TOPIC=mcp-logs",
		"CORPUS="+corpus, "FAKE_OUT="+filepath.Join(dir, "out"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("produce-sample.sh: %v\n%s", err, out)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "out.args"))
	d, _ := os.ReadFile(filepath.Join(dir, "out.data"))
	return strings.Split(strings.TrimSpace(string(a)), "\n"), strings.Split(strings.TrimSuffix(string(d), "\n"), "\n")
}

// TestProduceSample runs the Compose producer's script on the sample corpus
// it ships: one message per event, keyed by the event's session id (else
// exchange id), the value the event unchanged, and the event a valid
// contract-v1 line.
func TestProduceSample(t *testing.T) {
	corpus := filepath.Join(repoRoot, "testdata", "real", "gosdk.ndjson")
	raw, err := os.ReadFile(corpus)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSpace(string(raw)), "\n")
	args, lines := runProducer(t, corpus)
	for _, a := range []string{"--bootstrap-server", "kafka:19092", "--topic", "mcp-logs", "parse.key=true", "key.separator=|"} {
		if !strings.Contains(strings.Join(args, " "), a) {
			t.Errorf("kafka-console-producer.sh arguments %q lack %q", args, a)
		}
	}
	if len(lines) != len(want) {
		t.Fatalf("%d messages for %d events", len(lines), len(want))
	}
	dec := pipeline.NewDecoder()
	for i, line := range lines {
		key, value, ok := strings.Cut(line, "|")
		if !ok || value != want[i] {
			t.Fatalf("message %d is not KEY|EVENT with the event unchanged:\n%.200s", i, line)
		}
		var ev struct {
			SessionID  string `json:"session_id"`
			ExchangeID string `json:"exchange_id"`
		}
		if err := json.Unmarshal([]byte(value), &ev); err != nil {
			t.Fatal(err)
		}
		wantKey := ev.SessionID
		if wantKey == "" {
			wantKey = ev.ExchangeID
		}
		if key != wantKey {
			t.Errorf("message %d: key %q, want %q", i, key, wantKey)
		}
		if _, err := dec.Decode([]byte(value), pipeline.Position{}); err != nil {
			t.Errorf("message %d: %v", i, err)
		}
	}
}

// TestProduceSampleKeys: the key is the event's own field, never a
// session_id quoted inside a body; lines without ids get "-"; blank lines
// are skipped.
func TestProduceSampleKeys(t *testing.T) {
	corpus := filepath.Join(t.TempDir(), "c.ndjson")
	events := []string{
		`{"kind":"exchange","request_body":"{\"session_id\":\"inner\"}","exchange_id":"x-1","ts":"2026-01-01T00:00:00Z"}`,
		`{"session_id":"s-1","exchange_id":"x-2","response_body":"a|b"}`,
		`{"event_id":"e-3"}`,
		`{"kind":"request"}`,
	}
	var buf bytes.Buffer
	for _, e := range events {
		buf.WriteString(e + "\n\n")
	}
	if err := os.WriteFile(corpus, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, lines := runProducer(t, corpus)
	want := []string{"x-1|" + events[0], "s-1|" + events[1], "e-3|" + events[2], "-|" + events[3]}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("keyed lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
