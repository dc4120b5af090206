package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"golang.org/x/sync/errgroup"
)

// apiError is an API answer other than 200: its status and problem.
type apiError struct {
	Status     int
	Problem    problem
	RetryAfter string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("api answered %d: %s", e.Status, e.Problem.Detail)
}

// problem is the API's RFC 9457 problem body.
type problem struct {
	Title         string         `json:"title"`
	Status        int            `json:"status"`
	Detail        string         `json:"detail"`
	InvalidParams []invalidParam `json:"invalid_params"`
}

type invalidParam struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// recorder is a ResponseWriter that keeps the API's answer in memory.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

// call sends GET path?q to the API in process as the visitor (see
// serveAPI), with token if not "", and returns the answer.
func (v *View) call(r *http.Request, path string, q url.Values, token string) *recorder {
	rec := &recorder{header: http.Header{}}
	v.serveAPIAs(r, path, q, token, rec)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec
}

// serveAPI sends GET path?q to the API in process, as the visitor: with
// the token of their cookie, their address and request id.
func (v *View) serveAPI(r *http.Request, path string, q url.Values, w http.ResponseWriter) {
	v.serveAPIAs(r, path, q, "", w)
}

func (v *View) serveAPIAs(r *http.Request, path string, q url.Values, token string, w http.ResponseWriter) {
	u, err := url.ParseRequestURI(path)
	if err != nil {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(problem{Title: "Bad Request", Status: http.StatusBadRequest, Detail: "the id does not make a path"})
		return
	}
	u.RawQuery = q.Encode()
	req := (&http.Request{Method: http.MethodGet, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Host: r.Host, RemoteAddr: r.RemoteAddr, RequestURI: u.RequestURI()}).WithContext(r.Context())
	if id := r.Header.Get("X-Request-Id"); id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	if token == "" {
		token = tokenOf(r)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	v.api.ServeHTTP(w, req)
}

// get calls the API and decodes a 200 answer into out; any other answer
// is an *apiError.
func (v *View) get(r *http.Request, path string, q url.Values, out any) error {
	rec := v.call(r, path, q, "")
	if rec.status != http.StatusOK {
		return errorOf(rec)
	}
	if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
		return fmt.Errorf("decode api answer of %s: %w", path, err)
	}
	return nil
}

func errorOf(rec *recorder) *apiError {
	e := &apiError{Status: rec.status, RetryAfter: rec.header.Get("Retry-After")}
	if json.Unmarshal(rec.body.Bytes(), &e.Problem) != nil || e.Problem.Detail == "" {
		e.Problem.Detail = http.StatusText(rec.status)
	}
	return e
}

// calls runs the API calls of one page at once; wait returns the first
// error, and that error cancels the calls still running.
type calls struct {
	v *View
	r *http.Request
	g *errgroup.Group
}

func (v *View) calls(r *http.Request) *calls {
	g, ctx := errgroup.WithContext(r.Context())
	return &calls{v: v, r: r.WithContext(ctx), g: g}
}

func (c *calls) get(path string, q url.Values, out any) {
	c.g.Go(func() error { return c.v.get(c.r, path, q, out) })
}

func (c *calls) do(f func(r *http.Request) error) { c.g.Go(func() error { return f(c.r) }) }

func (c *calls) wait() error { return c.g.Wait() }

// required answers a page asked for without the parameter it needs.
func (v *View) required(w http.ResponseWriter, r *http.Request, param, what string) {
	v.fail(w, r, &apiError{Status: http.StatusBadRequest, Problem: problem{Title: "Bad Request",
		Detail: "say which " + what + " to show", InvalidParams: []invalidParam{{Name: param, Reason: "required"}}}})
}
