package tap

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/logging"
	"github.com/mcplens/mcplens/schema"
)

// NewProxy returns the reverse proxy to put behind a [Recorder] (cmd/tap
// does): event streams pass through as they are written, and when the
// upstream cannot be reached the event says why (transport_error
// connection_refused, dns, tls, timeout, connection_reset) instead of
// recording the proxy's own 502 as the server's answer. A client that went
// away gets no answer at all, so the event records the client's abort,
// not a 502 nobody received.
// Errors the proxy reports itself (a body copy that failed mid-stream) go
// to logger as warnings.
func NewProxy(upstream *url.URL, logger zerolog.Logger) *httputil.ReverseProxy {
	p := httputil.NewSingleHostReverseProxy(upstream)
	p.FlushInterval = -1 // pass SSE through as it is written
	p.ErrorLog = logging.StdLogger(logger, zerolog.WarnLevel, "tap proxy")
	p.ErrorHandler = proxyError
	return p
}

// proxyNote carries what the proxy's error handler saw to the Recorder
// serving the same request.
type proxyNote struct {
	err    error
	status int
}

type noteKey struct{}

// proxyError is the ReverseProxy.ErrorHandler of [NewProxy].
func proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client is gone; nobody would read an answer
	}
	if n, ok := r.Context().Value(noteKey{}).(*proxyNote); ok {
		n.err, n.status = err, http.StatusBadGateway
	}
	w.WriteHeader(http.StatusBadGateway)
}

// apply turns the tap's own error answer into the transport error it
// stands for.
func (n *proxyNote) apply(ev *schema.Event) {
	if n.err == nil || ev.TransportError != "" {
		return
	}
	ev.TransportError = upstreamError(n.err)
	ev.HTTPStatus = 0
	ev.ResponseHeaders = nil
	ev.ResponseBody = ""
	if ev.Attrs == nil {
		ev.Attrs = map[string]json.RawMessage{}
	}
	ev.Attrs[AttrGatewayStatus] = json.RawMessage(strconv.Itoa(n.status))
	ev.Attrs["upstream_error"], _ = json.Marshal(n.err.Error())
}

// upstreamError names a failure to reach the upstream in the contract's
// transport_error words.
func upstreamError(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.As(err, &certErr), errors.As(err, &recErr):
		return "tls"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection_reset"
	}
	return err.Error()
}
