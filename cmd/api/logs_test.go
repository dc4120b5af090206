package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplens/mcplens/internal/logging/logtest"
)

// TestStderrIsZerologJSON runs the API binary, abuses its port (no HTTP,
// a TLS handshake, a cut request, an oversized header) and asks it bad
// questions, then checks that everything on stderr is zerolog's JSON: no
// plain Go log line (net/http, gin), no repeated key.
func TestStderrIsZerologJSON(t *testing.T) {
	cmd := exec.Command(apiBinary(t), "--store", "duckdb:"+corpusFile(t), "--listen", "127.0.0.1:0", "--log-level", "debug")
	cmd.Env = append(os.Environ(), "MCPLENS_TOKENS="+token+" scopes=read name=bin", "GIN_MODE=debug")
	var stderr, stdout logtest.Buffer
	cmd.Stderr, cmd.Stdout = &stderr, &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var addr string
	deadline := time.Now().Add(30 * time.Second)
	for addr == "" && time.Now().Before(deadline) {
		for _, line := range bytes.Split(stderr.Bytes(), []byte("\n")) {
			var l struct{ Message, Addr string }
			if json.Unmarshal(line, &l) == nil && l.Message == "serving the API" {
				addr = l.Addr
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if addr == "" {
		t.Fatalf("no 'serving the API' line:\n%s", stderr.String())
	}
	logtest.AbuseHTTP(t, addr)
	for path, want := range map[string]int{
		"/api/v1/exchanges?limit=-1&from=yesterday": http.StatusBadRequest,
		"/api/v1/nothing":          http.StatusNotFound,
		"/api/v1/exchanges/%ff%00": http.StatusBadRequest,
	} {
		if status, body := get(t, "http://"+addr+path, token); status != want {
			t.Errorf("%s: %d %s, want %d", path, status, body, want)
		}
	}
	if status, _ := get(t, "http://"+addr+"/api/v1/tools", ""); status != http.StatusUnauthorized {
		t.Errorf("no token: %d", status)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	entries := logtest.CheckLines(t, "api", stderr.Bytes(), "api")
	if e := logtest.Find(entries, "stopped api server"); e == nil {
		t.Errorf("no shutdown entry:\n%s", stderr.String())
	}
	var bad int
	for _, e := range entries {
		if s, _ := e["status"].(float64); s == http.StatusBadRequest {
			bad++
		}
	}
	if bad == 0 {
		t.Errorf("no access-log entry for the bad request:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "[GIN") || stdout.String() != "" {
		t.Errorf("gin's own output (GIN_MODE=debug) or anything on stdout:\n%s\nstdout:\n%s", stderr.String(), stdout.String())
	}
}
