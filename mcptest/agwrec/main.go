// Command agwrec records a real agentgateway's access log: it serves
// mcptest's Go SDK server (the same tools as the SDK-traffic tests) where
// deploy/agentgateway/config.yaml expects its MCP target, starts the
// agentgateway binary it is given on that configuration, drives Go SDK
// clients through it over Streamable HTTP, and keeps agentgateway's stdout
// (its JSON log lines) as they were written. Next to them it writes what
// the client saw for every step: pipeline/agentgateway's tests check the
// mapping's records against it.
//
//	agwrec -agentgateway PATH -config deploy/agentgateway/config.yaml -out pipeline/agentgateway/testdata/recorded
//
// agentgateway binds its listeners on the wildcard address; run agwrec in
// a network namespace of its own (record.sh beside it does) so that
// nothing is reachable beyond loopback. Each HTTP request of a step carries
// the header x-mcplens-step: RUN/STEP (the shipped configuration logs every
// request header), which is how a log line is tied to the step that caused
// it.
//
// Two runs: "shipped" uses the configuration as it is; "timeout" adds a
// route timeout (agentgateway's timeout.requestTimeout, which the shipped
// configuration does not set) to record a slow upstream timing out.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplens/mcplens/mcptest"
)

func main() {
	bin := flag.String("agentgateway", "", "agentgateway binary")
	cfgPath := flag.String("config", "deploy/agentgateway/config.yaml", "agentgateway configuration to run")
	out := flag.String("out", "pipeline/agentgateway/testdata/recorded", "directory for access.log and client.json")
	upstream := flag.String("upstream", "127.0.0.1:8931", "where the MCP server listens (the configuration's target)")
	gateway := flag.String("gateway", "http://127.0.0.1:3000/mcp", "the MCP endpoint agentgateway serves")
	timeout := flag.String("route-timeout", "1s", "requestTimeout of the timeout run")
	flag.Parse()
	if err := run(*bin, *cfgPath, *out, *upstream, *gateway, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "agwrec:", err)
		os.Exit(1)
	}
}

// Seen is what the client saw for one step, a line of client.json.
type Seen struct {
	Run  string `json:"run"`
	Step string `json:"step"`
	// Got is result, tool_error (isError true), jsonrpc_error (an error
	// answer with its Code), call_error (the call failed without a
	// JSON-RPC error: cancelled, timed out, the connection failed),
	// connect_error (the session could not be set up) or none (no call:
	// connect and close).
	Got    string `json:"got"`
	Code   int64  `json:"code,omitempty"`
	Detail string `json:"detail,omitempty"`
	// HTTP is every HTTP exchange of the step as the client's transport
	// saw it: "POST tools/call 200 text/event-stream", "GET 405", "POST
	// tools/call error: context canceled".
	HTTP      []string `json:"http"`
	ElapsedMS int64    `json:"elapsed_ms"`
}

type recorder struct {
	bin, gateway string
	upstream     string
	out          io.Writer
	seen         []Seen

	mu   sync.Mutex
	step string
	http []string
}

func run(bin, cfgPath, out, upstream, gateway, timeout string) error {
	if bin == "" {
		return errors.New("-agentgateway is required")
	}
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		return err
	}
	timeoutCfg, err := withRouteTimeout(raw, timeout)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "agwrec")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(out, "access.log"))
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	r := &recorder{bin: bin, gateway: gateway, upstream: upstream, out: logFile}

	shipped := filepath.Join(tmp, "config.yaml")
	if err := os.WriteFile(shipped, raw, 0o600); err != nil {
		return err
	}
	if err := r.withGateway(shipped, r.shippedRun); err != nil {
		return fmt.Errorf("shipped run: %w", err)
	}
	timed := filepath.Join(tmp, "config-timeout.yaml")
	if err := os.WriteFile(timed, timeoutCfg, 0o600); err != nil {
		return err
	}
	if err := r.withGateway(timed, r.timeoutRun); err != nil {
		return fmt.Errorf("timeout run: %w", err)
	}
	var buf bytes.Buffer
	for _, s := range r.seen {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return os.WriteFile(filepath.Join(out, "client.json"), buf.Bytes(), 0o644)
}

// withRouteTimeout adds policies.timeout.requestTimeout to the first route.
func withRouteTimeout(raw []byte, d string) ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	binds, _ := cfg["binds"].([]any)
	if len(binds) == 0 {
		return nil, errors.New("config has no binds")
	}
	listeners, _ := binds[0].(map[string]any)["listeners"].([]any)
	if len(listeners) == 0 {
		return nil, errors.New("config has no listeners")
	}
	routes, _ := listeners[0].(map[string]any)["routes"].([]any)
	if len(routes) == 0 {
		return nil, errors.New("config has no routes")
	}
	route := routes[0].(map[string]any)
	pol, _ := route["policies"].(map[string]any)
	if pol == nil {
		pol = map[string]any{}
		route["policies"] = pol
	}
	pol["timeout"] = map[string]any{"requestTimeout": d}
	return yaml.Marshal(cfg)
}

// withGateway runs fn with the MCP server up and agentgateway running on
// cfg, its stdout appended to the access log. agentgateway is stopped with
// SIGTERM and its output drained before withGateway returns.
func (r *recorder) withGateway(cfg string, fn func(ctx context.Context, up *upstream) error) error {
	up, err := startUpstream(r.upstream)
	if err != nil {
		return err
	}
	defer up.stop()
	cmd := exec.Command(r.bin, "-f", cfg)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	copied := make(chan error, 1)
	go func() {
		// Line by line, so that a line is never cut when the process ends.
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if _, err := fmt.Fprintf(r.out, "%s\n", sc.Bytes()); err != nil {
				copied <- err
				return
			}
		}
		copied <- sc.Err()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	gw, err := url.Parse(r.gateway)
	if err == nil {
		err = mcptest.WaitListening(ctx, gw.Host)
	}
	if err == nil {
		err = fn(ctx, up)
	}
	// Let the last access-log lines out before stopping.
	time.Sleep(time.Second)
	_ = cmd.Process.Signal(os.Interrupt)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-waited
	}
	if cerr := <-copied; err == nil {
		err = cerr
	}
	return err
}

type upstream struct {
	srv *http.Server
	ln  net.Listener
}

func startUpstream(addr string) (*upstream, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := mcptest.NewMCPServer()
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	u := &upstream{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go func() { _ = u.srv.Serve(ln) }()
	return u, nil
}

func (u *upstream) stop() { _ = u.srv.Close() }

// RoundTrip labels each request with the current step and notes what the
// client got back.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	step := r.step
	r.mu.Unlock()
	req = req.Clone(req.Context())
	req.Header.Set("x-mcplens-step", step)
	what := req.Method
	if req.Body != nil && req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			var head struct {
				Method string `json:"method"`
			}
			raw, _ := io.ReadAll(b)
			if json.Unmarshal(raw, &head) == nil && head.Method != "" {
				what += " " + head.Method
			} else if len(raw) > 0 {
				what += " response"
			}
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		r.note(step, fmt.Sprintf("%s error: %v", what, err))
		return nil, err
	}
	r.note(step, fmt.Sprintf("%s %d %s", what, resp.StatusCode, resp.Header.Get("Content-Type")))
	return resp, nil
}

func (r *recorder) note(step, s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if step == r.step {
		r.http = append(r.http, strings.TrimSpace(s))
	}
}

// begin starts a step; done records what the client saw.
func (r *recorder) begin(run, step string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.step, r.http = run+"/"+step, nil
	return time.Now()
}

func (r *recorder) done(run, step string, start time.Time, res *mcp.CallToolResult, err error) {
	// The HTTP exchanges of a step end shortly after the SDK returns (the
	// notification of a cancelled call, a stream's last bytes).
	time.Sleep(300 * time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Seen{Run: run, Step: step, HTTP: r.http, ElapsedMS: time.Since(start).Milliseconds()}
	var werr *jsonrpc.Error
	switch {
	case err != nil && errors.As(err, &werr):
		s.Got, s.Code, s.Detail = "jsonrpc_error", werr.Code, werr.Message
	case err != nil && strings.HasPrefix(step, "connect"):
		s.Got, s.Detail = "connect_error", err.Error()
	case err != nil:
		s.Got, s.Detail = "call_error", err.Error()
	case res == nil:
		s.Got = "none"
	case res.IsError:
		s.Got, s.Detail = "tool_error", mcptest.ResultText(res)
	default:
		s.Got, s.Detail = "result", mcptest.ResultText(res)
	}
	fmt.Fprintf(os.Stderr, "agwrec: %s/%s: %s %d %s %v\n", run, step, s.Got, s.Code, s.Detail, s.HTTP)
	r.seen = append(r.seen, s)
	r.step, r.http = "", nil
}

func (r *recorder) client() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "agwrec", Version: "1.0.0"}, &mcp.ClientOptions{})
}

func (r *recorder) transport() *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{Endpoint: r.gateway, HTTPClient: &http.Client{Transport: r}, MaxRetries: -1}
}

func (r *recorder) connect(ctx context.Context, run, step string) (*mcp.ClientSession, error) {
	start := r.begin(run, step)
	cs, err := r.client().Connect(ctx, r.transport(), nil)
	r.done(run, step, start, nil, err)
	return cs, err
}

func (r *recorder) call(ctx context.Context, cs *mcp.ClientSession, run, step string, params *mcp.CallToolParams, limit time.Duration) {
	start := r.begin(run, step)
	cctx, cancel := context.WithTimeout(ctx, limit)
	res, err := cs.CallTool(cctx, params)
	cancel()
	r.done(run, step, start, res, err)
}

func (r *recorder) shippedRun(ctx context.Context, up *upstream) error {
	const run = "shipped"
	cs, err := r.connect(ctx, run, "connect")
	if err != nil {
		return err
	}
	start := r.begin(run, "list_tools")
	lr, err := cs.ListTools(ctx, nil)
	var res *mcp.CallToolResult
	if err == nil {
		names := make([]string, 0, len(lr.Tools))
		for _, t := range lr.Tools {
			names = append(names, t.Name)
		}
		res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(names, ",")}}}
	}
	r.done(run, "list_tools", start, res, err)

	r.call(ctx, cs, run, "call_ok", &mcp.CallToolParams{Name: mcptest.ToolLookup, Arguments: map[string]any{"key": "a"}}, 10*time.Second)
	r.call(ctx, cs, run, "tool_error", &mcp.CallToolParams{Name: mcptest.ToolAlwaysFails, Arguments: map[string]any{}}, 10*time.Second)
	r.call(ctx, cs, run, "unknown_tool", &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}, 10*time.Second)
	r.call(ctx, cs, run, "invalid_params", &mcp.CallToolParams{Name: mcptest.ToolLookup, Arguments: map[string]any{"key": 7}}, 10*time.Second)
	progress := &mcp.CallToolParams{Name: mcptest.ToolCountSlowly, Arguments: map[string]any{"n": 3}}
	progress.SetProgressToken("progress-1")
	r.call(ctx, cs, run, "sse_progress", progress, 10*time.Second)
	// count_slowly n=25 takes 1 s; the client gives up after 200 ms.
	r.call(ctx, cs, run, "client_abort", &mcp.CallToolParams{Name: mcptest.ToolCountSlowly, Arguments: map[string]any{"n": 25}}, 200*time.Millisecond)
	// Let the abandoned call end on the server before the next step.
	time.Sleep(1500 * time.Millisecond)
	r.call(ctx, cs, run, "call_after_abort", &mcp.CallToolParams{Name: mcptest.ToolLookup, Arguments: map[string]any{"key": "b"}}, 10*time.Second)

	// A second session is open when the upstream goes away.
	cs2, err := r.connect(ctx, run, "connect_second")
	if err != nil {
		return err
	}
	start = r.begin(run, "close")
	err = cs.Close()
	r.done(run, "close", start, nil, err)

	up.stop()
	r.call(ctx, cs2, run, "upstream_down_call", &mcp.CallToolParams{Name: mcptest.ToolLookup, Arguments: map[string]any{"key": "c"}}, 10*time.Second)
	if cs3, err := r.connect(ctx, run, "connect_upstream_down"); err == nil {
		_ = cs3.Close()
	}
	start = r.begin(run, "close_second")
	err = cs2.Close()
	r.done(run, "close_second", start, nil, err)
	return nil
}

func (r *recorder) timeoutRun(ctx context.Context, _ *upstream) error {
	const run = "timeout"
	cs, err := r.connect(ctx, run, "connect")
	if err != nil {
		return err
	}
	r.call(ctx, cs, run, "call_ok", &mcp.CallToolParams{Name: mcptest.ToolLookup, Arguments: map[string]any{"key": "d"}}, 10*time.Second)
	// count_slowly n=50 takes 2 s, past the route's requestTimeout.
	r.call(ctx, cs, run, "route_timeout", &mcp.CallToolParams{Name: mcptest.ToolCountSlowly, Arguments: map[string]any{"n": 50}}, 10*time.Second)
	time.Sleep(2500 * time.Millisecond)
	start := r.begin(run, "close")
	err = cs.Close()
	r.done(run, "close", start, nil, err)
	return nil
}
