package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplens/mcplens/internal/logging/logtest"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// TestStderrIsZerologJSON runs the ingester where libraries complain (a
// Kafka broker that refuses connections, a ClickHouse server that is not
// there, abused HTTP ports, bad input lines) and checks that everything on
// stderr is zerolog's JSON: no plain Go log line, no repeated key.
func TestStderrIsZerologJSON(t *testing.T) {
	t.Run("kafka refused", func(t *testing.T) {
		var stderr logtest.Buffer
		cmd := exec.Command(ingestBin, "--from", fmt.Sprintf("kafka://%s/t?group=logs&max_wait=200ms", logtest.RefusedAddr(t)),
			"--to", "stdout", "--listen", "127.0.0.1:0", "--log-level", "debug")
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		addr := waitListenAddr(t, &stderr)
		if code, _ := probe(addr, "/readyz"); code != http.StatusServiceUnavailable {
			t.Errorf("/readyz %d with no broker", code)
		}
		logtest.AbuseHTTP(t, addr)
		waitFor(t, "kafka-go's complaint about the refused connection", 30*time.Second, func() bool {
			return strings.Contains(stderr.String(), "connection refused")
		})
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		entries := logtest.CheckLines(t, "ingest from a refused broker", stderr.Bytes(), "ingest")
		if e := logtest.Find(entries, "connection refused"); e == nil {
			t.Errorf("no entry names the refused connection:\n%s", stderr.String())
		}
	})
	t.Run("clickhouse missing", func(t *testing.T) {
		cmd := exec.Command(ingestBin, "--from", "file:-", "--to", "clickhouse://"+logtest.RefusedAddr(t)+"/mcplens", "--log-level", "debug")
		cmd.Stdin = strings.NewReader("")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err == nil {
			t.Fatal("ingest into a missing server succeeded")
		}
		entries := logtest.CheckLines(t, "ingest into a missing server", stderr.Bytes(), "ingest")
		if e := logtest.Find(entries, "connection refused"); e == nil || e["level"] != "error" {
			t.Errorf("no error entry names the refused connection:\n%s", stderr.String())
		}
	})
	t.Run("bad input", func(t *testing.T) {
		in := filepath.Join(t.TempDir(), "bad.ndjson")
		lines := [][]byte{
			[]byte(`{"v":1,"event_id":"a","ts":"2026-11-02T10:00:00Z","kind":"exchange","source":"gateway","server":"s","http.status":200,"request_body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}","response_body":"\xff\xfe"}`),
			[]byte("{\"v\":1,\"event_id\":\"b\x00\",\"ts\":\"now\"}"),
			[]byte("not json at all \x1b[31m red"),
			append([]byte(`{"v":1,"event_id":"huge","request_body":"`), append(bytes.Repeat([]byte("A"), 3<<20), '"', '}')...),
		}
		if err := os.WriteFile(in, append(bytes.Join(lines, []byte("\n")), '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
		// --to stdout would put the quarantined lines on stderr as
		// {"quarantine":...} records (data, as documented); a file keeps
		// stderr for the log.
		cmd := exec.Command(ingestBin, "--from", "file:"+in, "--to", "file:"+filepath.Join(t.TempDir(), "out.ndjson"), "--progress", "never")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("ingest: %v\n%s", err, stderr.String())
		}
		entries := logtest.CheckLines(t, "ingest of bad lines", stderr.Bytes(), "ingest")
		if logtest.Find(entries, "ingest done") == nil {
			t.Errorf("no summary entry:\n%s", stderr.String())
		}
	})
}

// TestGiveUpOnReadOnlyUser: a ClickHouse user that may read but not write
// is refused every write, which no retry changes: ingest stops after
// --give-up-after with an error saying so, and exits non-zero, instead of
// retrying for ever.
func TestGiveUpOnReadOnlyUser(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	dbDSN, db := clickhousetest.NewDatabase(t, dsn)
	in := filepath.Join(t.TempDir(), "in.ndjson")
	line := `{"v":1,"event_id":"a","ts":"2026-11-02T10:00:00Z","kind":"exchange","source":"gateway","server":"s","http.status":200,"request_body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}","response_body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}"}` + "\n"
	if err := os.WriteFile(in, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	// The schema first, as its owner would create it.
	if out, err := exec.Command(ingestBin, "--from", "file:"+in, "--to", dbDSN, "--migrate", "--clickhouse-ttl", "0", "--clickhouse-body-ttl", "0", "--listen", "", "--progress", "never").CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	u, err := url.Parse(clickhousetest.WithDatabase(t, dsn, db))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("reader", clickhousetest.ReaderPassword)
	cmd := exec.Command(ingestBin, "--from", "file:"+in, "--to", u.String(), "--listen", "", "--progress", "never",
		"--give-up-after", "2s", "--retry-max", "200ms")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("ingest as a read-only user succeeded:\n%s", stderr.String())
		}
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("ingest as a read-only user still retries after 3 minutes (--give-up-after 2s):\n%.2000s", stderr.String())
	}
	entries := logtest.CheckLines(t, "ingest as a read-only user", stderr.Bytes(), "ingest")
	if e := logtest.Find(entries, "sink refused every write"); e == nil || !strings.Contains(stderr.String(), "read-only") {
		t.Errorf("no entry says the store refused every write as read-only:\n%.2000s", stderr.String())
	}
	if strings.Contains(stderr.String(), clickhousetest.ReaderPassword) {
		t.Error("the log holds the DSN's password")
	}
}
