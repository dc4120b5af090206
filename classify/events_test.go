package classify

import (
	"slices"
	"testing"
)

func TestSSEEvents(t *testing.T) {
	f := func(body string, want []SSEEvent, wantTail string) {
		t.Helper()
		got, tail := SSEEvents([]byte(body))
		if !slices.Equal(got, want) || tail != wantTail {
			t.Errorf("SSEEvents(%q) = %+v, tail %q; want %+v, tail %q", body, got, tail, want, wantTail)
		}
	}
	f("", nil, "")
	f("event: message\ndata: {\"id\":1}\n\n", []SSEEvent{{Type: "message", Data: `{"id":1}`}}, "")
	f("id: 7\ndata:\n\ndata: a\r\ndata: b\r\n\r\n", []SSEEvent{{ID: "7"}, {Data: "a\nb"}}, "")
	// A cut stream: the last event never ended.
	f("data: {\"method\":\"n\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"res", []SSEEvent{{Data: `{"method":"n"}`}}, `{"jsonrpc":"2.0","id":1,"res`)
	// A comment after the last event is no tail.
	f("data: x\n\n: keepalive\n", []SSEEvent{{Data: "x"}}, "")
}
