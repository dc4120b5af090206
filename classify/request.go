package classify

import (
	"bytes"
	"math"
	"strconv"

	"github.com/valyala/fastjson"
)

// requestShape is how the request body parsed.
type requestShape uint8

const (
	reqEmpty     requestShape = iota // no body (GET, DELETE)
	reqSingle                        // one JSON-RPC message
	reqBatch                         // a JSON array of messages
	reqMalformed                     // not JSON, or JSON but not a message
)

// rpcID is a JSON-RPC id with its JSON type kept: 1 and "1" differ.
type rpcID struct {
	kind fastjson.Type // TypeNumber or TypeString; TypeNull when absent
	text []byte        // raw number text or the unescaped string
}

func (id rpcID) present() bool {
	return id.kind == fastjson.TypeNumber || id.kind == fastjson.TypeString
}

// equal compares ids in type and value; numbers compare numerically so that
// 1 and 1.0 are the same id.
func (id rpcID) equal(o rpcID) bool {
	if id.kind != o.kind {
		return false
	}
	if bytes.Equal(id.text, o.text) {
		return true
	}
	if id.kind != fastjson.TypeNumber {
		return false
	}
	a, errA := strconv.ParseFloat(string(id.text), 64)
	b, errB := strconv.ParseFloat(string(o.text), 64)
	return errA == nil && errB == nil && a == b && !math.IsNaN(a)
}

func idOf(v *fastjson.Value) rpcID {
	if v == nil {
		return rpcID{kind: fastjson.TypeNull}
	}
	switch v.Type() {
	case fastjson.TypeString:
		return rpcID{kind: fastjson.TypeString, text: v.GetStringBytes()}
	case fastjson.TypeNumber:
		return rpcID{kind: fastjson.TypeNumber, text: v.MarshalTo(nil)}
	default:
		// null, bool, object, array: not a valid id, keep the kind so it never
		// equals a valid one.
		return rpcID{kind: v.Type()}
	}
}

// request is what the classifier needs to know about the request body.
type request struct {
	shape        requestShape
	id           rpcID
	method       []byte
	isResponse   bool // the client POSTed a JSON-RPC response
	notification bool // no reply expected: notification or client response
	batch        int
	batchIDs     []rpcID
	batchMethods [][]byte
	onlyNotices  bool // a batch with no request in it
	value        *fastjson.Value
}

func (q *request) isToolCall() bool { return string(q.method) == "tools/call" }

// parseRequest parses the request body with p. The returned request refers
// to memory owned by p; it is valid until p parses again.
func parseRequest(p *fastjson.Parser, body []byte) request {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return request{shape: reqEmpty}
	}
	v, err := p.ParseBytes(body)
	if err != nil {
		return request{shape: reqMalformed}
	}
	switch v.Type() {
	case fastjson.TypeObject:
		q := request{shape: reqSingle, value: v}
		describeMessage(v, &q)
		if len(q.method) == 0 && !q.isResponse {
			q.shape = reqMalformed
		}
		return q
	case fastjson.TypeArray:
		items, _ := v.Array()
		q := request{shape: reqBatch, batch: len(items), value: v, onlyNotices: true}
		for _, it := range items {
			var m request
			if it.Type() == fastjson.TypeObject {
				describeMessage(it, &m)
			}
			if len(q.method) == 0 {
				q.method = m.method
			}
			if !m.notification {
				q.onlyNotices = false
				q.batchIDs = append(q.batchIDs, m.id)
				q.batchMethods = append(q.batchMethods, m.method)
			}
		}
		if len(items) == 0 {
			q.shape = reqMalformed
		}
		q.notification = q.onlyNotices
		return q
	default:
		return request{shape: reqMalformed}
	}
}

func describeMessage(v *fastjson.Value, q *request) {
	q.id = idOf(v.Get("id"))
	if m := v.Get("method"); m != nil && m.Type() == fastjson.TypeString {
		q.method = m.GetStringBytes()
	}
	if len(q.method) == 0 && (v.Exists("result") || v.Exists("error")) {
		q.isResponse = true
	}
	q.notification = q.isResponse || !q.id.present()
}

// describeRequest fills the request-side fields of r.
func describeRequest(q *request, h Header, r *Result) {
	r.Method = intern(q.method)
	r.Batch = q.batch
	r.Notification = q.notification
	if q.shape == reqSingle && q.id.present() && !q.isResponse {
		r.JSONRPCID = string(q.id.text)
	}
	r.ProtocolVersion = h.Get("mcp-protocol-version")
	if q.shape != reqSingle {
		return
	}
	params := q.value.Get("params")
	if params == nil || params.Type() != fastjson.TypeObject {
		if q.id.present() && !q.isResponse {
			r.ParamsHash = hashParams(q.method, nil)
		}
		return
	}
	if q.isToolCall() {
		if n := params.Get("name"); n != nil && n.Type() == fastjson.TypeString {
			r.ToolName = intern(n.GetStringBytes())
		}
	}
	if r.ProtocolVersion == "" {
		if v := params.Get("_meta", "io.modelcontextprotocol/protocolVersion"); v != nil && v.Type() == fastjson.TypeString {
			r.ProtocolVersion = intern(v.GetStringBytes())
		} else if string(q.method) == "initialize" {
			if v := params.Get("protocolVersion"); v != nil && v.Type() == fastjson.TypeString {
				r.ProtocolVersion = intern(v.GetStringBytes())
			}
		}
	}
	r.Continuation = params.Exists("inputResponses") || params.Exists("requestState")
	if q.id.present() && !q.isResponse {
		r.ParamsHash = hashParams(q.method, params)
	}
}
