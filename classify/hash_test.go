package classify

import "testing"

func TestParamsHash(t *testing.T) {
	h := func(req string) string {
		t.Helper()
		r := Classify(&Exchange{HTTPMethod: "POST", RequestBody: []byte(req), Status: 200})
		return r.ParamsHash
	}
	base := h(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1,"b":[1,2]}}}`)
	if base == "" || len(base) != 16 {
		t.Fatalf("hash %q", base)
	}
	same := []string{
		`{"id":2,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"b":[1,2],"a":1},"name":"x"}}`,
		`{"jsonrpc":"2.0","id":"r-3","method":"tools/call","params":{ "name" : "x", "arguments" : { "a" : 1, "b" : [ 1, 2 ] } }}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{"a":1,"b":[1,2]},"_meta":{"progressToken":9}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","arguments":{"a":1,"b":[1,2]},"inputResponses":{"k":{}},"requestState":"s"}}`,
	}
	for _, s := range same {
		if got := h(s); got != base {
			t.Errorf("hash of %s = %s, want %s", s, got, base)
		}
	}
	different := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":2,"b":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1,"b":[2,1]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"y","arguments":{"a":1,"b":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":"1","b":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x","arguments":{"a":1,"b":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1,"b":[1,2],"_meta":{}}}}`,
	}
	for _, s := range different {
		if got := h(s); got == base {
			t.Errorf("hash of %s equals the base hash", s)
		}
	}
	r := Classify(&Exchange{HTTPMethod: "POST", RequestBody: []byte(same[3]), Status: 200})
	if !r.Continuation {
		t.Error("inputResponses not recognised as an MRTR continuation")
	}
}

func TestRequestFields(t *testing.T) {
	r := Classify(&Exchange{HTTPMethod: "POST", RequestBody: []byte(`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"lookup","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`), Status: 200, ResponseHeaders: Header{{"content-type", "application/json; charset=utf-8"}}, ResponseBody: []byte(`{"jsonrpc":"2.0","id":"abc","result":{"content":[]}}`)})
	if r.JSONRPCID != "abc" || r.ToolName != "lookup" || r.ProtocolVersion != "2026-07-28" || r.ContentType != "application/json" || r.Outcome != ToolSuccess {
		t.Errorf("%+v", r)
	}
	r = Classify(&Exchange{HTTPMethod: "POST", RequestHeaders: Header{{"mcp-protocol-version", "2025-06-18"}}, RequestBody: []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`), Status: 200, ResponseBody: []byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{}}}`)})
	if r.ProtocolVersion != "2025-03-26" || r.Outcome != Success || r.JSONRPCID != "0" {
		t.Errorf("initialize: %+v", r)
	}
	r = Classify(&Exchange{HTTPMethod: "POST", RequestBody: []byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/x"}]`), Status: 200, ResponseBody: []byte(`[{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}]`)})
	if r.Batch != 2 || r.Outcome != Success {
		t.Errorf("batch: %+v", r)
	}
	r = Classify(&Exchange{HTTPMethod: "POST", RequestBody: []byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}]`), Status: 200, ResponseBody: []byte(`[{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}},{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}]`)})
	if r.Batch != 2 || r.Outcome != JSONRPCError || r.ErrorClass != InvalidParams {
		t.Errorf("batch with error: %+v", r)
	}
	r = Classify(&Exchange{HTTPMethod: "POST", RequestBody: []byte(`[{"jsonrpc":"2.0","method":"notifications/a"}]`), Status: 202})
	if r.Outcome != Accepted {
		t.Errorf("notification batch: %+v", r)
	}
	r = Classify(&Exchange{HTTPMethod: "GET", Status: 200, ResponseHeaders: sseCT, ResponseBody: []byte("event: endpoint\ndata: /messages?sessionId=1\n\n"), Stream: StreamCut})
	if r.Outcome != Success || r.SSEEvents != 1 {
		t.Errorf("GET stream: %+v", r)
	}
	r = Classify(&Exchange{HTTPMethod: "DELETE", Status: 204})
	if r.Outcome != Success {
		t.Errorf("DELETE: %+v", r)
	}
}

// CallOf names the call as Classify does, so that a request still waiting
// for its answer can be matched with a released exchange of the same call.
func TestCallOfMatchesClassify(t *testing.T) {
	for _, req := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}`,
		`{"jsonrpc":"2.0","id":"r-2","method":"resources/read","params":{"uri":"file:///a"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	} {
		r := Classify(&Exchange{HTTPMethod: "POST", RequestBody: []byte(req), Status: 200})
		got, ok := CallOf([]byte(req))
		want := Call{Method: r.Method, ToolName: r.ToolName, ParamsHash: r.ParamsHash}
		if !ok || got != want {
			t.Errorf("CallOf(%s) = %+v, %v; want %+v", req, got, ok, want)
		}
	}
	for _, req := range []string{
		``, `not json`, `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}]`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","inputResponses":{"k":{}}}}`,
	} {
		if c, ok := CallOf([]byte(req)); ok {
			t.Errorf("CallOf(%q) = %+v, want none", req, c)
		}
	}
}
