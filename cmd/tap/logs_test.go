package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcplens/mcplens/internal/logging/logtest"
)

// cuttingUpstream answers every request with a 200 that promises a longer
// body than it sends, then drops the connection: the proxy's body copy
// fails, and httputil.ReverseProxy reports it on its ErrorLog.
func cuttingUpstream(t *testing.T) string {
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
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				_, _ = fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,")
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestStderrIsZerologJSON runs the tap binary in front of an upstream that
// cuts its answers, recording into a Kafka broker that refuses
// connections, abuses its ports, and checks that everything on stderr is
// zerolog's JSON: the reverse proxy's and net/http's complaints too.
func TestStderrIsZerologJSON(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "tap")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	listen, metrics := logtest.RefusedAddr(t), logtest.RefusedAddr(t)
	cmd := exec.Command(bin, "--upstream", cuttingUpstream(t), "--listen", listen, "--metrics-listen", metrics,
		"--to", "kafka://"+logtest.RefusedAddr(t)+"/events", "--log-level", "debug", "--drain-timeout", "2s")
	var stderr logtest.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitListening(t, listen)
	waitListening(t, metrics)
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, i)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+listen+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
		}
		cancel()
	}
	logtest.AbuseHTTP(t, listen)
	logtest.AbuseHTTP(t, metrics)
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s:\n%s", what, stderr.String())
			}
		}
	}
	waitFor("the proxy's body-copy error", func() bool { return strings.Contains(stderr.String(), "body copy") })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	entries := logtest.CheckLines(t, "tap", stderr.Bytes(), "tap")
	if e := logtest.Find(entries, "body copy"); e == nil || e["level"] != "warn" {
		t.Errorf("the proxy's body-copy error is not a warning entry: %v", e)
	}
	if logtest.Find(entries, "closed event queue") == nil {
		t.Errorf("no shutdown entry:\n%s", stderr.String())
	}
}
