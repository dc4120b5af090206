package tap_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/tap"
)

// serve starts an httptest server with h behind a Recorder and returns it
// with the collector that receives the events.
func serve(t *testing.T, cfg tap.Config, h http.Handler) (*httptest.Server, *tap.Collector) {
	t.Helper()
	var col tap.Collector
	rec, err := tap.New(cfg, tap.Deps{Next: h, Writer: &col})
	if err != nil {
		t.Fatalf("tap.New: %v", err)
	}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return srv, &col
}

// waitEvents waits until col holds n events: an exchange is written when
// the server-side handler returns, which may be after the client saw the
// response.
func waitEvents(t *testing.T, col *tap.Collector, n int) []schema.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for col.Len() < n {
		if time.Now().After(deadline) {
			t.Fatalf("got %d events, want %d", col.Len(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	evs := col.Events()
	if len(evs) != n {
		t.Fatalf("got %d events, want %d", len(evs), n)
	}
	return evs
}

func post(t *testing.T, url, body string, hdr map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	return resp
}

func TestRecorderJSONExchange(t *testing.T) {
	const (
		reqBody  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"probe","version":"0.3"},"capabilities":{}}}`
		respBody = `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`
	)
	srv, col := serve(t, tap.Config{Observer: "gw-1", Server: "billing"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if string(b) != reqBody {
			t.Errorf("upstream got body %q", b)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "sess-1")
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		_, _ = io.WriteString(w, respBody)
	}))
	resp := post(t, srv.URL+"/mcp?x=1", reqBody, map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(got) != respBody {
		t.Fatalf("client got %q", got)
	}
	ev := waitEvents(t, col, 1)[0]

	if ev.V != 1 || ev.Kind != schema.KindExchange || ev.Source != schema.SourceGateway {
		t.Errorf("v/kind/source = %d/%q/%q", ev.V, ev.Kind, ev.Source)
	}
	if ev.EventID == "" || ev.ExchangeID == "" || ev.EventID == ev.ExchangeID {
		t.Errorf("ids %q %q", ev.EventID, ev.ExchangeID)
	}
	if ev.Observer != "gw-1" || ev.Server != "billing" {
		t.Errorf("observer/server = %q/%q", ev.Observer, ev.Server)
	}
	if ev.URL != srv.URL+"/mcp?x=1" {
		t.Errorf("url = %q", ev.URL)
	}
	if ev.HTTPMethod != "POST" || ev.HTTPStatus != 200 {
		t.Errorf("method/status = %s/%d", ev.HTTPMethod, ev.HTTPStatus)
	}
	if ev.RequestBody != reqBody || ev.ResponseBody != respBody || ev.BodyTruncated {
		t.Errorf("bodies: %q / %q / truncated=%v", ev.RequestBody, ev.ResponseBody, ev.BodyTruncated)
	}
	if ev.RequestHeaders.Get("content-type") != "application/json" || ev.RequestHeaders.Get("host") == "" {
		t.Errorf("request headers %v", ev.RequestHeaders)
	}
	if ev.ResponseHeaders.Get("x-multi") != "a, b" || ev.ResponseHeaders.Get("mcp-session-id") != "sess-1" {
		t.Errorf("response headers %v", ev.ResponseHeaders)
	}
	if ev.SessionID != "sess-1" || ev.ClientName != "probe" || ev.ClientVersion != "0.3" {
		t.Errorf("session/client = %q %q %q", ev.SessionID, ev.ClientName, ev.ClientVersion)
	}
	if ev.StreamComplete != nil || ev.CloseReason != "" {
		t.Errorf("stream fields set on a JSON response: %v %q", ev.StreamComplete, ev.CloseReason)
	}
	if ev.DurationMS == nil || *ev.DurationMS < 0 || time.Since(ev.TS) > time.Minute || ev.TS.Location() != time.UTC {
		t.Errorf("ts/duration = %v/%v", ev.TS, ev.DurationMS)
	}
}

func TestRecorderImplicitStatusAndSniffing(t *testing.T) {
	srv, col := serve(t, tap.Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, "<html>hi</html>")
		}
		// DELETE: the handler writes nothing, net/http sends 200.
	}))
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequestWithContext(t.Context(), m, srv.URL, nil)
		req.Header.Set("Mcp-Session-Id", "s-9")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s status %d", m, resp.StatusCode)
		}
	}
	evs := waitEvents(t, col, 2)
	if evs[0].ResponseHeaders.Get("content-type") != "text/html; charset=utf-8" {
		t.Errorf("GET sniffed content-type = %q", evs[0].ResponseHeaders.Get("content-type"))
	}
	if evs[1].HTTPStatus != 200 || evs[1].ResponseBody != "" || evs[1].SessionID != "s-9" {
		t.Errorf("DELETE event status=%d body=%q session=%q", evs[1].HTTPStatus, evs[1].ResponseBody, evs[1].SessionID)
	}
}

func TestRecorderTruncation(t *testing.T) {
	big := strings.Repeat("é", 40) // 80 bytes, two per rune
	srv, col := serve(t, tap.Config{MaxBodyBytes: 31}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if string(b) != big {
			t.Errorf("upstream got %d bytes, want the whole %d", len(b), len(big))
		}
		_, _ = io.WriteString(w, big[:40])
		_, _ = io.WriteString(w, big[40:])
	}))
	resp := post(t, srv.URL, big, nil)
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if string(got) != big {
		t.Fatalf("client got %d bytes, want %d", len(got), len(big))
	}
	ev := waitEvents(t, col, 1)[0]
	want := big[:30] // 31 bytes cut back to a rune boundary
	if !ev.BodyTruncated || ev.RequestBody != want || ev.ResponseBody != want {
		t.Errorf("truncated=%v request=%q response=%q", ev.BodyTruncated, ev.RequestBody, ev.ResponseBody)
	}
}

func TestRecorderUnreadRequestBody(t *testing.T) {
	const body = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`
	srv, col := serve(t, tap.Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "2")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	}))
	resp := post(t, srv.URL, body, map[string]string{"User-Agent": "curl/8.5.0 extra"})
	_ = resp.Body.Close()
	ev := waitEvents(t, col, 1)[0]
	if ev.RequestBody != body || ev.HTTPStatus != 429 || ev.ResponseHeaders.Get("retry-after") != "2" {
		t.Errorf("body=%q status=%d headers=%v", ev.RequestBody, ev.HTTPStatus, ev.ResponseHeaders)
	}
	if ev.ClientName != "curl" || ev.ClientVersion != "8.5.0" {
		t.Errorf("client from User-Agent = %q %q", ev.ClientName, ev.ClientVersion)
	}
}

// TestRecorderBodyAfterAnswer: an upstream may answer before it (or the
// transport carrying the request to it) reads the request body to its end;
// net/http closes the inbound body when the answer starts. The body the
// recorder already read whole must still read to its end without an error:
// the reverse proxy's transport makes that last read, and an error there
// tore the upstream connection down and cut the answer mid-body.
func TestRecorderBodyAfterAnswer(t *testing.T) {
	for _, limit := range []int{0, 16} { // the default cap, and one the body is over
		t.Run(fmt.Sprint("max_body_bytes=", limit), func(t *testing.T) { bodyAfterAnswer(t, limit) })
	}
}

func bodyAfterAnswer(t *testing.T, limit int) {
	const body = `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x"}}`
	readErr := make(chan error, 1)
	srv, col := serve(t, tap.Config{MaxBodyBytes: limit}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // the answer has begun: net/http has closed the inbound body
		got, err := io.ReadAll(r.Body)
		if err == nil && string(got) != body {
			err = fmt.Errorf("read %q after the answer began, want the whole body", got)
		}
		readErr <- err
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"content\":[]}}\n\n")
	}))
	resp := post(t, srv.URL, body, nil)
	got, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || !strings.Contains(string(got), `"id":9`) {
		t.Errorf("the answer: %q, %v", got, err)
	}
	if err := <-readErr; err != nil {
		t.Errorf("request body read after the answer began: %v", err)
	}
	if ev := waitEvents(t, col, 1)[0]; !strings.HasPrefix(body, ev.RequestBody) || ev.RequestBody == "" || (limit == 0) != (ev.RequestBody == body) {
		t.Errorf("recorded body %q (cap %d)", ev.RequestBody, limit)
	}
}

func TestRecorderRedact(t *testing.T) {
	cfg := tap.Config{Redact: func(ev *schema.Event) {
		ev.RequestHeaders = slices.DeleteFunc(ev.RequestHeaders, func(f classify.HeaderField) bool { return f.Name == "authorization" })
	}}
	srv, col := serve(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			t.Error("redaction reached the upstream request")
		}
	}))
	resp := post(t, srv.URL, "{}", map[string]string{"Authorization": "Bearer secret"})
	_ = resp.Body.Close()
	ev := waitEvents(t, col, 1)[0]
	if _, ok := ev.RequestHeaders.Lookup("authorization"); ok {
		t.Errorf("authorization header kept: %v", ev.RequestHeaders)
	}
}

// sseHandler writes one event, flushes, and then waits for release or
// for the client to go away; abort decides how it ends.
func sseHandler(release <-chan struct{}, end func(w http.ResponseWriter)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n")
		_ = http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		end(w)
	})
}

// firstEvent reads the first SSE event from resp, which must arrive while the
// upstream handler is still blocked.
func firstEvent(t *testing.T, resp *http.Response) *bufio.Reader {
	t.Helper()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading first event: %v", err)
		}
		if line == "\n" {
			return br
		}
	}
}

func TestRecorderSSE(t *testing.T) {
	const final = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	tests := []struct {
		name         string
		end          func(w http.ResponseWriter)
		clientCancel bool
		wantComplete bool
		wantReason   string
	}{
		{
			name:         "eof",
			end:          func(w http.ResponseWriter) { _, _ = io.WriteString(w, final) },
			wantComplete: true,
			wantReason:   tap.CloseEOF,
		},
		{
			name:       "server abort",
			end:        func(http.ResponseWriter) { panic(http.ErrAbortHandler) },
			wantReason: tap.CloseServerAbort,
		},
		{
			name: "hijack close",
			end: func(w http.ResponseWriter) {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					panic(err)
				}
				_ = conn.Close()
			},
			wantReason: tap.CloseServerAbort,
		},
		{
			name:         "client abort",
			clientCancel: true,
			wantReason:   tap.CloseClientAbort,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			srv, col := serve(t, tap.Config{}, sseHandler(release, tt.end))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{}`))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			br := firstEvent(t, resp) // proves the event was passed through live
			if tt.clientCancel {
				cancel()
			} else {
				close(release)
			}
			rest, err := io.ReadAll(br)
			if tt.wantComplete && (err != nil || string(rest) != final) {
				t.Errorf("rest of stream %q, err %v", rest, err)
			}
			if !tt.wantComplete && err == nil {
				t.Errorf("stream ended cleanly, want an error; rest %q", rest)
			}
			ev := waitEvents(t, col, 1)[0]
			if ev.StreamComplete == nil || *ev.StreamComplete != tt.wantComplete || ev.CloseReason != tt.wantReason {
				t.Errorf("stream.complete=%v close_reason=%q, want %v %q", ev.StreamComplete, ev.CloseReason, tt.wantComplete, tt.wantReason)
			}
			if !strings.HasPrefix(ev.ResponseBody, "event: message\ndata: ") || ev.HTTPStatus != 200 {
				t.Errorf("status %d body %q", ev.HTTPStatus, ev.ResponseBody)
			}
		})
	}
}

func TestRecorderNoStatus(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		cancel  bool
		want    string
	}{
		{
			name:    "upstream aborts",
			handler: func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) },
			want:    tap.TransportReset,
		},
		{
			name:    "client leaves",
			handler: func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			cancel:  true,
			want:    tap.TransportClientAbort,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, col := serve(t, tap.Config{}, tt.handler)
			ctx, cancel := context.WithCancel(t.Context())
			if tt.cancel {
				time.AfterFunc(50*time.Millisecond, cancel)
			}
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{}`))
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_ = resp.Body.Close()
				t.Fatal("request succeeded, want a transport error")
			}
			ev := waitEvents(t, col, 1)[0]
			if ev.HTTPStatus != 0 || ev.TransportError != tt.want || ev.ResponseHeaders != nil {
				t.Errorf("status=%d transport_error=%q headers=%v", ev.HTTPStatus, ev.TransportError, ev.ResponseHeaders)
			}
			if by := string(ev.Attrs[tap.AttrAbortedBy]); tt.cancel != (by == `"client"`) {
				t.Errorf("attrs.%s = %s, want \"client\" only when the client left", tap.AttrAbortedBy, by)
			}
		})
	}
}

type failingWriter struct{}

func (failingWriter) WriteEvent(context.Context, schema.Event) error { return errors.New("disk full") }

func TestRecorderWriterErrorDoesNotBreakTraffic(t *testing.T) {
	rec, err := tap.New(tap.Config{}, tap.Deps{
		Next:   http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		Writer: failingWriter{},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	rec.ServeHTTP(w, httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/", strings.NewReader("{}")))
	if w.Code != 200 || w.Body.String() != "ok" {
		t.Errorf("got %d %q", w.Code, w.Body.String())
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := tap.New(tap.Config{MaxBodyBytes: -1}, tap.Deps{Next: http.NotFoundHandler(), Writer: &tap.Collector{}}); err == nil {
		t.Error("negative MaxBodyBytes accepted")
	}
	if _, err := tap.New(tap.Config{}, tap.Deps{Writer: &tap.Collector{}}); err == nil {
		t.Error("missing Next accepted")
	}
}

func BenchmarkRecorder(b *testing.B) {
	const body = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lookup","arguments":{"key":"a"}}}`
	resp := []byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"value-a"}]}}`)
	rec, err := tap.New(tap.Config{}, tap.Deps{
		Next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(resp)
		}),
		Writer: tap.NewNDJSON(io.Discard),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec.ServeHTTP(httptest.NewRecorder(), req)
	}
}
