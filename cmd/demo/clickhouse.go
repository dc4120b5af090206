package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// chServer is a ClickHouse server of the demo's own
// (deploy/clickhouse/clickhouse.sh on free ports, its data in the
// workdir), for --store clickhouse: the demo never writes into a server
// it happens to find.
type chServer struct {
	dsn    string
	script string
	env    []string
}

// startClickHouse starts the demo's server and returns once it answers
// /ping. The first run pip-installs the pinned chdb-core.
func startClickHouse(ctx context.Context, script, workdir string) (*chServer, error) {
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("clickhouse script %s: %w (run the demo from the repository root)", script, err)
	}
	return retryStart(ctx, func() (*chServer, error) { return tryClickHouse(ctx, script, workdir) })
}

func tryClickHouse(ctx context.Context, script, workdir string) (*chServer, error) {
	var ports [2]int
	for i := range ports {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		_, p, _ := strings.Cut(addr, ":")
		if ports[i], err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("free port %q: %w", addr, err)
		}
	}
	s := &chServer{script: script, env: append(os.Environ(),
		"MCPLENS_CLICKHOUSE_DIR="+filepath.Join(workdir, "clickhouse"),
		fmt.Sprintf("MCPLENS_CLICKHOUSE_PORT=%d", ports[0]), fmt.Sprintf("MCPLENS_CLICKHOUSE_HTTP_PORT=%d", ports[1]))}
	out, err := s.run(ctx, "start")
	if err != nil {
		// A half-started server must not outlive the demo.
		return nil, fmt.Errorf("start the demo's ClickHouse server on ports %d and %d: %w\n%s", ports[0], ports[1], errors.Join(err, s.stop()), tailOf(out))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CLICKHOUSE_DSN="); ok {
			s.dsn = v
		}
	}
	if s.dsn == "" {
		return nil, fmt.Errorf("clickhouse.sh start printed no CLICKHOUSE_DSN: %s (stop: %v)", tailOf(out), s.stop())
	}
	return s, nil
}

func (s *chServer) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := s.run(ctx, "stop"); err != nil {
		return fmt.Errorf("stop the demo's ClickHouse server: %w\n%s", err, tailOf(out))
	}
	return nil
}

// run runs the script; stdout (the DSN lines) comes back, stderr
// (progress) is kept for an error.
func (s *chServer) run(ctx context.Context, verb string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "bash", s.script, verb) //nolint:gosec // G204: the repository's own script
	cmd.Env = s.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return append(out, stderr.Bytes()...), err
	}
	return out, nil
}
