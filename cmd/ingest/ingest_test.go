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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/pipeline/kafkatest"
	"github.com/mcplens/mcplens/pipeline/pipelinetest"
)

var ingestBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ingest-test")
	if err != nil {
		panic(err)
	}
	ingestBin = filepath.Join(dir, "ingest")
	build := exec.Command("go", "build", "-o", ingestBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		panic("build ingest: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type ingestProc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
}

func startIngest(t *testing.T, args ...string) *ingestProc {
	t.Helper()
	cmd := exec.Command(ingestBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = os.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return &ingestProc{cmd: cmd, stderr: &stderr}
}

// outputIDs counts the exchange ids in the NDJSON output file.
func outputIDs(t *testing.T, path string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	f, err := os.Open(path)
	if err != nil {
		return counts
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec struct {
			ExchangeID string `json:"exchange_id"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) == nil {
			counts[rec.ExchangeID]++
		}
	}
	return counts
}

func waitFor(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestKafkaKillAndRestart consumes a corpus from a real broker, SIGKILLs
// the ingester mid-stream, restarts it, and checks that every exchange is
// in the output exactly once and that the poison message, and only it, is
// quarantined.
func TestKafkaKillAndRestart(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.NewTopic(t, brokers, 3)
	c := pipelinetest.Generate(3000, 300)
	keys, lines, ids := c.Keys, c.Lines, c.IDs
	poison := []byte(`{"this is": "not a contract event"`)
	keys = append(keys[:1500:1500], append([][]byte{[]byte("s-1")}, keys[1500:]...)...)
	lines = append(lines[:1500:1500], append([][]byte{poison}, lines[1500:]...)...)
	// The first half is on the topic before the first ingester starts, the
	// second only after it was killed: the kill always lands mid-stream,
	// however fast the ingester reads.
	recs := kafkatest.Keyed(keys, lines, 3)
	half := len(recs) / 2
	kafkatest.ProduceRecords(t, brokers, topic, recs[:half]...)

	out := filepath.Join(t.TempDir(), "out.ndjson")
	args := []string{
		"--from", fmt.Sprintf("kafka://%s/%s?group=g-%s", brokers, topic, topic), "--to", "file:" + out,
		"--listen", "", "--batch-size", "200", "--flush-interval", "50ms",
		"--merge-window", "100ms", "--lateness", "100ms", "--idle-advance", "300ms",
	}
	first := startIngest(t, args...)
	waitFor(t, "first output", 60*time.Second, func() bool { n := len(outputIDs(t, out)); return n > 300 })
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	killedAt := len(outputIDs(t, out))
	if killedAt >= len(ids) {
		t.Fatalf("the ingester stored %d exchanges of %d before the second half was produced", killedAt, len(ids))
	}
	kafkatest.ProduceRecords(t, brokers, topic, recs[half:]...)

	second := startIngest(t, args...)
	waitFor(t, "every exchange", 90*time.Second, func() bool { return len(outputIDs(t, out)) >= len(ids) })
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("graceful stop: %v\n%s", err, second.stderr)
	}

	counts := outputIDs(t, out)
	for _, id := range ids {
		if counts[id] != 1 {
			t.Errorf("exchange %s present %d times", id, counts[id])
		}
	}
	if len(counts) != len(ids) {
		t.Errorf("%d distinct exchanges, want %d", len(counts), len(ids))
	}
	q, err := os.ReadFile(out + ".quarantine")
	if err != nil {
		t.Fatal(err)
	}
	qlines := strings.Split(strings.TrimSpace(string(q)), "\n")
	if len(qlines) != 1 || !strings.Contains(qlines[0], `not a contract event`) {
		t.Errorf("quarantine holds %d lines, want exactly the poison message:\n%s", len(qlines), q)
	}
	t.Logf("killed after %d of %d exchanges; restart completed the rest", killedAt, len(ids))
	if !strings.Contains(second.stderr.String(), `"pipeline stopped"`) {
		t.Errorf("no graceful stop logged:\n%s", second.stderr)
	}
}

// TestFileToStdout runs the binary on a fixture file and checks exit code,
// output and the quarantine report on stderr.
func TestFileToStdout(t *testing.T) {
	dir := t.TempDir()
	c := pipelinetest.Generate(50, 300)
	lines, ids := c.Lines, c.IDs
	in := filepath.Join(dir, "in.ndjson")
	data := append(bytes.Join(lines, []byte("\n")), []byte("\n{broken\n")...)
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(context.Background(), ingestBin, "--from", "file:"+in, "--to", "stdout", "--listen", "")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, stderr.String())
	}
	if n := strings.Count(stdout.String(), "\n"); n != len(ids) {
		t.Errorf("%d records on stdout, want %d", n, len(ids))
	}
	if !strings.Contains(stderr.String(), "{broken") {
		t.Errorf("quarantined line not reported on stderr:\n%s", stderr.String())
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--from", "ftp://x", "--listen", ""},
		{"--from", "kafka://127.0.0.1:1/t?group=g&nope=1", "--listen", ""},
		{"--from", "file:x", "--batch-size", "0"},
		{"--from", "file:x", "--batch-max-bytes", "-1"},
		{"--from", "file:x", "--duckdb-threads", "-1"},
		{"--from", "file:x", "--duckdb-memory-limit", "lots"},
		{"--from", "file:x", "--duckdb-memory-limit", "512MB&threads=9"},
	} {
		cmd := exec.Command(ingestBin, args...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("ingest %v succeeded:\n%s", args, out)
		}
		// A bad setting is named before the missing file is opened.
		if len(args) > 2 && args[0] == "--from" && args[1] == "file:x" && !strings.Contains(string(out), strings.TrimPrefix(args[2], "--")) {
			t.Errorf("ingest %v: the error does not name %s:\n%s", args, args[2], out)
		}
	}
}

// TestDuckDBSettings: a duckdb: sink that ingest only writes gets one
// DuckDB thread and a memory limit of its own unless the flags say
// otherwise (the store applies them: duckstore's TestOpenSettings); with
// --api-listen, TestSingleProcessAPI sees DuckDB's threads and the
// serving memory limit.
func TestDuckDBSettings(t *testing.T) {
	dir := t.TempDir()
	c := pipelinetest.Generate(20, 100)
	in := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(in, append(bytes.Join(c.Lines, []byte("\n")), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		flags []string
		want  string
	}{
		{nil, `"threads":1,"memory_limit":"512MB",`},
		{[]string{"--duckdb-threads", "3", "--duckdb-memory-limit", "1.5GiB"}, `"threads":3,"memory_limit":"1.5GiB",`},
	} {
		args := append([]string{"--from", "file:" + in, "--to", "duckdb:" + filepath.Join(dir, fmt.Sprintf("t%d.duckdb", i)), "--listen", ""}, tc.flags...)
		out, err := exec.Command(ingestBin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ingest %v: %v\n%s", args, err, out)
		}
		if !strings.Contains(string(out), `"opening DuckDB read-write`) || !strings.Contains(string(out), tc.want) {
			t.Errorf("ingest %v: no %s in the DuckDB open's log line:\n%s", tc.flags, tc.want, out)
		}
	}
}

// TestSingleProcessAPI reads a DuckDB file while it is written: ingest
// serves the API from its own store (DuckDB lets one process write a
// file), here while its stdin is still open.
func TestSingleProcessAPI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "m.duckdb")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(ingestBin, "--from", "file:-", "--to", "duckdb:"+db, "--listen", "", "--api-listen", addr,
		"--merge-window", "100ms", "--lateness", "100ms", "--idle-advance", "200ms", "--flush-interval", "50ms")
	cmd.Env = append(os.Environ(), "MCPLENS_TOKENS=single-process-token-0123 scopes=read name=test")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	c := pipelinetest.Generate(40, 200)
	if _, err := stdin.Write(append(bytes.Join(c.Lines, []byte("\n")), '\n')); err != nil {
		t.Fatal(err)
	}
	get := func() (int, string) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/exchanges?from=2026-11-02T09:00:00Z&to=2026-11-02T11:00:00Z&limit=100", nil)
		req.Header.Set("Authorization", "Bearer single-process-token-0123")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	waitFor(t, "all exchanges through the API while ingest runs", 30*time.Second, func() bool {
		code, body := get()
		return code == 200 && strings.Count(body, `"exchange_id"`) == len(c.IDs)
	})
	// The same server limits as cmd/api: both use api.NewServer.
	apitest.CheckServerLimits(t, addr, api.MaxHeaderBytes, api.ReadHeaderTimeout)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, stderr.String())
	}
	// The API's queries share the database: DuckDB keeps its own threads,
	// and the cache has more room than a writer's.
	if !strings.Contains(stderr.String(), `"threads":0,"memory_limit":"1GB",`) {
		t.Errorf("--api-listen: DuckDB opened without its default threads or the serving memory limit:\n%s", stderr.String())
	}
}
