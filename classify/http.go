package classify

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"
)

// httpError classifies a status outside 2xx. The status decides the
// outcome; the body (a JSON-RPC error, an SSE-wrapped one, or plain text)
// only refines the class and fills jsonrpc_code and error_message.
func (c *classifier) httpError(body []byte) {
	ex, r := c.ex, c.r
	code, msg, hasCode := c.errorBody(body)
	if hasCode {
		r.JSONRPCCode = Int(code)
	}
	r.ErrorMessage = truncate(msg)
	status := ex.Status
	var class ErrorClass
	switch {
	case status == 401:
		class = AuthRequired
	case status == 403:
		class = Forbidden
		if containsFold(ex.ResponseHeaders.Get("www-authenticate"), "insufficient_scope") {
			class = InsufficientScope
		}
	case status == 429:
		class = RateLimited
	case status == 408:
		class = Timeout
	case status >= 500:
		class = ServerError
	case status >= 300 && status < 400:
		class = Redirect
	case c.q.shape == reqBatch && status >= 400 && status < 500:
		class = BatchRejected
	case status == 404:
		switch {
		case hasCode && code == -32601:
			// 2026-07-28: an unknown method is a 404 with -32601, told apart
			// from a legacy 404 by its JSON-RPC body.
			class = MethodNotFound
		case ex.RequestHeaders.Get("mcp-session-id") != "":
			class = SessionNotFound
		default:
			class = NotFound
		}
	case status == 405:
		class = MethodNotAllowed
	case status == 406:
		class = NotAcceptable
	case status == 409:
		class = Conflict
	case status == 413:
		class = PayloadTooLarge
	case c.q.shape == reqMalformed && status >= 400 && status < 500:
		// Before 415: rmcp answers an unparsable JSON body with 415.
		class = ParseError
	case status == 415:
		class = UnsupportedMediaType
	case status == 400:
		class = c.badRequestClass(code, hasCode, msg)
	default:
		class = ClientError
	}
	c.set(HTTPError, class, "http-status")
}

// badRequestClass refines a 400 from its JSON-RPC code or its text, as the
// SDKs and the 2026-07-28 revision use 400 for many causes.
func (c *classifier) badRequestClass(code int64, hasCode bool, msg string) ErrorClass {
	if hasCode {
		switch code {
		case -32700:
			return ParseError
		case -32020:
			return HeaderMismatch
		case -32021:
			return MissingCapability
		case -32022:
			return UnsupportedVersion
		case -32602:
			if unknownToolText(msg) {
				return UnknownTool
			}
			if !knownVersion(c.ex.RequestHeaders.Get("mcp-protocol-version")) {
				// Python 2.x reads an unknown version header as the 2026
				// wire and complains about the _meta that wire needs.
				return UnsupportedVersion
			}
			if !containsFold(msg, "protocol version") {
				return InvalidParams
			}
		case -32601:
			return MethodNotFound
		}
	}
	switch {
	case containsFold(msg, "not acceptable") || containsFold(msg, "must accept"):
		return NotAcceptable
	case containsFold(msg, "unsupported protocol version") || containsFold(msg, "unsupported mcp-protocol-version"):
		// rmcp: plain-text "Unsupported MCP-Protocol-Version: <v>".
		return UnsupportedVersion
	case containsFold(msg, "no valid session") || containsFold(msg, "invalid or expired session") ||
		containsFold(msg, "session not found"):
		// Python SDK session managers up to 1.25 answer an unknown
		// session with 400 and plain text instead of the spec's 404.
		return SessionNotFound
	case containsFold(msg, "parse error"):
		return ParseError
	case hasCode && code == -32600:
		return InvalidRequest
	}
	return BadRequest
}

// errorBody extracts a JSON-RPC error code and message from an HTTP error
// body, or the plain text of a non-JSON body.
func (c *classifier) errorBody(body []byte) (code int64, msg string, ok bool) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return 0, "", false
	}
	data := body
	if c.r.Transport == TransportSSE {
		s := newSSEScanner(body, true)
		ev, found := s.next()
		if !found {
			return 0, string(body), false
		}
		data = ev.data
	}
	v, err := c.p.ParseBytes(data)
	if err != nil {
		return 0, string(body), false
	}
	if v.Type() == fastjson.TypeArray {
		items, _ := v.Array()
		if len(items) == 0 {
			return 0, "", false
		}
		v = items[0]
	}
	e := v.Get("error")
	if e == nil || e.Type() != fastjson.TypeObject {
		if v.Type() == fastjson.TypeString {
			return 0, string(v.GetStringBytes()), false
		}
		return 0, string(body), false
	}
	msg = string(e.GetStringBytes("message"))
	cv := e.Get("code")
	if cv == nil || cv.Type() != fastjson.TypeNumber {
		return 0, msg, false
	}
	n, err := cv.Int64()
	if err != nil {
		return 0, msg, false
	}
	return n, msg, true
}

// transportClass maps the contract's transport_error values, and the free
// text of common HTTP client errors, to a class.
func transportClass(s string) ErrorClass {
	l := strings.ToLower(s)
	switch {
	case l == "client_abort":
		// The client went away before any status: on the 2026-07-28 wire
		// that is how a client cancels.
		return ClientAbort
	case l == "timeout" || strings.Contains(l, "timeout") || strings.Contains(l, "deadline exceeded") || strings.Contains(l, "timed out"):
		return Timeout
	case strings.Contains(l, "refused"):
		return ConnectionRefused
	case strings.Contains(l, "reset") || strings.Contains(l, "broken pipe") || l == "eof" || strings.Contains(l, "unexpected eof"):
		return ConnectionReset
	case strings.Contains(l, "tls") || strings.Contains(l, "x509") || strings.Contains(l, "certificate"):
		return TLSError
	case l == "dns" || strings.Contains(l, "no such host") || strings.Contains(l, "lookup"):
		return DNSError
	}
	return NetworkError
}

// streamClass maps stream.close_reason to a class.
func streamClass(reason string) ErrorClass {
	switch reason {
	case "timeout":
		return Timeout
	case "reset":
		return ConnectionReset
	case "client_abort":
		return ClientAbort
	case "server_abort":
		return ServerAbort
	}
	return StreamEndedEarly
}

// retryAfter parses Retry-After as delta-seconds or an HTTP date relative to
// the response time (or the Date header when the time is unknown).
func retryAfter(h Header, at time.Time) NullInt {
	v := strings.TrimSpace(h.Get("retry-after"))
	if v == "" {
		return NullInt{}
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return NullInt{}
		}
		return Int(n)
	}
	when, err := http.ParseTime(v)
	if err != nil {
		return NullInt{}
	}
	if at.IsZero() {
		d, err := http.ParseTime(h.Get("date"))
		if err != nil {
			return NullInt{}
		}
		at = d
	}
	s := int64(when.Sub(at).Round(time.Second) / time.Second)
	if s < 0 {
		s = 0
	}
	return Int(s)
}

// containsFold reports whether s contains substr, ignoring ASCII case.
func containsFold(s, substr string) bool {
	if len(substr) > len(s) {
		return false
	}
	return bytes.Contains(bytes.ToLower([]byte(s)), []byte(strings.ToLower(substr)))
}

// protocolVersions are the MCP revisions a server may speak.
var protocolVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}

// knownVersion reports whether an MCP-Protocol-Version header is absent or
// names a revision of the spec.
func knownVersion(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || slices.Contains(protocolVersions, v)
}
