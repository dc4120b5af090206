package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
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
