package classify

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// maxMessage caps error_message at 1 KiB.
const maxMessage = 1024

var parsers fastjson.ParserPool

// Classify decides the layer, outcome and advice for one exchange. The
// decision runs in this order, and the first rule that applies wins:
// no response at all (correlator window, transport error), the HTTP status
// (anything outside 2xx is HTTP_ERROR whatever the body says), the shape of
// the exchange (notification, GET stream, empty or 202 answer), the SSE
// stream (is the final response for this request in it?), the JSON-RPC
// envelope, and last the result (tools/call rules per revision).
//
// Classify never panics on any input and is safe for concurrent use.
func Classify(ex *Exchange) Result {
	pq, pr := parsers.Get(), parsers.Get()
	defer parsers.Put(pq)
	defer parsers.Put(pr)

	r := Result{Evidence: ex.Evidence.Level()}
	q := parseRequest(pq, ex.RequestBody)
	describeRequest(&q, ex.RequestHeaders, &r)
	r.ContentType = mediaType(ex.ResponseHeaders.Get("content-type"))

	c := classifier{ex: ex, q: &q, r: &r, p: pr}
	c.run()
	c.closedToCancel()
	if r.Layer == "" {
		r.Layer = r.Outcome.Layer()
	}
	advise(&r, &q, c.unseen())
	return r
}

type classifier struct {
	ex *Exchange
	q  *request
	r  *Result
	p  *fastjson.Parser
}

// unseen reports whether the response is judged without its request.
func (c *classifier) unseen() bool { return c.ex.RequestUnseen && c.q.shape == reqEmpty }

func (c *classifier) set(o Outcome, class ErrorClass, rule string) {
	c.r.Outcome, c.r.ErrorClass, c.r.Rule = o, class, rule
}

func (c *classifier) run() {
	ex, r := c.ex, c.r
	r.RetryAfterS = retryAfter(ex.ResponseHeaders, ex.ResponseTime)
	switch {
	case ex.NoResponse:
		r.Transport = TransportNone
		if ex.Evicted {
			c.set(NoResponse, PendingEvicted, "no-response-evicted")
			return
		}
		c.set(NoResponse, NoResponseWindow, "no-response")
		return
	case ex.Status == 0:
		r.Transport = TransportNone
		class := transportClass(ex.TransportError)
		r.ErrorMessage = truncate(ex.TransportError)
		c.set(TransportError, class, "transport-error")
		return
	}
	if ex.Evidence == EvidenceEnvelope || ex.Evidence == EvidenceStatusOnly {
		c.metadata()
		return
	}
	// The raw body goes on: trimming would drop the blank line that
	// dispatches the last SSE event.
	body := ex.ResponseBody
	r.Transport = c.transport(body)
	method := strings.ToUpper(ex.HTTPMethod)
	if notOffered(ex) {
		c.set(Success, ClassNone, "http-"+strings.ToLower(method)+"-405")
		return
	}
	if ex.Status < 200 || ex.Status > 299 {
		c.httpError(body)
		return
	}
	switch {
	case method == "GET" || method == "DELETE":
		// A GET opens (or resumes) the server's stream, a DELETE ends the
		// session: neither answers one request.
		if r.Transport == TransportSSE {
			r.SSEEvents = c.countEvents(body)
		}
		c.set(Success, ClassNone, "http-"+strings.ToLower(method))
		return
	case c.q.notification && c.q.shape != reqMalformed,
		c.unseen() && (ex.Status == 202 || ex.Status == 204):
		// Unseen, a 202 or 204 most likely answers a notification or a
		// client's response: the answers the transport gives them.
		c.notificationAnswer(body)
		return
	case ex.Status == 202 || ex.Status == 204:
		c.set(UnexpectedResponse, AcceptedRequest, "accepted-for-request")
		return
	case r.Transport == TransportEmpty:
		if ex.Stream == StreamCut && r.ContentType == "text/event-stream" {
			c.set(StreamIncomplete, streamClass(ex.CloseReason), "sse-empty-cut")
			return
		}
		c.set(UnexpectedResponse, EmptyBody, "empty-body")
		return
	case r.Transport == TransportSSE:
		c.stream(body)
		return
	}
	c.jsonBody(body, "json")
}

func (c *classifier) transport(body []byte) Transport {
	switch {
	case isBlank(body):
		return TransportEmpty
	case c.r.ContentType == "text/event-stream":
		return TransportSSE
	case c.r.ContentType == "" && looksLikeSSE(body):
		return TransportSSE
	}
	return TransportJSON
}

func isBlank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

func looksLikeSSE(b []byte) bool {
	for _, p := range [...]string{"data:", "event:", "id:", "retry:", ":"} {
		if bytes.HasPrefix(b, []byte(p)) {
			return true
		}
	}
	return false
}

// notificationAnswer classifies the answer to a POST that expects no reply.
func (c *classifier) notificationAnswer(body []byte) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || !looksLikeJSONRPC(body) {
		// 202 (or a lenient 200/204) with no JSON-RPC body; the HTTP+SSE
		// transport of 2024-11-05 answers with the text "Accepted".
		c.set(Accepted, ClassNone, "accepted")
		return
	}
	c.set(UnexpectedResponse, BodyForNotice, "body-for-notification")
}

func looksLikeJSONRPC(b []byte) bool {
	return (b[0] == '{' || b[0] == '[' || bytes.HasPrefix(b, []byte("data:")) || bytes.HasPrefix(b, []byte("event:"))) &&
		bytes.Contains(b, []byte(`"jsonrpc"`))
}

// jsonBody classifies a JSON response body (or the final SSE message).
func (c *classifier) jsonBody(body []byte, via string) {
	v, err := c.p.ParseBytes(body)
	if err != nil {
		if c.ex.BodyTruncated {
			c.truncated(body)
			return
		}
		c.r.ErrorMessage = truncate(err.Error())
		c.set(MalformedJSON, ClassNone, rule(via, "malformed"))
		return
	}
	switch {
	case v.Type() == fastjson.TypeArray:
		c.batchResponse(v)
	case c.q.shape == reqBatch:
		// One object answering a batch: a server that refuses batches.
		c.message(v, via)
		if c.r.Outcome == JSONRPCError || c.r.Outcome == InvalidEnvelope && c.r.ErrorClass == MissingID {
			c.set(JSONRPCError, BatchRejected, "batch-single-error")
		}
	default:
		c.message(v, via)
	}
}

func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	for i := 0; i < len(ct); i++ {
		if c := ct[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(ct)
		}
	}
	return ct
}

// truncateBytes is truncate(string(b)) without copying more of a long
// valid text than the cut keeps: a rune the shorter copy splits starts
// past maxMessage, so the cut falls where it would on the whole text.
func truncateBytes(b []byte) string {
	if len(b) > maxMessage+utf8.UTFMax && utf8.Valid(b) {
		b = b[:maxMessage+utf8.UTFMax]
	}
	return truncate(string(b))
}

func truncate(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= maxMessage {
		return s
	}
	s = s[:maxMessage]
	// Do not cut a UTF-8 sequence in half.
	for i := len(s) - 1; i >= 0 && i >= len(s)-3; i-- {
		if s[i]&0xC0 != 0x80 {
			if s[i] >= 0xC0 {
				return s[:i]
			}
			break
		}
	}
	return s
}

// notOffered reports a GET or DELETE answered 405: the spec's own answer
// of a server that offers no stream at the endpoint (GET; stateless
// servers such as the TypeScript v2 SDK's default) or does not let
// clients end sessions (DELETE). The client goes on without it: nothing
// failed.
func notOffered(ex *Exchange) bool {
	return ex.Status == 405 && (strings.EqualFold(ex.HTTPMethod, "GET") || strings.EqualFold(ex.HTTPMethod, "DELETE"))
}
