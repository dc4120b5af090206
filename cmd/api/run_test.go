package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/internal/leaktest"
	"github.com/mcplens/mcplens/internal/logging/logtest"
)

const token = "cmd-api-test-token-0123456789"

// tmpDir holds what the tests share (the built binary).
var tmpDir string

func TestMain(m *testing.M) {
	var err error
	if tmpDir, err = os.MkdirTemp("", "cmd-api-test"); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = os.RemoveAll(tmpDir)
	if code == 0 {
		if err := leaktest.Wait(5*time.Second, "main.run", "mcplens/mcplens/api.", "net/http.(*Server).Serve"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// corpusFile writes the conformance corpus to a closed DuckDB file.
func corpusFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "corpus.duckdb")
	s, err := apitest.OpenCorpus(context.Background(), path, apitest.CorpusPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func testConfig(t *testing.T, args ...string) config {
	t.Helper()
	var cfg config
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// start runs run in the background and returns the base URL, the log and
// a stop function that cancels it and returns run's error.
func start(t *testing.T, cfg config, tokens *api.Tokens) (string, *logtest.Buffer, func() error) {
	t.Helper()
	logs := &logtest.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, deps{Logger: zerolog.New(logs), Tokens: tokens, Listening: func(a string) { addr <- a }})
	}()
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			return errors.New("run did not return 20s after cancel")
		}
	}
	select {
	case a := <-addr:
		t.Cleanup(func() { _ = stop() })
		return "http://" + a, logs, stop
	case err := <-done:
		cancel()
		t.Fatalf("run: %v\n%s", err, logs)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("run did not listen within 30s\n%s", logs)
	}
	return "", nil, nil
}

func tokens(t *testing.T) *api.Tokens {
	t.Helper()
	tk, err := loadTokens("", token+" scopes=read name=tester")
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func get(t *testing.T, url, tok string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRun serves a DuckDB file read-only over real HTTP, then shuts down
// cleanly, logging each step.
func TestRun(t *testing.T) {
	path := corpusFile(t)
	cfg := testConfig(t, "--store", "duckdb:"+path, "--listen", "127.0.0.1:0")
	base, logs, stop := start(t, cfg, tokens(t))
	for _, tc := range []struct {
		path, token string
		status      int
		contains    string
	}{
		{"/healthz", "", 200, `"ok"`},
		{"/readyz", "", 200, `"ready"`},
		{"/openapi.json", "", 200, `"3.1.0"`},
		{"/api/v1/servers?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z", token, 200, `"gosdk"`},
		{"/api/v1/exchanges/multi_observer%2Freq-77", token, 200, `"claude-code"`},
		{"/api/v1/servers", "", 401, `"status":401`},
		{"/metrics", "", 200, `mcplens_api_requests_total{route="/api/v1/servers",status="200"} 1`},
	} {
		status, body := get(t, base+tc.path, tc.token)
		if status != tc.status || !strings.Contains(body, tc.contains) {
			t.Errorf("GET %s: %d %.300s; want %d with %s", tc.path, status, body, tc.status, tc.contains)
		}
	}
	apitest.CheckServerLimits(t, strings.TrimPrefix(base, "http://"), api.MaxHeaderBytes, api.ReadHeaderTimeout)
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, want := range []string{`"threads":0,"memory_limit":"1GB","message":"opening DuckDB read-only`, "opened store", "serving the API",
		`"token":"tester"`, "stopped api server", "closed store"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs.String(), token) {
		t.Error("the log contains the token")
	}
}

// TestRunMigrate creates an empty store with --migrate and serves it.
func TestRunMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.duckdb")
	base, _, stop := start(t, testConfig(t, "--store", "duckdb:"+path, "--listen", "127.0.0.1:0", "--migrate"), tokens(t))
	if status, body := get(t, base+"/api/v1/servers", token); status != 200 || !strings.Contains(body, `"rows":[]`) {
		t.Errorf("empty store: %d %s", status, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("--migrate did not create the file: %v", err)
	}
}

// TestRunRefuses: a missing file without --migrate, no tokens without
// --dev, a bad address.
func TestRunRefuses(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.duckdb")
	err := run(context.Background(), testConfig(t, "--store", "duckdb:"+missing), deps{Logger: zerolog.Nop(), Tokens: tokens(t)})
	if err == nil || !strings.Contains(err.Error(), "--migrate") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("a read-only start created the file")
	}
	err = run(context.Background(), testConfig(t, "--store", "duckdb:"+corpusFile(t), "--listen", "127.0.0.1:0"), deps{Logger: zerolog.Nop(), Tokens: &api.Tokens{}})
	if err == nil || !strings.Contains(err.Error(), "tokens") {
		t.Errorf("no tokens: %v", err)
	}
	err = run(context.Background(), testConfig(t, "--store", "duckdb:"+corpusFile(t), "--listen", "256.0.0.1:1"), deps{Logger: zerolog.Nop(), Tokens: tokens(t)})
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("bad listen address: %v", err)
	}
	t.Setenv("CLICKHOUSE_PASSWORD", "hunter2-secret")
	err = run(context.Background(), testConfig(t, "--store", "clickhouse://u@127.0.0.1:1/mcplens", "--clickhouse-dial-timeout", "2s"), deps{Logger: zerolog.Nop(), Tokens: tokens(t)})
	if err == nil || !strings.Contains(err.Error(), "clickhouse") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("unreachable clickhouse: %v", err)
	}
}

// TestRunDev warns loudly and serves without a token.
func TestRunDev(t *testing.T) {
	base, logs, _ := start(t, testConfig(t, "--store", "duckdb:"+corpusFile(t), "--listen", "127.0.0.1:0", "--dev"), &api.Tokens{})
	if status, _ := get(t, base+"/api/v1/clients", ""); status != 200 {
		t.Errorf("dev mode: %d", status)
	}
	if !strings.Contains(logs.String(), `"level":"warn"`) || !strings.Contains(logs.String(), "AUTHENTICATION DISABLED") {
		t.Errorf("no loud warning:\n%s", logs)
	}
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// apiBinary builds the command once for the tests that run it.
func apiBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binPath = filepath.Join(tmpDir, "api")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("build: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// TestBinarySIGTERM builds the command, serves, and stops it with
// SIGTERM: exit status 0 after a graceful shutdown.
func TestBinarySIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM")
	}
	cmd := exec.Command(apiBinary(t), "--store", "duckdb:"+corpusFile(t), "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "MCPLENS_TOKENS="+token+" scopes=read name=bin")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	var addr string
	var lines []string
	for addr == "" && sc.Scan() {
		lines = append(lines, sc.Text())
		var l struct {
			Message, Addr string
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Message == "serving the API" {
			addr = l.Addr
		}
	}
	if addr == "" {
		t.Fatalf("no 'serving the API' line:\n%s", strings.Join(lines, "\n"))
	}
	if status, _ := get(t, "http://"+addr+"/api/v1/tools", token); status != 200 {
		t.Errorf("tools: %d", status)
	}
	rest := make(chan string)
	go func() {
		var b strings.Builder
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		rest <- b.String()
	}()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	tail := <-rest
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, tail)
	}
	if !strings.Contains(tail, "stopped api server") || !strings.Contains(tail, "closed store") {
		t.Errorf("shutdown not logged:\n%s", tail)
	}
}
