package api

import (
	"context"
	"fmt"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/mcplens/mcplens/queries"
)

// maxValueLen bounds every text parameter and path id (in characters),
// maxCursorLen a cursor.
const (
	maxValueLen  = 256
	maxCursorLen = 1024
)

// reqParams reads a request's query parameters (already checked against
// the route's list by checkParams) and collects every problem, so that
// one 400 names all bad parameters at once.
type reqParams struct {
	q    url.Values
	bad  []InvalidParam
	seen map[string]bool
}

func queryOf(c *gin.Context) *reqParams {
	q, _ := c.Get(ctxQuery)
	v, _ := q.(url.Values)
	return &reqParams{q: v, seen: map[string]bool{}}
}

func (p *reqParams) fail(name, format string, args ...any) {
	if !p.seen[name] {
		p.seen[name] = true
		p.bad = append(p.bad, InvalidParam{Name: name, Reason: fmt.Sprintf(format, args...)})
	}
}

// ok answers 400 naming every bad parameter, and reports whether there
// were none.
func (p *reqParams) ok(c *gin.Context) bool {
	if len(p.bad) == 0 {
		return true
	}
	badRequest(c, "invalid query parameters", p.bad)
	return false
}

// text returns a text parameter, "" when absent or empty.
func (p *reqParams) text(name string) string {
	v := p.q.Get(name)
	maxLen := maxValueLen
	if name == "cursor" {
		maxLen = maxCursorLen
	}
	if err := checkText(v, maxLen); err != nil {
		p.fail(name, "%v", err)
		return ""
	}
	return v
}

func checkText(v string, maxLen int) error {
	switch {
	case !utf8.ValidString(v):
		return fmt.Errorf("not valid UTF-8")
	case utf8.RuneCountInString(v) > maxLen:
		return fmt.Errorf("longer than %d characters", maxLen)
	case strings.ContainsFunc(v, unicode.IsControl):
		return fmt.Errorf("contains control characters")
	}
	return nil
}

// oneOf returns the parameter if it is one of allowed, def when absent.
func (p *reqParams) oneOf(name, def string, allowed ...string) string {
	v, present := p.q[name]
	if !present {
		return def
	}
	if !slices.Contains(allowed, v[0]) {
		p.fail(name, "want one of %s", strings.Join(allowed, ", "))
		return def
	}
	return v[0]
}

// limit returns the limit parameter: 1..max, def when absent.
func (p *reqParams) limit(def, maxLimit int) int {
	v, present := p.q["limit"]
	if !present {
		return def
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || n < 1 || n > maxLimit {
		p.fail("limit", "want an integer from 1 to %d", maxLimit)
		return def
	}
	return n
}

// window returns the from..to range: to defaults to now, from to
// defaultWindow before to; from must be before to and the span at most
// maxSpan.
func (p *reqParams) window(now time.Time, defaultWindow, maxSpan time.Duration) (from, to time.Time) {
	to = now.UTC().Truncate(time.Millisecond)
	ok := true
	if v, present := p.q["to"]; present {
		t, err := queries.ParseTime(v[0], now)
		if err != nil {
			p.fail("to", "%v", err)
			ok = false
		}
		to = t
	}
	from = to.Add(-defaultWindow)
	if v, present := p.q["from"]; present {
		t, err := queries.ParseTime(v[0], now)
		if err != nil {
			p.fail("from", "%v", err)
			ok = false
		}
		from = t
	}
	if !ok {
		return from, to
	}
	switch span := to.Sub(from); {
	case span <= 0:
		p.fail("from", "from %s is not before to %s", from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	case span > maxSpan:
		reason := fmt.Sprintf("from..to spans %s, over the maximum of %s", queries.FormatSpan(span.Round(time.Second)), queries.FormatSpan(maxSpan))
		p.fail("from", "%s", reason)
		p.fail("to", "%s", reason)
	}
	return from, to
}

// pathID returns a path parameter, checked like text but never empty.
func pathID(c *gin.Context, name string) (string, bool) {
	v := c.Param(name)
	err := checkText(v, maxValueLen)
	if err == nil && v == "" {
		err = fmt.Errorf("empty")
	}
	if err != nil {
		badRequest(c, "invalid path parameter", []InvalidParam{{Name: name, Reason: err.Error()}})
		return "", false
	}
	return v, true
}

// ask runs one store call under the query timeout.
func ask[T any](a *API, c *gin.Context, call func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), a.cfg.QueryTimeout)
	defer cancel()
	return within(ctx, call)
}

// within runs call and returns when it answers or ctx ends, whichever is
// first, so that even a store that ignores its context cannot hold the
// request; such a call finishes in the background. A panic in the store is
// returned as an error.
func within[T any](ctx context.Context, call func(ctx context.Context) (T, error)) (T, error) {
	type answer struct {
		v   T
		err error
	}
	done := make(chan answer, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- answer{err: fmt.Errorf("store panicked: %v\n%s", r, debug.Stack())}
			}
		}()
		v, err := call(ctx)
		done <- answer{v, err}
	}()
	select {
	case ans := <-done:
		if ans.err != nil && ctx.Err() != nil {
			// Report the deadline, not whatever the driver made of it.
			return ans.v, fmt.Errorf("%w: %w", ctx.Err(), ans.err)
		}
		return ans.v, ans.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
