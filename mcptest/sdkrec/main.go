// Command sdkrec records the traffic between one MCP SDK's own client and
// server through mcptest's recording proxy, with injected faults, as
// contract-v1 events: the committed recordings in testdata/real come from
// it (see record.sh beside it, which installs the SDKs and runs every
// scenario).
//
//	sdkrec -sdk python -scenario legacy -server 'python3 server.py' -client 'python3 client.py' -out python.ndjson
//
// The server command gets MCP_PORT (where to listen) and MCP_SCENARIO; the
// client command gets MCP_URL (the proxy) and MCP_SCENARIO and prints one
// JSON line per step to stdout: {"step":NAME,"start":RFC3339} when it
// starts one and {"step":NAME,"got":"result|tool_error|call_error",
// "attempts":N} when it is done. Events are labelled with attrs.scenario,
// attrs.step and attrs.client_got (what the client application concluded
// for that step), and appended to -out.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcplens/mcplens/mcptest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/tap"
)

func main() {
	var cfg config
	cfg.register(flag.CommandLine)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "sdkrec:", err)
		os.Exit(1)
	}
}

type config struct {
	sdk, scenario   string
	server, client  string
	out             string
	upPort, recPort int
	timeout         time.Duration
}

func (c *config) register(fs *flag.FlagSet) {
	fs.StringVar(&c.sdk, "sdk", "", "SDK under test: python, rust, typescript or typescript2 (names the server in the events)")
	fs.StringVar(&c.scenario, "scenario", "", "scenario name: legacy or modern")
	fs.StringVar(&c.server, "server", "", "command that starts the SDK's server (run with sh -c)")
	fs.StringVar(&c.client, "client", "", "command that runs the SDK's client (run with sh -c)")
	fs.StringVar(&c.out, "out", "", "NDJSON file the events are appended to")
	fs.IntVar(&c.upPort, "upstream-port", 22100, "port the server listens on (127.0.0.1)")
	fs.IntVar(&c.recPort, "proxy-port", 22200, "port the recording proxy listens on (127.0.0.1)")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "bound on one scenario")
}

// line is one line the client driver prints.
type line struct {
	Step     string    `json:"step"`
	Start    time.Time `json:"start"`
	Got      string    `json:"got"`
	Attempts int       `json:"attempts"`
	Detail   string    `json:"detail"`
}

func run(ctx context.Context, cfg config) error {
	faults, ok := plans[cfg.sdk+"/"+cfg.scenario]
	if !ok {
		return fmt.Errorf("no fault plan for %s/%s", cfg.sdk, cfg.scenario)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()

	env := append(os.Environ(), "MCP_SCENARIO="+cfg.scenario)
	srv := exec.CommandContext(ctx, "sh", "-c", cfg.server)
	srv.Env = append(env, "MCP_PORT="+strconv.Itoa(cfg.upPort))
	srv.Stdout, srv.Stderr = os.Stderr, os.Stderr
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start server: %w", err)
	}
	upAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.upPort))
	defer func() {
		_ = syscall.Kill(-srv.Process.Pid, syscall.SIGTERM)
		_ = srv.Wait()
		// sh is gone; wait for its children too, so the next scenario's
		// server does not find the old one still listening.
		for i := 0; i < 50 && dialable(upAddr); i++ {
			time.Sleep(100 * time.Millisecond)
		}
	}()
	if dialable(upAddr) {
		return fmt.Errorf("something already listens on %s", upAddr)
	}
	if err := mcptest.WaitListening(ctx, upAddr); err != nil {
		return err
	}

	col := &tap.Collector{}
	h, err := mcptest.NewProxy(mcptest.ProxyOptions{
		Upstream: &url.URL{Scheme: "http", Host: upAddr},
		Faults:   faults,
		Tap:      tap.Config{Observer: "gateway-1", Server: cfg.sdk},
		Writer:   col,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.recPort)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()

	marks, got, err := runClient(ctx, cfg, env)
	// Let in-flight exchanges (a cancelled call's stream) finish.
	time.Sleep(500 * time.Millisecond)
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = hs.Shutdown(sctx)
	scancel()
	if err != nil {
		return err
	}
	evs := mcptest.Label(col.Events(), cfg.scenario, marks)
	for i := range evs {
		var step string
		_ = json.Unmarshal(evs[i].Attrs["step"], &step)
		if g, ok := got[step]; ok {
			evs[i].Attrs["client_got"] = json.RawMessage(strconv.Quote(g))
		}
	}
	return write(cfg.out, evs)
}

func runClient(ctx context.Context, cfg config, env []string) ([]mcptest.Mark, map[string]string, error) {
	cl := exec.CommandContext(ctx, "sh", "-c", cfg.client)
	cl.Env = append(env, fmt.Sprintf("MCP_URL=http://127.0.0.1:%d/mcp", cfg.recPort))
	cl.Stderr = os.Stderr
	out, err := cl.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cl.Start(); err != nil {
		return nil, nil, fmt.Errorf("start client: %w", err)
	}
	marks := []mcptest.Mark{{Step: "connect", Start: time.Now()}}
	got := map[string]string{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Step == "" {
			fmt.Fprintln(os.Stderr, "client:", sc.Text())
			continue
		}
		if l.Got == "" {
			marks = append(marks, mcptest.Mark{Step: l.Step, Start: l.Start})
			continue
		}
		got[l.Step] = l.Got
		fmt.Fprintf(os.Stderr, "%s/%s %s: %s after %d attempt(s) %s\n", cfg.sdk, cfg.scenario, l.Step, l.Got, l.Attempts, l.Detail)
	}
	if err := cl.Wait(); err != nil {
		return nil, nil, fmt.Errorf("client: %w", err)
	}
	return marks, got, nil
}

func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		_ = c.Close()
	}
	return err == nil
}

func write(path string, evs []schema.Event) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	var b strings.Builder
	for _, ev := range evs {
		l, err := tap.MarshalLine(ev)
		if err != nil {
			return err
		}
		b.Write(l)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
