package mcptest

import (
	"bytes"
	"context"
	"errors"
	"net/http"
)

// errCut is what the MCP handler's writes get once its stream was cut.
var errCut = errors.New("mcptest: stream cut")

// cutAfterFirstEvent serves r with next and breaks the connection once the
// first complete SSE event has been flushed to the client: the handler's
// context is cancelled (as if the connection dropped), its later writes
// fail, and when it returns the connection is aborted without the final
// chunk, either by panic(http.ErrAbortHandler) or by hijacking and closing
// it. A response that never flushes an event (a JSON answer) is left alone.
func cutAfterFirstEvent(w http.ResponseWriter, r *http.Request, next http.Handler, kind FaultKind) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	cw := &cutWriter{ResponseWriter: w, cancel: cancel}
	next.ServeHTTP(cw, r.WithContext(ctx))
	if !cw.cut {
		return
	}
	if kind == FaultHijackClose {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// cutWriter passes writes through until the first event is flushed.
type cutWriter struct {
	http.ResponseWriter
	cancel   context.CancelFunc
	complete bool // a whole event ("\n\n"-terminated) was written
	cut      bool
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.cut {
		return 0, errCut
	}
	if eventEnd(p) {
		c.complete = true
	}
	return c.ResponseWriter.Write(p)
}

// FlushError flushes and, after the first complete event, cuts the stream.
func (c *cutWriter) FlushError() error {
	if c.cut {
		return errCut
	}
	err := http.NewResponseController(c.ResponseWriter).Flush()
	if c.complete {
		c.cut = true
		c.cancel()
	}
	return err
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (c *cutWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// eventEnd reports whether p ends an SSE event: a blank line in any of the
// three line endings the HTML standard allows (the Python SDK writes CRLF).
func eventEnd(p []byte) bool {
	return bytes.Contains(p, []byte("\n\n")) || bytes.Contains(p, []byte("\r\n\r\n")) || bytes.Contains(p, []byte("\r\r"))
}
