package clickhousetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/internal/testport"
)

// Server is a private ClickHouse server run by deploy/clickhouse/clickhouse.sh
// on its own state directory and free ports, for tests that kill, stop and
// restart it. Its methods are not safe for concurrent use.
type Server struct {
	dir, script  string
	tcp, http    int
	dsn, httpURL string
	env          []string
}

// Start runs a new server for the test and stops it when the test ends.
// Without the pinned chdb-core (clickhouse.sh install) it skips the test,
// or fails it when CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{dir: t.TempDir(), script: Script(t)}
	// Below the ephemeral range: a restart must find its ports free.
	s.tcp = testport.Restartable(t, 2)
	s.http = s.tcp + 1
	s.env = append(os.Environ(),
		"MCPLENS_CLICKHOUSE_DIR="+s.dir,
		"MCPLENS_CLICKHOUSE_PORT="+strconv.Itoa(s.tcp),
		"MCPLENS_CLICKHOUSE_HTTP_PORT="+strconv.Itoa(s.http),
	)
	// Cleanups run last-in first-out: the server stops before its
	// TempDir is removed.
	t.Cleanup(func() {
		if out, err := s.run("stop"); err != nil {
			t.Logf("stop clickhouse in %s: %v\n%s", s.dir, err, out)
		}
	})
	s.Restart(t)
	return s
}

// Script returns the path of deploy/clickhouse/clickhouse.sh once the
// python it runs has the pinned chdb-core; without it the test skips, or
// fails when CI=true. For tests that have a program start its own server.
func Script(t testing.TB) string {
	t.Helper()
	script, err := scriptPath()
	if err != nil {
		t.Fatal(err)
	}
	py := os.Getenv("PYTHON")
	if py == "" {
		py = "python3"
	}
	check := exec.CommandContext(t.Context(), py, "-c", "import chdb, sys; sys.exit(chdb.__version__ != '26.9.0')") //nolint:gosec // the interpreter the developer chose
	if check.Run() != nil {
		missing(t, py+" has no chdb-core 26.9.0 (`deploy/clickhouse/clickhouse.sh install`)")
	}
	return script
}

// DSN is the server's clickhouse:// DSN naming database mcplens.
func (s *Server) DSN() string { return s.dsn }

// HTTPURL is the base URL of the server's HTTP interface.
func (s *Server) HTTPURL() string { return s.httpURL }

// Dir is the server's state directory (config, data, log).
func (s *Server) Dir() string { return s.dir }

// Addr is the native protocol's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tcp)) }

// Restart starts the server (again) on the same data directory and ports,
// and waits until it answers /ping.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	out, err := s.run("start")
	if err != nil {
		t.Fatalf("start clickhouse in %s: %v\n%s", s.dir, err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case EnvDSN:
			s.dsn = v
		case EnvHTTP:
			s.httpURL = v
		}
	}
	if s.dsn == "" || s.httpURL == "" {
		t.Fatalf("clickhouse.sh start printed %q", out)
	}
}

// Kill sends SIGKILL to the server and waits until it is gone.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if out, err := s.run("kill"); err != nil {
		t.Fatalf("kill clickhouse: %v\n%s", err, out)
	}
}

// Stop stops the server with SIGTERM (SIGKILL after 30 s).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if out, err := s.run("stop"); err != nil {
		t.Fatalf("stop clickhouse: %v\n%s", err, out)
	}
}

// Query runs one statement over the server's HTTP interface.
func (s *Server) Query(t testing.TB, stmt string) string {
	t.Helper()
	return Query(t, s.httpURL, stmt)
}

// run runs clickhouse.sh with the server's environment; stdout is
// returned, stderr (progress) kept for the error.
func (s *Server) run(cmd string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "bash", s.script, cmd) //nolint:gosec // our own script, a fixed subcommand
	c.Env = s.env
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return append(out, stderr.Bytes()...), err
	}
	return out, nil
}

// scriptPath finds deploy/clickhouse/clickhouse.sh above the working
// directory (go test runs in the package's directory).
func scriptPath() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "deploy", "clickhouse", "clickhouse.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("deploy/clickhouse/clickhouse.sh not found above the working directory")
		}
		dir = parent
	}
}
