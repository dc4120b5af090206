package tap_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/tap"
)

func proxied(t *testing.T, upstream string) (*httptest.Server, *tap.Collector) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, tap.Config{}, tap.NewProxy(u, zerolog.Nop()))
}

// TestProxyUpstreamRefused: the client gets the tap's 502, the event says
// the upstream refused the connection and marks the 502 as the tap's own.
func TestProxyUpstreamRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	srv, col := proxied(t, "http://"+addr)
	resp := post(t, srv.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, nil)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("client got %d, want the tap's 502", resp.StatusCode)
	}
	ev := waitEvents(t, col, 1)[0]
	if ev.TransportError != "connection_refused" || ev.HTTPStatus != 0 || ev.ResponseBody != "" {
		t.Errorf("transport_error=%q status=%d body=%q, want connection_refused and no status", ev.TransportError, ev.HTTPStatus, ev.ResponseBody)
	}
	if got := string(ev.Attrs[tap.AttrGatewayStatus]); got != "502" {
		t.Errorf("attrs.%s = %q, want 502", tap.AttrGatewayStatus, got)
	}
}

// TestProxyClientGivesUp: a client that times out while the upstream is
// still working is recorded as the client going away (client_abort,
// aborted_by client), not as a 502.
func TestProxyClientGivesUp(t *testing.T) {
	release := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer upstream.Close()
	defer close(release)
	srv, col := proxied(t, upstream.URL)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`))
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		_ = resp.Body.Close()
		t.Fatalf("request succeeded with %d", resp.StatusCode)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("client error %v", err)
	}
	ev := waitEvents(t, col, 1)[0]
	if ev.HTTPStatus != 0 || ev.TransportError != tap.TransportClientAbort || string(ev.Attrs[tap.AttrAbortedBy]) != `"client"` {
		t.Errorf("status=%d transport_error=%q attrs=%s: want the client's timeout, no 502", ev.HTTPStatus, ev.TransportError, ev.Attrs)
	}
}

// TestProxyCutStreamIsServerAbort: an upstream that dies mid-stream (the
// chunked body ends without its last chunk) is a cut stream, which
// ReverseProxy would otherwise hide from a handler that only looks at its
// return.
func TestProxyCutStreamIsServerAbort(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(": priming\n\n"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection is cut
	}))
	defer upstream.Close()
	srv, col := proxied(t, upstream.URL)
	srv.Config.ErrorLog = discardLog()
	upstream.Config.ErrorLog = discardLog()
	resp := post(t, srv.URL, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}`, nil)
	_, _ = readAll(resp)
	ev := waitEvents(t, col, 1)[0]
	if ev.HTTPStatus != 200 || ev.StreamComplete == nil || *ev.StreamComplete || ev.CloseReason != tap.CloseServerAbort {
		t.Errorf("status=%d complete=%v reason=%q, want a cut stream (server_abort)", ev.HTTPStatus, ev.StreamComplete, ev.CloseReason)
	}
}

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }

func readAll(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
