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

// call sends GET path?q to the API in process, as the visitor: with the
// token of their cookie, their address and request id.
func (v *View) call(r *http.Request, path string, q url.Values, token string) (*recorder, error) {
	u := path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("build api request %s: %w", path, err)
	}
	req.RemoteAddr = r.RemoteAddr
	req.Host = r.Host
	if id := r.Header.Get("X-Request-Id"); id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	if token == "" {
		token = tokenOf(r)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := &recorder{header: http.Header{}}
	v.api.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec, nil
}

// get calls the API and decodes a 200 answer into out; any other answer
// is an *apiError.
func (v *View) get(r *http.Request, path string, q url.Values, out any) error {
	rec, err := v.call(r, path, q, "")
	if err != nil {
		return err
	}
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
