// Package mcptest runs real MCP traffic for tests: an official Go SDK server
// with a handful of tools ([NewMCPServer]), served over Streamable HTTP
// behind a fault injector and a [tap.Recorder] ([NewServer]), and driven by
// real SDK clients through scripted scenarios ([Run]). The recorded events
// are what mcplens classifies; testdata/real/gosdk.ndjson is a committed
// recording of [Corpus].
//
// The chain of one test server, outermost first:
//
//	httptest.Server -> watch -> tap.Recorder -> faults -> mcp.StreamableHTTPHandler
//
// The watch layer only counts requests, so that scenarios can wait for
// the recorder; the fault injector answers in place of the SDK or cuts its
// streams.
package mcptest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplens/mcplens/tap"
)

// Options configures [NewServer].
type Options struct {
	// JSONResponse makes the SDK answer calls with application/json instead
	// of text/event-stream.
	JSONResponse bool
	// Stateless runs the SDK handler without sessions. The Go SDK serves
	// protocol 2026-07-28 only in this mode; a stateful handler rejects it
	// and the client falls back to initialize with 2025-11-25.
	Stateless bool
	// Faults are injected between the recorder and the SDK handler.
	Faults []Fault
	// Tap configures the recorder. Observer defaults to "mcptest" and
	// Server to "gosdk".
	Tap tap.Config
}

// Server is a running test server. Its zero value is not usable; create one
// with [NewServer].
type Server struct {
	// URL is the MCP endpoint.
	URL string
	// Events receives one event per HTTP exchange.
	Events *tap.Collector

	mcp       *mcp.Server
	http      *httptest.Server
	watch     *watch
	closeOnce sync.Once
}

// NewServer starts an httptest server in front of [NewMCPServer] and
// registers its Close with t.Cleanup.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	mcpServer := NewMCPServer()
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer }, &mcp.StreamableHTTPOptions{
		JSONResponse: opts.JSONResponse,
		Stateless:    opts.Stateless,
	})
	f := newFaults(handler, opts.Faults)
	cfg := opts.Tap
	if cfg.Observer == "" {
		cfg.Observer = "mcptest"
	}
	if cfg.Server == "" {
		cfg.Server = "gosdk"
	}
	col := &tap.Collector{}
	rec, err := tap.New(cfg, tap.Deps{Next: f, Writer: col})
	if err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	wt := newWatch(rec)
	s := &Server{Events: col, mcp: mcpServer, watch: wt, http: httptest.NewServer(wt)}
	s.URL = s.http.URL + "/mcp"
	t.Cleanup(s.Close)
	return s
}

// closeGrace is how long Close waits for in-flight requests before it cuts
// the client connections that are still open.
const closeGrace = 5 * time.Second

// Close closes the MCP sessions clients left open, stops the server and
// waits for every in-flight request, so that all their events have been
// written. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		for ss := range s.mcp.Sessions() {
			_ = ss.Close()
		}
		done := make(chan struct{})
		go func() {
			s.http.Close()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(closeGrace):
			s.http.CloseClientConnections()
			<-done
		}
	})
}
