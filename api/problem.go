package api

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/gin-gonic/gin"

	"github.com/mcplens/mcplens/queries"
)

// Problem is an RFC 9457 problem details object, the body of every error
// response (Content-Type application/problem+json).
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// InvalidParams names each rejected request parameter (400 only).
	InvalidParams []InvalidParam `json:"invalid_params,omitempty"`
	// RequestID is the X-Request-Id of the request, also in the access log.
	RequestID string `json:"request_id,omitempty"`
}

// InvalidParam is one rejected parameter and why.
type InvalidParam struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Problem types: URNs, one per kind of failure.
const (
	typeInvalidParams    = "urn:mcplens:problem:invalid-params"
	typeUnauthorized     = "urn:mcplens:problem:unauthorized"
	typeForbidden        = "urn:mcplens:problem:forbidden"
	typeNotFound         = "urn:mcplens:problem:not-found"
	typeMethod           = "urn:mcplens:problem:method-not-allowed"
	typeTooLarge         = "urn:mcplens:problem:request-too-large"
	typeRateLimited      = "urn:mcplens:problem:rate-limited"
	typeStoreUnavailable = "urn:mcplens:problem:store-unavailable"
	typeInternal         = "urn:mcplens:problem:internal"
)

const problemJSON = "application/problem+json"

// statusClientClosed is logged and counted for requests whose client left
// before the answer.
const statusClientClosed = 499

// problem writes p and aborts the handler chain.
func problem(c *gin.Context, p Problem) {
	p.RequestID = c.GetString(ctxRequestID)
	b, err := json.Marshal(p)
	if err != nil { // cannot happen: strings and ints only
		b = []byte(`{"type":"` + typeInternal + `","title":"Internal Server Error","status":500,"detail":"encode problem"}`)
	}
	c.Data(p.Status, problemJSON, b)
	c.Abort()
}

func badRequest(c *gin.Context, detail string, params []InvalidParam) {
	problem(c, Problem{Type: typeInvalidParams, Title: "Invalid request parameters", Status: http.StatusBadRequest, Detail: detail, InvalidParams: params})
}

// storeError answers a failed store call: 404 for an unknown id, 400 for
// parameters the store rejected, 503 for a store that did not answer in
// time or cannot be reached, and 500 (logged, without details) for
// anything else. params are the request's parameters a 400 may name.
func (a *API) storeError(c *gin.Context, err error, params ...string) {
	log := a.log.With().Str("request_id", c.GetString(ctxRequestID)).Str("route", c.FullPath()).Logger()
	unavailable := func() {
		log.Warn().Err(err).Msg("store unavailable")
		c.Header("Retry-After", "5")
		detail := "the store could not be reached"
		if errors.Is(err, context.DeadlineExceeded) {
			detail = "the store did not answer within the query timeout (" + a.cfg.QueryTimeout.String() + ")"
		}
		problem(c, Problem{Type: typeStoreUnavailable, Title: "Store Unavailable", Status: http.StatusServiceUnavailable, Detail: detail})
	}
	switch {
	case c.Request.Context().Err() != nil:
		// The client went away; nobody reads the answer. 499 is nginx's
		// "client closed request", so that metrics tell it from a 503.
		log.Debug().Err(err).Msg("client closed the request")
		c.AbortWithStatus(statusClientClosed)
	case errors.Is(err, queries.ErrNotFound):
		problem(c, Problem{Type: typeNotFound, Title: "Not Found", Status: http.StatusNotFound, Detail: "no exchange has this id"})
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		unavailable()
	case errors.Is(err, queries.ErrInvalid):
		name := "query"
		for _, p := range params {
			if strings.Contains(err.Error(), p) {
				name = p
				break
			}
		}
		badRequest(c, "the store rejected the parameters", []InvalidParam{{Name: name, Reason: strings.TrimPrefix(err.Error(), queries.ErrInvalid.Error()+": ")}})
	case storeUnavailable(err):
		unavailable()
	default:
		log.Error().Err(err).Msg("store query failed")
		problem(c, Problem{Type: typeInternal, Title: "Internal Server Error", Status: http.StatusInternalServerError,
			Detail: "the query failed; the server log has the cause under this request id"})
	}
}

// storeUnavailable reports errors that mean the store is down or slow
// rather than the query wrong: deadlines, cancellation, closed or broken
// connections, network failures. queries.Store has no sentinel for these,
// so the drivers' errors are recognized here.
func storeUnavailable(err error) bool {
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, sql.ErrConnDone), errors.Is(err, driver.ErrBadConn),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.As(err, &netErr):
		return true
	}
	msg := err.Error()
	for _, s := range []string{"database is closed", "connection is already closed", "connection refused",
		"acquire conn timeout", "broken pipe", "Interrupted", "interrupted"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
