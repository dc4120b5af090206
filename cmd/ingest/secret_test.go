package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/pipeline/pipelinetest"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// testPassword is what must never appear in ingest's output.
const testPassword = "Pw-S3cret-7f3a19"

// brokenClickHouse accepts connections and closes them at once: ingest
// gets as far as connecting, fails, and logs why.
func brokenClickHouse(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestPasswordNeverShown gives ingest a ClickHouse password in each way an
// operator can (in the --to DSN, as a DSN parameter, in CLICKHOUSE_PASSWORD,
// in --clickhouse-password, in MCPLENS_TO) and checks that no log line and
// no --help text shows it. The metric labels are checked against the real
// server in TestPasswordNotInMetrics.
func TestPasswordNeverShown(t *testing.T) {
	addr := brokenClickHouse(t)
	dsn := "clickhouse://ingest:" + testPassword + "@" + addr + "/mcplens"
	cases := []struct {
		name string
		args []string
		env  []string
	}{
		{"dsn userinfo", []string{"--to", dsn}, nil},
		{"dsn parameter", []string{"--to", "clickhouse://" + addr + "/mcplens?username=ingest&password=" + testPassword}, nil},
		{"CLICKHOUSE_PASSWORD", []string{"--to", "clickhouse://ingest@" + addr + "/mcplens"}, []string{"CLICKHOUSE_PASSWORD=" + testPassword}},
		{"flag", []string{"--to", "clickhouse://ingest@" + addr + "/mcplens", "--clickhouse-password", testPassword}, nil},
		{"MCPLENS_TO", nil, []string{"MCPLENS_TO=" + dsn}},
		{"invalid settings", []string{"--to", dsn, "--clickhouse-max-insert-rows", "0", "--batch-size", "-1"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--from", "file:../../pipeline/testdata/correlate/retries.ndjson", "--listen", "", "--log-level", "debug"}, tc.args...)
			cmd := exec.Command(ingestBin, args...)
			cmd.Env = append(os.Environ(), tc.env...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("ingest against a server that hangs up succeeded:\n%s", out)
			}
			if !bytes.Contains(out, []byte(`"level":"error"`)) {
				t.Errorf("no error logged:\n%s", out)
			}
			if bytes.Contains(out, []byte(testPassword)) {
				t.Errorf("the password is in ingest's output:\n%s", out)
			}
		})
	}
	help := exec.Command(ingestBin, "--help")
	help.Env = append(os.Environ(), "CLICKHOUSE_PASSWORD="+testPassword, "MCPLENS_CLICKHOUSE_PASSWORD="+testPassword, "MCPLENS_TO="+dsn)
	out, err := help.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-clickhouse-password") {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	if strings.Contains(string(out), testPassword) {
		t.Errorf("--help shows the password:\n%s", out)
	}
}

// TestPasswordNotInMetrics runs ingest against the real ClickHouse server
// with the test user's password in the DSN, and in CLICKHOUSE_PASSWORD,
// feeds it events, and checks that neither its logs (from start to a clean
// stop) nor /metrics ever show the password.
func TestPasswordNotInMetrics(t *testing.T) {
	base := clickhousetest.DSN(t)
	pw := clickhousetest.UserPassword
	for _, tc := range []struct {
		name string
		dsn  func(dsn string) string
		env  []string
	}{
		{"in the DSN", func(dsn string) string { return clickhousetest.WithUser(t, dsn, "mcplens", pw) }, nil},
		{"in CLICKHOUSE_PASSWORD", func(dsn string) string { return clickhousetest.WithUser(t, dsn, "mcplens", "") }, []string{"CLICKHOUSE_PASSWORD=" + pw}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn, _ := clickhousetest.NewDatabase(t, base)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			cmd := exec.Command(ingestBin, "--from", "file:-", "--to", tc.dsn(dsn), "--migrate", "--clickhouse-ttl", "0", "--clickhouse-body-ttl", "0", "--listen", addr,
				"--log-level", "debug", "--merge-window", "100ms", "--lateness", "100ms", "--idle-advance", "200ms", "--flush-interval", "50ms")
			cmd.Env = append(os.Environ(), tc.env...)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			cmd.Stdout, cmd.Stderr = &logs, &logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			c := pipelinetest.Generate(30, 200)
			if _, err := stdin.Write(append(bytes.Join(c.Lines, []byte("\n")), '\n')); err != nil {
				t.Fatal(err)
			}
			var metrics string
			waitFor(t, "exchanges stored and counted in /metrics", 60*time.Second, func() bool {
				resp, err := http.Get("http://" + addr + "/metrics")
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				metrics = string(b)
				return regexp.MustCompile(`(?m)^mcplens_ingest_sink_exchanges_total [1-9]`).MatchString(metrics)
			})
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("ingest: %v\n%s", err, logs.String())
			}
			if !strings.Contains(logs.String(), "ingest started") || !strings.Contains(logs.String(), "mcplens:xxxxx@") && tc.env == nil {
				t.Errorf("the start was not logged with the masked store URL:\n%s", logs.String())
			}
			if strings.Contains(logs.String(), pw) {
				t.Errorf("the password is in ingest's logs:\n%s", logs.String())
			}
			if strings.Contains(metrics, pw) {
				t.Errorf("the password is in /metrics")
			}
		})
	}
}
