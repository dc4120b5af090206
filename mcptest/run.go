package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplens/mcplens/schema"
)

// Scenario is one client session against one fresh test server.
type Scenario struct {
	// Name labels the scenario's events (attrs.scenario).
	Name string
	// Server configures the server, faults included.
	Server Options
	// ProtocolVersion is the version the client asks for; empty means the
	// SDK's latest (2026-07-28).
	ProtocolVersion string
	// Steps run in order after the client connected; the client closes the
	// session after the last one.
	Steps []Step
}

// Op is what a step does.
type Op string

// Step operations.
const (
	OpCallTool  Op = "tools/call" // the default
	OpListTools Op = "tools/list"
)

// Want is the client-side result a step expects.
type Want string

// Expected results.
const (
	WantResult    Want = "result"     // a result, isError false (the default)
	WantToolError Want = "tool_error" // a result with isError true
	WantCallError Want = "call_error" // the SDK call returns an error
)

// Step is one client action.
type Step struct {
	// Name labels the events of the step (attrs.step). Required.
	Name string
	Op   Op
	Tool string
	Args map[string]any
	// Progress asks for progress notifications (a progressToken in _meta).
	Progress bool
	// CancelOnProgress makes the client give up on the call (cancel its
	// context) when the first progress notification arrives.
	CancelOnProgress bool
	// Resend is how many times the application re-sends the same call after
	// the SDK returned an error.
	Resend int
	// Want is the result of the last attempt.
	Want Want
	// AwaitMethod, when set, makes the step wait until the server received
	// one more request of this JSON-RPC method, for messages the SDK sends
	// in the background (notifications/cancelled).
	AwaitMethod string
}

// stepTimeout bounds one step, so that a hung call fails the test instead
// of the whole run.
const stepTimeout = 20 * time.Second

// Run runs sc with a real Go SDK client (mcp.NewClient over
// mcp.StreamableClientTransport) and returns the recorded events sorted by
// request start, each labelled with attrs.scenario and attrs.step. Client
// results that differ from a step's Want, and a number of events that
// differs from the number of HTTP requests the server received, are
// reported with t.Errorf; the run goes on. Everything Run starts is stopped
// before it returns.
func Run(ctx context.Context, t testing.TB, sc Scenario) []schema.Event {
	t.Helper()
	srv := NewServer(t, sc.Server)
	defer srv.Close()

	var progress progressHook
	client := mcp.NewClient(&mcp.Implementation{Name: "mcptest-client", Version: "1.0.0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approved": true}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress.fire(req.Params.ProgressToken)
		},
	})
	transport := &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: srv.http.Client()}

	marks := []stepMark{{name: "connect", start: time.Now()}}
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: sc.ProtocolVersion})
	if err != nil {
		t.Fatalf("%s: connect: %v", sc.Name, err)
	}
	t.Logf("%s: connected, protocol %s, session %q", sc.Name, cs.InitializeResult().ProtocolVersion, cs.ID())
	for i, st := range sc.Steps {
		marks = append(marks, stepMark{name: st.Name, start: time.Now()})
		runStep(ctx, t, sc.Name, cs, srv, &progress, st, i)
	}
	marks = append(marks, stepMark{name: "close", start: time.Now()})
	if err := cs.Close(); err != nil {
		t.Logf("%s: close: %v", sc.Name, err)
	}
	srv.Close()
	if got, want := srv.Events.Len(), srv.watch.requests(); got != want {
		t.Errorf("%s: recorded %d events for %d HTTP exchanges", sc.Name, got, want)
	}
	return label(srv.Events.Events(), sc.Name, marks)
}

// runStep runs one step and checks its Want. Before the step's context is
// cancelled it waits until the server finished every request, so that the
// cancellation cannot race the recorder (a Go SDK client that cancels right
// after a result closes the connection while the server is still ending
// the response, and the exchange would be recorded as a client abort).
func runStep(ctx context.Context, t testing.TB, scenario string, cs *mcp.ClientSession, srv *Server, progress *progressHook, st Step, i int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	callCtx, callCancel := context.WithCancel(ctx)
	defer callCancel()
	awaitBase := srv.watch.count(st.AwaitMethod)

	var (
		res      *mcp.CallToolResult
		err      error
		attempts = 1
	)
	switch st.Op {
	case OpListTools:
		var lr *mcp.ListToolsResult
		if lr, err = cs.ListTools(callCtx, nil); err == nil {
			res = &mcp.CallToolResult{}
			if len(lr.Tools) != 5 {
				t.Errorf("%s/%s: listed %d tools, want 5", scenario, st.Name, len(lr.Tools))
			}
		}
	default:
		params := &mcp.CallToolParams{Name: st.Tool, Arguments: st.Args}
		if st.Progress || st.CancelOnProgress {
			params.SetProgressToken(fmt.Sprintf("progress-%d", i))
		}
		if st.CancelOnProgress {
			progress.set(params.GetProgressToken(), callCancel)
			defer progress.set(nil, nil)
		}
		for ; ; attempts++ {
			res, err = cs.CallTool(callCtx, params)
			if err == nil || attempts > st.Resend {
				break
			}
			t.Logf("%s/%s: attempt %d: %v; the app re-sends", scenario, st.Name, attempts, err)
		}
	}
	checkWant(t, scenario, st, res, err, attempts)
	if st.AwaitMethod != "" {
		if err := srv.watch.waitCount(ctx, st.AwaitMethod, awaitBase+1); err != nil {
			t.Errorf("%s/%s: %v", scenario, st.Name, err)
		}
	}
	if err := srv.watch.settle(ctx); err != nil {
		t.Errorf("%s/%s: %v", scenario, st.Name, err)
	}
}

func checkWant(t testing.TB, scenario string, st Step, res *mcp.CallToolResult, err error, attempts int) {
	t.Helper()
	want := st.Want
	if want == "" {
		want = WantResult
	}
	var got Want
	switch {
	case err != nil:
		got = WantCallError
		t.Logf("%s/%s: %d attempt(s), error: %v", scenario, st.Name, attempts, err)
	case res.IsError:
		got = WantToolError
		t.Logf("%s/%s: %d attempt(s), isError: %s", scenario, st.Name, attempts, ResultText(res))
	default:
		got = WantResult
		t.Logf("%s/%s: %d attempt(s), result: %s", scenario, st.Name, attempts, ResultText(res))
	}
	if got != want {
		t.Errorf("%s/%s: got %s, want %s (err %v)", scenario, st.Name, got, want, err)
	}
}

// ResultText joins the text contents of a tool result.
func ResultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, " ")
}

// progressHook is the action the client's progress handler runs for one
// progress token, set per step. Matching the token matters: the SDK client
// handles notifications asynchronously, so a late notification of an
// earlier call can arrive while the next step runs.
type progressHook struct {
	mu    sync.Mutex
	token any
	fn    func()
}

func (p *progressHook) set(token any, fn func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.token, p.fn = token, fn
}

func (p *progressHook) fire(token any) {
	p.mu.Lock()
	fn := p.fn
	if token != p.token {
		fn = nil
	}
	p.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// stepMark is when a step started, as the client saw it.
type stepMark struct {
	name  string
	start time.Time
}

// label sorts events by request start and names the step each request
// started in: every request of a step reaches the server after the step
// began and before the next one did.
func label(evs []schema.Event, scenario string, marks []stepMark) []schema.Event {
	slices.SortStableFunc(evs, func(a, b schema.Event) int { return a.TS.Compare(b.TS) })
	for i := range evs {
		step := marks[0].name
		for _, m := range marks {
			if !evs[i].TS.Before(m.start) {
				step = m.name
			}
		}
		if evs[i].Attrs == nil {
			evs[i].Attrs = map[string]json.RawMessage{}
		}
		evs[i].Attrs["scenario"] = quote(scenario)
		evs[i].Attrs["step"] = quote(step)
	}
	return evs
}

func quote(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
