// Package e2e proves the whole path together on real parts: the official
// Go SDK's traffic through cmd/tap into a real Kafka broker, cmd/ingest
// into DuckDB, and cmd/api on top, under faults.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/internal/demo"
	"github.com/mcplens/mcplens/internal/metricstest"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/store/duckstore"
)

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "e2e-bin")
	if err != nil {
		panic(err)
	}
	bin = dir
	build := exec.Command("go", "build", "-o", dir+"/", "../cmd/tap", "../cmd/ingest", "../cmd/api", "../cmd/demo")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		panic("build binaries: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// freePort is a free loopback port (and its successor).
func freePort(t *testing.T) int { return kafkatest.FreePortPair(t) }

type proc struct {
	cmd  *exec.Cmd
	log  string
	done chan error
}

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		p.done <- nil
		keepLog(t, logPath)
	})
	return p
}

// keepLog copies a failed test's process log into $MCPLENS_E2E_KEEP, when
// set, for a look after the test's TempDir is gone.
func keepLog(t *testing.T, path string) {
	dir := os.Getenv("MCPLENS_E2E_KEEP")
	if dir == "" || !t.Failed() {
		return
	}
	raw, err := os.ReadFile(path)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d-%s", t.Name(), time.Now().UnixNano(), filepath.Base(path))), raw, 0o600)
	}
	if err != nil {
		t.Logf("keep %s: %v", path, err)
	}
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) error {
	t.Helper()
	_ = p.cmd.Process.Signal(sig)
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(40 * time.Second):
		t.Fatalf("%s did not exit after %v; log:\n%s", p.cmd.Path, sig, p.tail())
		return nil
	}
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func waitFor(t *testing.T, what string, timeout time.Duration, ok func() bool, logs ...*proc) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			var tails []string
			for _, p := range logs {
				tails = append(tails, p.cmd.Path+":\n"+p.tail())
			}
			t.Fatalf("timed out waiting for %s\n%s", what, strings.Join(tails, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// topicCount counts the messages of a topic (all partitions).
func topicCount(t *testing.T, brokers, topic string) int64 {
	t.Helper()
	conn, err := kafka.Dial("tcp", brokers)
	if err != nil {
		return -1
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		return -1
	}
	var n int64
	for _, p := range parts {
		pc, err := kafka.DialLeader(context.Background(), "tcp", brokers, topic, p.ID)
		if err != nil {
			return -1
		}
		first, last, err := pc.ReadOffsets()
		pc.Close()
		if err != nil {
			return -1
		}
		n += last - first
	}
	return n
}

// TestTapKafkaIngestAPIUnderFaults runs the demo traffic through the tap
// into Kafka while the ingester is SIGKILLed and restarted, the store goes
// away for a while, a poison message is produced and the broker restarts.
// Afterwards every exchange the tap recorded is stored exactly once, the
// quarantine holds exactly the poison message, and the API answers the
// headline questions with the expected server and chain.
func TestTapKafkaIngestAPIUnderFaults(t *testing.T) {
	b := kafkatest.StartBroker(t)
	topic := "e2e-mcp"
	work := t.TempDir()
	db := filepath.Join(work, "mcplens.duckdb")
	storeDown := filepath.Join(work, "store-down")

	tap, tapAddr := startTap(t, b.Addr, topic)

	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ingestArgs := ingestFlags(b.Addr, topic, "e2e", metricsAddr, "--to", "duckdb:"+db, "--fault-sink-down-while", storeDown)
	ctx := context.Background()
	say := func(string, ...any) {}

	// Round 1, then a SIGKILL in the middle of consuming it.
	roundThenKill(t, tapAddr, ingestArgs, nil)

	// Round 2 with the store down for a while under a fresh ingester.
	if err := os.WriteFile(storeDown, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ing := start(t, "ingest", ingestArgs...)
	if err := demo.Drive(ctx, "http://"+tapAddr, say); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "failed sink writes", 20*time.Second, func() bool {
		return strings.Contains(ing.tail(), "sink write failed")
	}, ing)
	os.Remove(storeDown)

	// A poison message, then the broker restarts under the running tap
	// and ingester, then round 3.
	kafkatest.ProduceRecords(t, b.Addr, topic, kafkatest.Record{Value: []byte(`{"poison": true`)})
	b.Restart(t)
	if err := demo.Drive(ctx, "http://"+tapAddr, say); err != nil {
		t.Fatal(err)
	}
	// Let the ingester drain, then stop it gracefully so the API can open
	// the file.
	recorded := drainAndStop(t, b.Addr, topic, tap, ing, metricsAddr, 90*time.Second)

	store, err := duckstore.OpenReadOnly(ctx, db, duckstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var n, distinct int64
	if err := store.DB().QueryRowContext(ctx, "SELECT count(*), count(DISTINCT exchange_id) FROM exchanges").Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	q, err := queries.On(store).Quarantine(ctx, queries.Filter{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour), Limit: 100})
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n != recorded || distinct != recorded {
		t.Errorf("%d rows, %d distinct exchanges for %d recorded events; not stored:\n%s", n, distinct, recorded, notStored(t, b.Addr, topic, func(id string) bool {
			store, err := duckstore.OpenReadOnly(ctx, db, duckstore.Options{})
			if err != nil {
				return false
			}
			defer store.Close()
			var n int
			return store.DB().QueryRowContext(ctx, "SELECT count(*) FROM exchanges WHERE exchange_id = ?", id).Scan(&n) == nil && n > 0
		}))
	}
	if len(q) != 1 || !strings.Contains(q[0].Raw, "poison") {
		t.Errorf("quarantine holds %d rows, want exactly the poison message: %+v", len(q), q)
	}

	// The API on the stored file answers the headline questions.
	checkHeadlines(t, "duckdb:"+db)
}

// checkHeadlines runs cmd/api on a store and checks that it answers the
// headline questions with the demo's server and retried tools, and a bad
// parameter with 400.
func checkHeadlines(t *testing.T, storeURL string) {
	t.Helper()
	apiAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	api := start(t, "api", "--store", storeURL, "--listen", apiAddr, "--dev")
	waitFor(t, "api", 20*time.Second, func() bool { return listening(apiAddr) }, api)
	base := "http://" + apiAddr + "/api/v1"
	var http200 struct {
		Rows []struct {
			Server string `json:"server"`
		} `json:"rows"`
	}
	if code, _ := apitest.GetJSON(t, base+"/questions/http200-jsonrpc-errors?from=-1h", &http200); code != 200 || len(http200.Rows) == 0 || http200.Rows[0].Server != "demo-tools" {
		t.Errorf("http200-jsonrpc-errors: %d %+v\n%s", code, http200, api.tail())
	}
	var retries struct {
		Rows []map[string]any `json:"rows"`
	}
	if code, _ := apitest.GetJSON(t, base+"/questions/unknown-side-effect-retries?from=-1h", &retries); code != 200 || len(retries.Rows) == 0 {
		t.Errorf("unknown-side-effect-retries: %d, %d rows (want the delete_item re-send after the 503)", code, len(retries.Rows))
	}
	for _, r := range retries.Rows {
		if r["tool_name"] != "delete_item" && r["tool_name"] != "count_slowly" {
			t.Errorf("unexpected unknown-side-effect retry: %v", r)
		}
	}
	if code, _ := apitest.GetJSON(t, base+"/exchanges?from=yesterday", nil); code != 400 {
		t.Errorf("bad time: status %d, want 400", code)
	}
}

// startTap starts the demo's MCP server (stopped when the test ends) and
// cmd/tap in front of it, recording into topic.
func startTap(t *testing.T, brokers, topic string) (*proc, string) {
	t.Helper()
	mcpURL, stopMCP, err := demo.StartMCPServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopMCP)
	tapAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	tap := start(t, "tap", "--upstream", mcpURL, "--listen", tapAddr, "--to", "kafka://"+brokers+"/"+topic, "--tap.server", "demo-tools")
	waitFor(t, "tap", 10*time.Second, func() bool { return listening(tapAddr) }, tap)
	return tap, tapAddr
}

// ingestFlags are the flags of an ingester reading topic from its start
// in group, with short windows and retries, and extra ones.
func ingestFlags(brokers, topic, group, metricsAddr string, extra ...string) []string {
	return append([]string{"--from", "kafka://" + brokers + "/" + topic + "?group=" + group + "&start=first",
		"--listen", metricsAddr, "--merge-window", "200ms", "--lateness", "200ms", "--idle-advance", "300ms",
		"--flush-interval", "100ms", "--retry-max", "500ms"}, extra...)
}

// roundThenKill drives a round of demo traffic through the tap, then
// starts an ingester and SIGKILLs it in the middle of consuming it: as
// soon as stored says the first rows are in (nil: after 1.5s).
func roundThenKill(t *testing.T, tapAddr string, ingestArgs []string, stored func() bool) {
	t.Helper()
	if err := demo.Drive(t.Context(), "http://"+tapAddr, func(string, ...any) {}); err != nil {
		t.Fatal(err)
	}
	ing := start(t, "ingest", ingestArgs...)
	if stored == nil {
		time.Sleep(1500 * time.Millisecond)
	} else {
		waitFor(t, "the first rows stored", 60*time.Second, stored, ing)
	}
	_ = ing.signal(t, syscall.SIGKILL)
}

// drainAndStop stops the tap, counts what it recorded (all but one poison
// message), waits until the ingester has committed the whole topic with
// nothing pending, and stops it gracefully.
func drainAndStop(t *testing.T, brokers, topic string, tap, ing *proc, metricsAddr string, timeout time.Duration) int64 {
	t.Helper()
	if err := tap.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("tap stop: %v\n%s", err, tap.tail())
	}
	recorded := topicCount(t, brokers, topic) - 1 // all but the poison
	// Faults fire on their first occurrences, so round 1 has the most.
	if recorded < 60 {
		t.Fatalf("only %d events recorded\n%s", recorded, tap.tail())
	}
	end := topicEnd(t, brokers, topic)
	stable := 0
	waitFor(t, "the ingester to store every event", timeout, func() bool {
		if drained(metricsAddr, end) {
			stable++
		} else {
			stable = 0
		}
		return stable >= 3
	}, ing)
	if err := ing.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("ingest stop: %v\n%s", err, ing.tail())
	}
	return recorded
}

// topicEnd sums the end offsets of a topic's partitions.
func topicEnd(t *testing.T, brokers, topic string) float64 {
	t.Helper()
	conn, err := kafka.Dial("tcp", brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, p := range parts {
		pc, err := kafka.DialLeader(context.Background(), "tcp", brokers, topic, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		last, err := pc.ReadLastOffset()
		pc.Close()
		if err != nil {
			t.Fatal(err)
		}
		n += float64(last)
	}
	return n
}

// notStored lists (cut to 400 bytes) the topic's messages whose exchange
// the store does not hold.
func notStored(t *testing.T, brokers, topic string, stored func(exchangeID string) bool) string {
	var out []string
	for _, v := range kafkatest.Values(t, brokers, topic) {
		var ev struct {
			ExchangeID string `json:"exchange_id"`
		}
		if json.Unmarshal(v, &ev) != nil || stored(ev.ExchangeID) {
			continue
		}
		if len(v) > 400 {
			v = v[:400]
		}
		out = append(out, string(v))
	}
	return strings.Join(out, "\n")
}

// drained reports whether the ingester has committed the whole topic
// (which it does only for what the store acknowledged) and holds nothing
// pending: no half waiting for its pair, no record waiting for the merge window.
func drained(addr string, end float64) bool {
	sums := metricstest.Sums(addr)
	_, committed := sums["mcplens_ingest_committed_offset"]
	_, merging := sums["mcplens_ingest_merge_waiting"]
	return committed && sums["mcplens_ingest_committed_offset"] == end &&
		sums["mcplens_ingest_pending"] == 0 && sums["mcplens_ingest_inflight_positions"] == 0 &&
		// With the state store the commit moves past records still
		// waiting for the merge window: they are stored only once released.
		merging && sums["mcplens_ingest_merge_waiting"] == 0
}

// TestDemo runs the one-command demo (from the tap's file, no Kafka) and
// checks that it prints the two headline answers and leaves nothing
// running.
func TestDemo(t *testing.T) {
	kafkatest.Brokers(t) // the demo's own broker needs kafka.sh's jars: skip locally without Kafka, fail in CI
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	work := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, "demo"), "--bin", bin, "--listen", listen, "--workdir", work,
		"--kafka-script", filepath.Join("..", "deploy", "kafka", "kafka.sh"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{`server="demo-tools"`, `tool_name="delete_item"`, `prev_http_status=503`, "demo finished in",
		"run `bin/demo --keep` to keep it up"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	// Its own broker on a free port, never one it finds; its URLs quoted.
	m := regexp.MustCompile(`tap records every exchange to Kafka (127\.0\.0\.1:\d+),`).FindStringSubmatch(text)
	if m == nil || m[1] == "127.0.0.1:9092" || !strings.Contains(text, "4. ingest 'kafka://"+m[1]+"/") {
		t.Errorf("the demo did not use a broker of its own, or printed its URL unquoted:\n%s", text)
	}
	if strings.Contains(text, "== Explore") {
		t.Errorf("without --keep the demo printed commands for an API it stops:\n%s", text)
	}
	if listening(listen) {
		t.Error("the demo left the API running")
	}
	if m != nil && listening(m[1]) {
		t.Errorf("the demo left its broker %s running", m[1])
	}
}
