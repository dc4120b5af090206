package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/mcptest"
	"github.com/mcplens/mcplens/schema"
)

// TestProxyRecordsRealTraffic puts the tap in front of the official Go SDK
// server, drives it with the SDK client through the proxy, and checks the
// recorded events: one per HTTP exchange, secrets redacted.
func TestProxyRecordsRealTraffic(t *testing.T) {
	ctx := context.Background()
	addr, out, stop := startTap(t)

	client := mcp.NewClient(&mcp.Implementation{Name: "tap-test", Version: "0.1"}, nil)
	httpClient := &http.Client{Transport: bearer{"Bearer sk-live-0123456789abcdefghij"}}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr, HTTPClient: httpClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.ToolLookup, Arguments: map[string]any{"key": "a"}})
	if err != nil || res.IsError {
		t.Fatalf("call through the proxy: %v %+v", err, res)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Fatal("unknown tool succeeded")
	}
	cs.Close()
	stop()

	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []schema.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev schema.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	var calls int
	for _, ev := range evs {
		if ev.Kind != schema.KindExchange || ev.Server != "gosdk" || ev.ExchangeID == "" {
			t.Errorf("event %+v", ev)
		}
		if a := ev.RequestHeaders.Get("authorization"); a != "" && strings.Contains(a, "sk-live") {
			t.Errorf("authorization header not redacted: %q", a)
		}
		if strings.Contains(ev.RequestBody, `"tools/call"`) {
			calls++
		}
	}
	if calls != 2 || len(evs) < 4 {
		t.Errorf("%d events, %d tool calls recorded", len(evs), calls)
	}
}

// startTap runs the tap in front of a stateful Go SDK server, recording
// to a file; stop ends it and waits until every event is written.
func startTap(t *testing.T) (addr, out string, stop func()) {
	t.Helper()
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewMCPServer() }, nil))
	t.Cleanup(upstream.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	out = filepath.Join(t.TempDir(), "events.ndjson")
	cfg := config{Listen: addr, Upstream: upstream.URL, To: "file:" + out}
	cfg.Tap.Server = "gosdk"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- run(ctx, cfg, zerolog.Nop()) }()
	waitListening(t, addr)
	return addr, out, func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func waitListening(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("tap did not listen on %s", addr)
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []config{{Listen: "x"}, {Listen: "x", Upstream: "not a url"}, {Upstream: "http://h"}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if _, _, err := openSink("kafka://host", time.Second); err == nil {
		t.Error("kafka URL without topic accepted")
	}
}
