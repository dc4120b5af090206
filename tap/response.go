package tap

import (
	"bufio"
	"net"
	"net/http"
)

// responseWriter passes everything through to the client at once (writes,
// flushes, hijacks) and tees the body into a capped buffer. It is used by
// the one goroutine serving the request, like any http.ResponseWriter.
type responseWriter struct {
	w http.ResponseWriter

	status      int
	wroteHeader bool
	header      http.Header // snapshot taken when the status was sent
	body        capBuffer
	writeErr    error // first error from writing to the client
	hijacked    bool
}

func newResponseWriter(w http.ResponseWriter, maxBody int) *responseWriter {
	return &responseWriter{w: w, body: capBuffer{max: maxBody}}
}

func (rw *responseWriter) Header() http.Header { return rw.w.Header() }

func (rw *responseWriter) WriteHeader(code int) {
	// Informational responses (103 Early Hints) may precede the real one.
	if !rw.wroteHeader && (code >= 200 || code == http.StatusSwitchingProtocols) {
		rw.status = code
		rw.wroteHeader = true
		rw.header = rw.w.Header().Clone()
	}
	rw.w.WriteHeader(code)
}

func (rw *responseWriter) Write(p []byte) (int, error) {
	if !rw.wroteHeader {
		rw.implicitHeader(p)
	}
	n, err := rw.w.Write(p)
	rw.body.write(p[:n])
	if err != nil && rw.writeErr == nil {
		rw.writeErr = err
	}
	return n, err
}

// implicitHeader records the 200 that net/http sends on the first write or
// flush, including the Content-Type it sniffs when the handler set none.
func (rw *responseWriter) implicitHeader(first []byte) {
	rw.status = http.StatusOK
	rw.wroteHeader = true
	rw.header = rw.w.Header().Clone()
	_, haveType := rw.header["Content-Type"]
	if !haveType && len(first) > 0 && rw.header.Get("Transfer-Encoding") == "" && rw.header.Get("Content-Encoding") == "" {
		rw.header.Set("Content-Type", http.DetectContentType(first))
	}
}

// FlushError flushes to the client immediately; SSE depends on it. It is
// what http.ResponseController.Flush calls.
func (rw *responseWriter) FlushError() error {
	if !rw.wroteHeader {
		rw.implicitHeader(nil)
	}
	err := http.NewResponseController(rw.w).Flush()
	if err != nil && err != http.ErrNotSupported && rw.writeErr == nil {
		rw.writeErr = err
	}
	return err
}

// Flush implements http.Flusher for handlers that type-assert it.
func (rw *responseWriter) Flush() { _ = rw.FlushError() }

// Hijack hands the connection to the handler. The recorder can no longer see
// what is sent, so a hijacked event stream counts as cut by the server.
func (rw *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(rw.w).Hijack()
	if err == nil {
		rw.hijacked = true
	}
	return conn, brw, err
}

// Unwrap lets http.ResponseController reach the underlying writer for
// deadlines and full-duplex mode.
func (rw *responseWriter) Unwrap() http.ResponseWriter { return rw.w }
