package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process of the demo, logging to a file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan error
}

// processes starts the demo's binaries and stops whatever still runs.
type processes struct {
	bin, logDir string
	running     []*proc
}

func (ps *processes) start(ctx context.Context, name string, args ...string) (*proc, error) {
	path := filepath.Join(ps.bin, name)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s: %w (run `make build` first)", path, err)
	}
	logPath := filepath.Join(ps.logDir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", logPath, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); logf.Close() }()
	ps.running = append(ps.running, p)
	return p, nil
}

// stop sends SIGTERM and waits for a graceful exit (SIGKILL after 20s).
func (p *proc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("%s did not stop in 20s (see %s)", p.name, p.logPath)
	}
}

func (ps *processes) stopAll() {
	for i := len(ps.running) - 1; i >= 0; i-- {
		p := ps.running[i]
		select {
		case err := <-p.done:
			p.done <- err
		default:
			_ = p.stop()
		}
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("nothing listens on %s: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitHTTP(ctx context.Context, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("GET %s: %w", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ingest runs cmd/ingest into the store (to). From a file it runs to the
// end of input; from Kafka it runs until the consumed count stops growing
// and nothing is pending, then stops gracefully (flush and commit).
func ingest(ctx context.Context, ps *processes, from, to string, live bool) error {
	metricsAddr, err := freeAddr()
	if err != nil {
		return err
	}
	args := []string{"--from", from, "--to", to, "--migrate", "--listen", metricsAddr,
		"--merge-window", "300ms", "--lateness", "300ms", "--idle-advance", "500ms", "--flush-interval", "200ms"}
	p, err := ps.start(ctx, "ingest", args...)
	if err != nil {
		return err
	}
	if !live {
		if err := <-p.done; err != nil {
			return fmt.Errorf("ingest: %w (see %s)", err, p.logPath)
		}
		p.done <- nil
		return nil
	}
	if err := waitTCP(ctx, metricsAddr, 15*time.Second); err != nil {
		return fmt.Errorf("ingest metrics: %w (see %s)", err, p.logPath)
	}
	var last float64
	stable := 0
	deadline := time.Now().Add(60 * time.Second)
	for stable < 6 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		m, err := scrape("http://" + metricsAddr + "/metrics")
		if err != nil {
			continue
		}
		in, rows, pending := m["mcplens_ingest_events_total"], m["mcplens_ingest_exchanges_total"], m["mcplens_ingest_pending"]
		if in > 0 && in == last && pending == 0 && rows > 0 {
			stable++
		} else {
			stable = 0
		}
		last = in
	}
	return p.stop()
}

// scrape sums the samples of each metric family in a Prometheus text page.
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
			if j := strings.LastIndexByte(line, ' '); j >= 0 {
				rest = line[j+1:]
			}
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err == nil {
			out[name] += v
		}
	}
	return out, sc.Err()
}

// getJSON fetches one API answer.
func getJSON(ctx context.Context, url string) (any, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, errors.New("answer is not JSON")
	}
	return v, nil
}
