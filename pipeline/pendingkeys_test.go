package pipeline

import (
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// A waiting request's hashed keys are the hashes of the request key a
// cancel names it by (requestKey, hashed by pendingOf) and, session-less,
// of the key a cancel naming no client looks for (cancelwire.go).
func TestPendingKeysMatchRequestKeys(t *testing.T) {
	m := newMergeSet(2 * time.Second)
	pendingKeys := func(ev *schema.Event) (hkey, hkey, bool) {
		id, ok := classify.RequestID([]byte(ev.RequestBody))
		return m.pendingKeys(ev, id, ok)
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t"}}`
	ev := &schema.Event{Server: "kv", SessionID: "s-1", RequestBody: body}
	req, anyClient, ok := pendingKeys(ev)
	if !ok || anyClient != (hkey{}) || req != m.pendingOf("r\x00kv\x00s-1\x007") {
		t.Errorf("session: ok %v, request key does not hash as its string, or an anyClient key %v", ok, anyClient)
	}
	ev = &schema.Event{Server: "kv", ClientName: "cli", ClientVersion: "1.2", RequestBody: body}
	req, anyClient, ok = pendingKeys(ev)
	if !ok || req != m.pendingOf("r\x00kv\x00c\x00cli\x001.2\x007") || anyClient != m.pendingOf("p\x00kv\x007") {
		t.Errorf("session-less: ok %v, keys do not hash as their strings", ok)
	}
	if _, _, ok := pendingKeys(&schema.Event{Server: "kv", RequestBody: body}); ok {
		t.Error("a request that names neither session nor client has a key")
	}
	if _, _, ok := pendingKeys(&schema.Event{Server: "kv", SessionID: "s", RequestBody: `{"jsonrpc":"2.0","method":"notifications/initialized"}`}); ok {
		t.Error("a notification has a request key")
	}
}
