package classify

import (
	"bytes"

	"github.com/valyala/fastjson"
)

// RequestID returns the JSON-RPC id of a single request body as text, as
// Result.JSONRPCID spells it, and false for notifications, batches and
// unparsable bodies.
func RequestID(body []byte) (string, bool) {
	p := parsers.Get()
	defer parsers.Put(p)
	q := parseRequest(p, body)
	if q.shape != reqSingle || q.notification {
		return "", false
	}
	return string(q.id.text), true
}

// Call is what makes two requests the same call for retry chains: the
// method, the tool name and the params hash, as Classify fills them in
// Result.
type Call struct {
	Method, ToolName, ParamsHash string
}

// CallOf returns the call a request body makes, and false when it makes
// none a retry can repeat: a notification, a batch, an unparsable body,
// a response the client POSTed, or an MRTR follow-up (inputResponses,
// requestState), which continues its call rather than re-sending it.
func CallOf(body []byte) (Call, bool) {
	p := parsers.Get()
	defer parsers.Put(p)
	q := parseRequest(p, body)
	if q.shape != reqSingle || q.notification {
		return Call{}, false
	}
	var r Result
	describeRequest(&q, nil, &r)
	if r.Continuation || r.ParamsHash == "" {
		return Call{}, false
	}
	return Call{Method: r.Method, ToolName: r.ToolName, ParamsHash: r.ParamsHash}, true
}

// ResponseID returns the JSON-RPC id a response body answers, as text: the
// id of a JSON response object, or of the last response message on an SSE
// stream. It returns false when the body names no id (plain text, id-less
// errors, cut streams).
func ResponseID(contentType string, body []byte) (string, bool) {
	p := parsers.Get()
	defer parsers.Put(p)
	id := ""
	found := false
	visit := func(data []byte) {
		v, err := p.ParseBytes(data)
		if err != nil || v.Type() != fastjson.TypeObject || v.Exists("method") {
			return
		}
		if !v.Exists("result") && !v.Exists("error") {
			return
		}
		if rid := idOf(v.Get("id")); rid.present() {
			id, found = string(rid.text), true
		}
	}
	if mediaType(contentType) == "text/event-stream" || (contentType == "" && looksLikeSSE(body)) {
		s := newSSEScanner(body, true)
		for {
			ev, ok := s.next()
			if !ok {
				break
			}
			visit(ev.data)
		}
		return id, found
	}
	visit(bytes.TrimSpace(body))
	return id, found
}

// Payload returns the JSON text of the message that answers a request: the
// body itself for JSON, the data of the last response message for SSE.
// The slice may point into body. It returns nil when there is none.
func Payload(contentType string, body []byte) []byte {
	if mediaType(contentType) != "text/event-stream" && (contentType != "" || !looksLikeSSE(body)) {
		b := bytes.TrimSpace(body)
		if len(b) == 0 {
			return nil
		}
		return b
	}
	var out []byte
	s := newSSEScanner(body, true)
	for {
		ev, ok := s.next()
		if !ok {
			return out
		}
		d := bytes.TrimSpace(ev.data)
		if bytes.Contains(d, []byte(`"result"`)) || bytes.Contains(d, []byte(`"error"`)) {
			out = append(out[:0], d...)
		}
	}
}
