// Package tap records MCP traffic as it passes: [Recorder] is an
// http.Handler middleware around any upstream handler (an
// httputil.ReverseProxy in cmd/tap, an SDK handler in tests) that emits one
// contract-v1 "exchange" event per HTTP exchange to a [Writer].
//
// The recorder never changes the traffic. Response writes and flushes reach
// the client at once, so server-sent events stay live; bodies are teed into
// buffers capped by [Config.MaxBodyBytes]. For text/event-stream responses it
// also records whether the stream ended normally (stream.complete,
// stream.close_reason).
package tap

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// Close reasons recorded for event streams (stream.close_reason).
const (
	CloseEOF         = "eof"          // the upstream handler returned normally
	CloseClientAbort = "client_abort" // the client went away or stopped reading
	CloseServerAbort = "server_abort" // the upstream panicked, aborted or hijacked
)

// Transport errors the recorder writes when no status reached the client:
// TransportClientAbort for a client that went away first (attrs
// "aborted_by" says "client" too), as a stream the client leaves is
// close_reason client_abort: both classify CLIENT_ABORT, and a cancel on
// the 2026-07-28 wire. TransportReset for an upstream that aborted before
// sending a status.
const (
	TransportClientAbort = "client_abort"
	TransportReset       = "connection_reset"
)

// Attrs the recorder sets beside the contract fields.
const (
	// AttrAbortedBy is "client" when the client went away before the answer.
	AttrAbortedBy = "aborted_by"
	// AttrGatewayStatus is the status the tap answered itself because the
	// upstream gave none (502 for an unreachable upstream): the tap's own
	// answer, not the server's, so the event records transport_error and
	// no http.status.
	AttrGatewayStatus = "gateway_status"
)

// Deps are the Recorder's collaborators.
type Deps struct {
	// Next is the upstream handler whose traffic is recorded. Required.
	Next http.Handler
	// Writer receives the events. Required.
	Writer Writer
	// Logger reports events that could not be written. The zero value
	// discards.
	Logger zerolog.Logger
}

// Recorder is the recording middleware. It is safe for concurrent use and
// starts no goroutines: each event is handed to the Writer by the goroutine
// that served its request, after the upstream handler returned and before
// net/http ends the response, so the Writer must not block: put a [Queue]
// in front of any sink that can be slow or down.
type Recorder struct {
	cfg    Config
	next   http.Handler
	writer Writer
	log    zerolog.Logger
}

// New returns a Recorder for cfg in front of deps.Next.
func New(cfg Config, deps Deps) (*Recorder, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tap config: %w", err)
	}
	if deps.Next == nil || deps.Writer == nil {
		return nil, errors.New("tap: Deps.Next and Deps.Writer are required")
	}
	return &Recorder{cfg: cfg.withDefaults(), next: deps.Next, writer: deps.Writer, log: deps.Logger}, nil
}

// ServeHTTP serves the request through the upstream handler and records it.
// A panic in the upstream handler (http.ErrAbortHandler included) is
// recorded and then re-raised, so net/http handles it as it would without
// the recorder.
func (rec *Recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	reqBody, reqTruncated := captureRequest(r, rec.cfg.MaxBodyBytes)
	if reqTruncated {
		// The rest of a body over the cap still streams from the client:
		// keep net/http from closing it when the answer begins, so the
		// upstream gets all of it (captureRequest replays a whole body).
		_ = http.NewResponseController(w).EnableFullDuplex()
	}
	rw := newResponseWriter(w, rec.cfg.MaxBodyBytes)
	var (
		panicked = true
		panicVal any
	)
	note := new(proxyNote)
	r = r.WithContext(context.WithValue(r.Context(), noteKey{}, note))
	defer func() {
		if panicked {
			panicVal = recover()
		}
		ev := rec.event(r, rw, start, reqBody, reqTruncated, panicked)
		note.apply(&ev)
		rec.write(r.Context(), ev)
		if panicked {
			panic(panicVal)
		}
	}()
	rec.next.ServeHTTP(rw, r)
	panicked = false
}

// event builds the exchange event once the upstream handler is done.
func (rec *Recorder) event(r *http.Request, rw *responseWriter, start time.Time, reqBody string, reqTruncated, panicked bool) schema.Event {
	dur := float64(time.Since(start).Microseconds()) / 1000
	name, version := clientInfo(reqBody, r.UserAgent())
	ev := schema.Event{
		V:              schema.ContractVersion,
		EventID:        rand.Text(),
		TS:             start.UTC(),
		Kind:           schema.KindExchange,
		Source:         schema.SourceGateway,
		Observer:       rec.cfg.Observer,
		ExchangeID:     rand.Text(),
		Server:         rec.cfg.Server,
		URL:            requestURL(r),
		ClientName:     name,
		ClientVersion:  version,
		HTTPMethod:     r.Method,
		RequestHeaders: flattenHeader(r.Header),
		RequestBody:    reqBody,
		BodyTruncated:  reqTruncated || rw.body.truncated,
		DurationMS:     &dur,
	}
	ev.RequestHeaders.Set("host", r.Host)
	clientGone := r.Context().Err() != nil || rw.writeErr != nil

	if !rw.wroteHeader {
		// No status reached the client.
		switch {
		case clientGone:
			// The client went away before any answer.
			ev.TransportError = TransportClientAbort
			ev.Attrs = map[string]json.RawMessage{AttrAbortedBy: json.RawMessage(`"client"`)}
		case panicked:
			ev.TransportError = TransportReset
		default:
			// net/http sends an implicit 200 when the handler returns.
			rw.implicitHeader(nil)
		}
	}
	if rw.wroteHeader {
		ev.HTTPStatus = rw.status
		ev.ResponseHeaders = flattenHeader(rw.header)
		ev.ResponseBody = rw.body.String()
	}
	ev.SessionID = ev.ResponseHeaders.Get("mcp-session-id")
	if ev.SessionID == "" {
		ev.SessionID = ev.RequestHeaders.Get("mcp-session-id")
	}
	if rw.wroteHeader && isEventStream(rw.header) {
		complete, reason := false, CloseEOF
		switch {
		case clientGone:
			reason = CloseClientAbort
			ev.Attrs = map[string]json.RawMessage{AttrAbortedBy: json.RawMessage(`"client"`)}
		case panicked || rw.hijacked:
			reason = CloseServerAbort
		default:
			complete = true
		}
		ev.StreamComplete = &complete
		ev.CloseReason = reason
	}
	return ev
}

// write hands ev to the Writer, detached from the request's cancellation.
func (rec *Recorder) write(ctx context.Context, ev schema.Event) {
	if rec.cfg.Redact != nil {
		rec.cfg.Redact(&ev)
	}
	if err := rec.writer.WriteEvent(context.WithoutCancel(ctx), ev); err != nil {
		rec.log.Error().Err(err).Str("exchange_id", ev.ExchangeID).Str("url", ev.URL).Msg("tap: event not written")
	}
}

// requestURL rebuilds the URL the client asked for.
func requestURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + r.URL.RequestURI()
}

// flattenHeader lower-cases names and joins repeated values with ", ".
func flattenHeader(h http.Header) classify.Header {
	out := make(classify.Header, 0, len(h)+1)
	for k, vs := range h {
		out = append(out, classify.HeaderField{Name: strings.ToLower(k), Value: strings.Join(vs, ", ")})
	}
	return out.Normalized()
}

func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}
