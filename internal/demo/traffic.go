// Package demo is the scripted MCP traffic of the demo and the end-to-end
// tests: the official Go SDK server with the mcptest tools behind a fault
// plan, and a real SDK client walking through normal calls and faults.
package demo

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplens/mcplens/mcptest"
)

// FaultPlan is what the demo's MCP server does wrong, and when.
var FaultPlan = []mcptest.Fault{
	{Method: "tools/call", Tool: mcptest.ToolDeleteItem, Occurrence: 1, Kind: mcptest.FaultUnavailable},
	{Method: "tools/call", Tool: mcptest.ToolLookup, Occurrence: 3, Kind: mcptest.FaultRateLimited},
	{Method: "tools/call", Tool: mcptest.ToolCountSlowly, Occurrence: 2, Kind: mcptest.FaultCutStream},
	{Method: "tools/call", Tool: mcptest.ToolLookup, Occurrence: 6, Kind: mcptest.FaultMalformedSSE},
	{Method: "tools/call", Tool: mcptest.ToolAlwaysFails, Occurrence: 2, Kind: mcptest.FaultUnauthorized},
}

// StartMCPServer serves the official Go SDK server with the demo tools
// (stateless, so 2026-07-28 clients get MRTR) behind the fault plan.
func StartMCPServer() (url string, stop func(), err error) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewMCPServer() }, &mcp.StreamableHTTPOptions{Stateless: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen for the MCP server: %w", err)
	}
	srv := &http.Server{Handler: mcptest.WithFaults(h, FaultPlan), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// step is one scripted client action and how the demo reports it.
type step struct {
	what     string
	tool     string
	args     map[string]any
	resend   int // the app re-sends after an error this many times
	wait     time.Duration
	progress bool // ask for progress notifications
}

var script = []step{
	{what: "read-only lookup", tool: mcptest.ToolLookup, args: map[string]any{"key": "alpha"}},
	{what: "read-only lookup", tool: mcptest.ToolLookup, args: map[string]any{"key": "beta"}},
	{what: "destructive delete, HTTP 503, then the app re-sends it", tool: mcptest.ToolDeleteItem, args: map[string]any{"id": "order-42"}, resend: 1},
	{what: "lookup hits 429 Retry-After: 2, the app waits and re-sends", tool: mcptest.ToolLookup, args: map[string]any{"key": "gamma"}, resend: 1, wait: 2 * time.Second},
	{what: "a tool that fails (isError)", tool: mcptest.ToolAlwaysFails, args: map[string]any{}},
	{what: "progress over SSE", tool: mcptest.ToolCountSlowly, args: map[string]any{"n": 3}, progress: true},
	{what: "progress stream cut mid-call, the app re-sends", tool: mcptest.ToolCountSlowly, args: map[string]any{"n": 3}, progress: true, resend: 1},
	{what: "an unknown tool", tool: "reticulate_splines", args: map[string]any{}},
	{what: "invalid arguments", tool: mcptest.ToolLookup, args: map[string]any{"nope": 1}},
	{what: "malformed response", tool: mcptest.ToolLookup, args: map[string]any{"key": "delta"}},
	{what: "approval asks for input (input_required), answered", tool: mcptest.ToolApprove, args: map[string]any{"item": "refund-7"}},
	{what: "unauthorized (401)", tool: mcptest.ToolAlwaysFails, args: map[string]any{}},
}

// Drive runs the script with a real SDK client through the proxy. A call
// that fails is part of the demo; only a failure to connect is an error.
func Drive(ctx context.Context, endpoint string, say func(string, ...any)) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-agent", Version: "1.0.0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}, nil
		},
	})
	connect := func() (*mcp.ClientSession, error) {
		return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, nil)
	}
	cs, err := connect()
	if err != nil {
		return fmt.Errorf("connect through the tap: %w", err)
	}
	defer func() { _ = cs.Close() }()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	// An older client sees errors where a 2026-07-28 one sees HTTP 400:
	// its unknown tool is a JSON-RPC error behind HTTP 200.
	legacy := mcp.NewClient(&mcp.Implementation{Name: "demo-legacy-agent", Version: "0.9.0"}, nil)
	ls, err := legacy.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		return fmt.Errorf("connect a 2025-06-18 client: %w", err)
	}
	if _, err := ls.CallTool(ctx, &mcp.CallToolParams{Name: "reticulate_splines", Arguments: map[string]any{}}); err != nil {
		say("  %-58s -> client error: %v", "unknown tool, 2025-06-18 client", short(err))
	}
	_ = ls.Close()
	for _, st := range script {
		for attempt := 0; attempt <= st.resend; attempt++ {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			params := &mcp.CallToolParams{Name: st.tool, Arguments: st.args}
			if st.progress {
				params.SetProgressToken(fmt.Sprintf("demo-%d", attempt))
			}
			res, err := cs.CallTool(cctx, params)
			cancel()
			switch {
			case err != nil:
				say("  %-58s -> client error: %v", st.what, short(err))
			case res.IsError:
				say("  %-58s -> result with isError", st.what)
			default:
				say("  %-58s -> ok", st.what)
			}
			if err == nil {
				break
			}
			// Some failures close the SDK session; reconnect like an app would.
			if _, perr := cs.ListTools(ctx, nil); perr != nil {
				_ = cs.Close()
				if cs, err = connect(); err != nil {
					return fmt.Errorf("reconnect: %w", err)
				}
			}
			if st.wait > 0 {
				time.Sleep(st.wait)
			}
		}
	}
	return nil
}

func short(err error) string {
	s := err.Error()
	if len(s) > 70 {
		s = s[:70] + "..."
	}
	return s
}
