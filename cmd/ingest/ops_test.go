package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
	"github.com/mcplens/mcplens/pipeline/pipelinetest"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// longFile writes a production-shaped load (split and whole records,
// responses 10 ms to 30 s late, redeliveries, poison lines) and returns
// its path, line count and truth.
func longFile(t *testing.T, calls int) (string, int, *loadgen.Truth) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.ndjson")
	truth, err := loadgen.WriteFile(path, loadgen.Config{Seed: 16, Calls: calls, MaxBody: 4096, PoisonShare: 0.002})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if truth.Poison == 0 || truth.Redelivered == 0 {
		t.Fatalf("the load has %d poison and %d redelivered lines; the test needs both", truth.Poison, truth.Redelivered)
	}
	return path, bytes.Count(raw, []byte("\n")), truth
}

var (
	progressLine = regexp.MustCompile(`^progress: ([0-9.]+ [KMG]?i?B) of ([0-9.]+ [KMG]?i?B) \((\d+)%\), ([0-9,]+) events, ([0-9,]+) events/s, ([0-9,]+) exchanges( \(.*\))?(, ETA \S+)?$`)
	summaryLine  = regexp.MustCompile(`^ingest done: ([0-9,]+) events \(([0-9,]+) accepted, ([0-9,]+) duplicates, ([0-9,]+) quarantined\), ([0-9,]+) exchanges \((.*)\), ([0-9,]+) stored, ([0-9,]+) evicted, in (\S+) \(([0-9,]+) events/s\)$`)
)

func number(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	if err != nil {
		t.Fatalf("number %q: %v", s, err)
	}
	return n
}

// TestProgressOfALongFileIngest: with --progress always, a long file ingest
// writes progress lines at the interval (bytes of the known size, events,
// events/s, exchanges by outcome, an ETA) that only move forward, then one
// summary whose totals are the file's: every line read, the poison lines
// quarantined, the redelivered ones dropped, every exchange stored.
func TestProgressOfALongFileIngest(t *testing.T) {
	in, lines, truth := longFile(t, 12_000)
	out := filepath.Join(t.TempDir(), "exchanges.ndjson")
	cmd := exec.Command(ingestBin, "--from", "file:"+in, "--to", "file:"+out,
		"--progress", "always", "--progress-interval", "40ms", "--log-level", "warn")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, stderr.String())
	}
	var progress []string
	var summary []string
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		switch {
		case strings.HasPrefix(l, "progress: "):
			progress = append(progress, l)
		case strings.HasPrefix(l, "ingest done: "):
			summary = append(summary, l)
		}
	}
	if len(progress) < 3 {
		t.Fatalf("%d progress lines for a %d-line file at a 40ms interval:\n%s", len(progress), lines, stderr.String())
	}
	lastPct, lastEvents, withETA := -1, -1, 0
	for _, l := range progress {
		m := progressLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("progress line of an unexpected form:\n%s", l)
		}
		pct, events := number(t, m[3]), number(t, m[4])
		if pct < lastPct || events < lastEvents || pct > 100 || events > lines {
			t.Errorf("progress went backwards or past the end (%d%%, %d of %d events): %s", pct, events, lines, l)
		}
		lastPct, lastEvents = pct, events
		if m[8] != "" {
			withETA++
		}
	}
	if withETA == 0 {
		t.Errorf("no progress line has an ETA:\n%s", strings.Join(progress, "\n"))
	}
	if len(summary) != 1 {
		t.Fatalf("%d summary lines:\n%s", len(summary), stderr.String())
	}
	m := summaryLine.FindStringSubmatch(summary[0])
	if m == nil {
		t.Fatalf("summary of an unexpected form:\n%s", summary[0])
	}
	stored := len(outputIDs(t, out))
	events, accepted, dups, quarantined := number(t, m[1]), number(t, m[2]), number(t, m[3]), number(t, m[4])
	if events != lines || accepted+dups+quarantined != events || quarantined != truth.Poison || dups != truth.Redelivered {
		t.Errorf("summary %q: want %d events, %d quarantined, %d duplicates", summary[0], lines, truth.Poison, truth.Redelivered)
	}
	if number(t, m[5]) != stored || number(t, m[7]) != stored || !strings.Contains(m[6], "TOOL_SUCCESS ") {
		t.Errorf("summary %q: the output holds %d exchanges", summary[0], stored)
	}
}

// TestQuietWhenNotATerminal: by default (stderr a pipe, as under a log
// collector) there are no progress lines, and the totals come as one JSON
// log entry; no metrics port is opened for a file source.
func TestQuietWhenNotATerminal(t *testing.T) {
	in, lines, truth := longFile(t, 2_000)
	cmd := exec.Command(ingestBin, "--from", "file:"+in, "--to", "file:"+filepath.Join(t.TempDir(), "out.ndjson"), "--progress-interval", "10ms")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, stderr.String())
	}
	var done map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var entry map[string]any
		if err := json.Unmarshal([]byte(l), &entry); err != nil {
			t.Fatalf("a line on stderr that is not a JSON log entry: %q", l)
		}
		if entry["message"] == "serving /metrics, /healthz, /readyz" {
			t.Errorf("a file ingest opened a metrics port: %s", l)
		}
		if entry["message"] == "ingest done" {
			done = entry
		}
	}
	if done == nil || done["events"] != float64(lines) || done["quarantined"] != float64(truth.Poison) || done["duplicates"] != float64(truth.Redelivered) {
		t.Errorf("ingest done entry %v: want %d events, %d quarantined, %d duplicates", done, lines, truth.Poison, truth.Redelivered)
	}
	if c, _ := done["component"].(string); c != "ingest" {
		t.Errorf("ingest done entry %v: component %q", done, c)
	}
}

// TestOneShotRunsSideBySide: two file ingests at once beside a running one
// that holds the default metrics port: none clashes.
func TestOneShotRunsSideBySide(t *testing.T) {
	in, _, _ := longFile(t, 2_000)
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", defaultListen)
	if err != nil {
		t.Skipf("%s is taken already, by another ingester: %v", defaultListen, err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	logs := make([]bytes.Buffer, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(ingestBin, "--from", "file:"+in, "--to", "stdout")
			cmd.Stderr = &logs[i]
			errs[i] = cmd.Run()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d: %v\n%s", i, err, logs[i].String())
		}
	}
}

// TestListenPortZeroIsLogged: --listen 127.0.0.1:0 picks a free port and
// logs it, and /healthz answers there.
func TestListenPortZeroIsLogged(t *testing.T) {
	p := startOps(t, "--from", "file:-", "--to", "stdout", "--listen", "127.0.0.1:0")
	addr := waitListenAddr(t, p.log)
	if code, body := probe(addr, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}
}

// logFile is a process's stderr and stdout, written to a file and read
// back whole while the process runs.
type logFile string

func (l logFile) String() string {
	b, _ := os.ReadFile(string(l))
	return string(b)
}

type opsProc struct {
	cmd   *exec.Cmd
	log   logFile
	stdin io.WriteCloser // open until the test ends, for file:-
}

func startOps(t *testing.T, args ...string) *opsProc {
	t.Helper()
	cmd := exec.Command(ingestBin, args...)
	p := &opsProc{cmd: cmd, log: logFile(filepath.Join(t.TempDir(), "ingest.log"))}
	f, err := os.Create(string(p.log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cmd.Stderr, cmd.Stdout = f, f
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait(); stdin.Close() })
	return p
}

// waitReadyz polls /readyz until it answers want, failing the test after
// within; it returns how long that took.
func waitReadyz(t *testing.T, addr string, log logFile, want int, within time.Duration, when string) time.Duration {
	t.Helper()
	start := time.Now()
	var code int
	var body string
	for time.Since(start) < within {
		if code, body = probe(addr, "/readyz"); code == want {
			return time.Since(start)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("/readyz %d %q for %s %s, want %d\nlog:\n%s", code, body, within, when, want, log.String())
	return 0
}

func waitListenAddr(t *testing.T, p interface{ String() string }) string {
	t.Helper()
	var addr string
	waitFor(t, "the metrics address in the log", 30*time.Second, func() bool {
		sc := bufio.NewScanner(strings.NewReader(p.String()))
		for sc.Scan() {
			var e struct{ Message, Addr string }
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Message == "serving /metrics, /healthz, /readyz" {
				addr = e.Addr
				return true
			}
		}
		return false
	})
	return addr
}

func probe(addr, path string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, strings.TrimSpace(b.String())
}

// TestReadyzFollowsTheBroker: on a broker of the test's own, /readyz is
// 200 once the ingester has partitions, 503 within seconds of the broker
// going away (while /healthz stays 200), and 200 again after it is back.
func TestReadyzFollowsTheBroker(t *testing.T) {
	b := kafkatest.StartBroker(t)
	topic := kafkatest.NewTopic(t, b.Addr, 2)
	kafkatest.ProduceRecords(t, b.Addr, topic, kafkatest.Record{Value: []byte(`{"poison": true`)})
	p := startOps(t, "--from", fmt.Sprintf("kafka://%s/%s?group=readyz&max_wait=1s", b.Addr, topic),
		"--to", "file:"+filepath.Join(t.TempDir(), "out.ndjson"), "--listen", "127.0.0.1:0")
	addr := waitListenAddr(t, p.log)
	waitReadyz(t, addr, p.log, http.StatusOK, 60*time.Second, "after start")
	b.Stop(t)
	took := waitReadyz(t, addr, p.log, http.StatusServiceUnavailable, 10*time.Second, "after the broker stopped")
	t.Logf("unready %s after the broker stopped", took.Round(time.Millisecond))
	if code, _ := probe(addr, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz %d while the broker is down: liveness must not follow it", code)
	}
	b.Start(t)
	took = waitReadyz(t, addr, p.log, http.StatusOK, 90*time.Second, "after the broker came back")
	t.Logf("ready again %s after the broker answered", took.Round(time.Millisecond))
}

// TestReadyzFollowsClickHouse: on a ClickHouse server of the test's own,
// /readyz is 200 while the ingester can store, 503 within seconds of the
// server being killed (while /healthz stays 200), and 200 again after it
// restarts; the ingester then stores what came meanwhile.
func TestReadyzFollowsClickHouse(t *testing.T) {
	srv := clickhousetest.Start(t)
	// No TTL: the corpus is dated 2026-11-02, and from 30 days on the
	// server's merges deleted the rows this test counts.
	p := startOps(t, "--from", "file:-", "--to", srv.DSN(), "--migrate", "--clickhouse-ttl", "0", "--clickhouse-body-ttl", "0", "--listen", "127.0.0.1:0",
		"--merge-window", "100ms", "--lateness", "100ms", "--idle-advance", "200ms", "--flush-interval", "50ms")
	addr := waitListenAddr(t, p.log)
	c := pipelinetest.Generate(40, 300)
	half := len(c.Lines) / 2
	if _, err := p.stdin.Write(append(bytes.Join(c.Lines[:half], []byte("\n")), '\n')); err != nil {
		t.Fatal(err)
	}
	waitReadyz(t, addr, p.log, http.StatusOK, 60*time.Second, "after start")
	srv.Kill(t)
	took := waitReadyz(t, addr, p.log, http.StatusServiceUnavailable, 10*time.Second, "after the server was killed")
	t.Logf("unready %s after the server was killed", took.Round(time.Millisecond))
	if code, _ := probe(addr, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz %d while the server is down: liveness must not follow it", code)
	}
	if code, body := probe(addr, "/readyz"); !strings.Contains(body, "sink") {
		t.Errorf("/readyz %d %q does not name the sink", code, body)
	}
	if _, err := p.stdin.Write(append(bytes.Join(c.Lines[half:], []byte("\n")), '\n')); err != nil {
		t.Fatal(err)
	}
	srv.Restart(t)
	took = waitReadyz(t, addr, p.log, http.StatusOK, 60*time.Second, "after the server restarted")
	t.Logf("ready again %s after the server answered", took.Round(time.Millisecond))
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, p.log.String())
	}
	got := strings.TrimSpace(srv.Query(t, "SELECT uniqExact(exchange_id) FROM mcplens.exchanges"))
	if want := strconv.Itoa(len(c.IDs)); got != want {
		t.Errorf("stored %s calls after the restart, want %s\nlog:\n%s", got, want, p.log.String())
	}
}
