package classify

import (
	"bytes"

	"github.com/valyala/fastjson"
)

// stream classifies an SSE response to a request. The final response is
// the message whose id equals the request id; notifications, server
// requests and priming events before it are counted, never taken for it.
func (c *classifier) stream(body []byte) {
	ex := c.ex
	s := newSSEScanner(body, ex.Stream == StreamComplete && !ex.BodyTruncated)
	var (
		finalSeen bool
		stray     int    // responses whose id answers no request of ours
		idless    []byte // the first id-less response, copied
		lastBad   []byte // data of the last event that did not parse
		events    int
	)
	for {
		ev, ok := s.next()
		if !ok {
			break
		}
		events++
		if finalSeen || len(bytes.TrimSpace(ev.data)) == 0 {
			continue // after the answer, or a priming event
		}
		v, err := c.p.ParseBytes(ev.data)
		if err != nil {
			lastBad = ev.data
			continue
		}
		lastBad = nil
		if v.Type() != fastjson.TypeObject || v.Exists("method") {
			continue // a notification or a server-to-client request
		}
		if !v.Exists("result") && !v.Exists("error") {
			continue
		}
		id := idOf(v.Get("id"))
		if c.answers(id) {
			// Decide now: v lives only until the next parse.
			finalSeen = true
			c.message(v, "sse")
			continue
		}
		stray++
		if stray == 1 && !id.present() {
			// An id-less error on the stream may still be meant for us.
			idless = append([]byte(nil), ev.data...)
		}
	}
	c.r.SSEEvents = events
	switch {
	case finalSeen:
	case ex.BodyTruncated:
		c.truncated(s.tail())
	case lastBad != nil && ex.Stream != StreamCut:
		c.r.ErrorMessage = truncateBytes(lastBad)
		c.set(MalformedJSON, ClassNone, "sse-malformed")
	case stray > 0 && ex.Stream != StreamCut:
		if idless != nil {
			c.jsonBody(idless, "sse")
			return
		}
		c.set(InvalidEnvelope, IDMismatch, "sse-id-mismatch")
	default:
		c.set(StreamIncomplete, streamClass(ex.CloseReason), "sse-no-final")
		if ex.Stream != StreamCut && ex.CloseReason == "" {
			c.r.ErrorClass = StreamEndedEarly
		}
	}
}

// answers reports whether a response id answers the request. With the
// request unseen there is no id to match: any response on the stream is
// the answer (a POST's stream carries no answer to another request).
func (c *classifier) answers(id rpcID) bool {
	if c.unseen() {
		return true
	}
	switch c.q.shape {
	case reqSingle:
		return c.q.id.equal(id)
	case reqBatch:
		for _, want := range c.q.batchIDs {
			if want.equal(id) {
				return true
			}
		}
	}
	return false
}

// countEvents counts the dispatched events of a stream no request waits on.
func (c *classifier) countEvents(body []byte) int {
	s := newSSEScanner(body, false)
	n := 0
	for {
		if _, ok := s.next(); !ok {
			return n
		}
		n++
	}
}

// truncated decides what it can from the part of a body the logger kept.
// A cut body is never malformed. Inside a JSON string every quote is
// escaped, so an unescaped `"isError":true` can only be structure: the
// markers below are safe to search for in the prefix.
func (c *classifier) truncated(prefix []byte) {
	switch {
	case hasMember(prefix, `"error"`, '{'):
		if n, ok := numberAfter(prefix, `"code"`); ok {
			c.r.JSONRPCCode = Int(n)
			if n == codeRequestCancelled {
				c.set(Cancelled, RequestCancelled, "truncated-error")
				return
			}
			c.set(JSONRPCError, c.codeClass(n, ""), "truncated-error")
			return
		}
		c.set(JSONRPCError, BodyTruncated, "truncated-error")
	case hasMember(prefix, `"resultType"`, '"') && bytes.Contains(prefix, []byte(`"input_required"`)):
		c.set(InputRequired, BodyTruncated, "truncated-input-required")
	case c.q.isToolCall() && hasMember(prefix, `"isError"`, 't'):
		c.set(ToolError, BodyTruncated, "truncated-iserror")
	case c.q.isToolCall():
		c.set(ToolSuccess, BodyTruncated, "truncated-undecided")
	default:
		c.set(Success, BodyTruncated, "truncated-undecided")
	}
}

// hasMember reports whether key appears as an object member whose value
// starts with the byte first.
func hasMember(b []byte, key string, first byte) bool {
	for {
		i := bytes.Index(b, []byte(key))
		if i < 0 {
			return false
		}
		if i > 0 && b[i-1] == '\\' {
			b = b[i+len(key):]
			continue
		}
		rest := bytes.TrimLeft(b[i+len(key):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' {
			rest = bytes.TrimLeft(rest[1:], " \t\r\n")
			if len(rest) > 0 && rest[0] == first {
				return true
			}
		}
		b = b[i+len(key):]
	}
}

// numberAfter returns the integer value of the first member key in b.
func numberAfter(b []byte, key string) (int64, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0, false
	}
	rest := bytes.TrimLeft(b[i+len(key):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return 0, false
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	neg := false
	if len(rest) > 0 && rest[0] == '-' {
		neg, rest = true, rest[1:]
	}
	var n int64
	d := 0
	for d < len(rest) && d < 18 && rest[d] >= '0' && rest[d] <= '9' {
		n = n*10 + int64(rest[d]-'0')
		d++
	}
	if d == 0 || d == len(rest) {
		// No digits, or the number may continue past the cut.
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}
