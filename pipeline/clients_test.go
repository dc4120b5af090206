package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/schema"
)

func TestClientsNameEverySessionExchange(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := newClients(ClientConfig{MaxSessions: 2, Idle: time.Hour})
	f := func(at time.Duration, session, method, reqBody, logged, wantName, wantVersion string) {
		t.Helper()
		rec := schema.Exchange{Server: "s", SessionID: session, TS: t0.Add(at), ClientName: logged}
		rec.Method = method
		c.Identify(&rec, &schema.Body{RequestBody: reqBody})
		if rec.ClientName != wantName || rec.ClientVersion != wantVersion {
			t.Errorf("%s %s at %s: client %q/%q, want %q/%q", session, method, at, rec.ClientName, rec.ClientVersion, wantName, wantVersion)
		}
	}
	initA := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"py-client","version":"2.3.0"}}}`
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup"}}`
	f(0, "A", "initialize", initA, "py-client", "py-client", "2.3.0")
	f(time.Second, "A", "tools/call", call, "python-httpx", "py-client", "2.3.0")
	f(2*time.Second, "", "tools/call", call, "python-httpx", "python-httpx", "")      // no session: nothing better known
	f(3*time.Second, "B", "tools/call", call, "Go-http-client", "Go-http-client", "") // B never initialized here
	modern := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/clientInfo":{"name":"rmcp-client","version":"3.11.0"}}}}`
	f(4*time.Second, "", "tools/call", modern, "reqwest", "rmcp-client", "3.11.0")
	f(5*time.Second, "C", "initialize", strings.Replace(initA, "py-client", "ts-client", 1), "", "ts-client", "2.3.0")
	f(6*time.Second, "A", "tools/call", call, "python-httpx", "py-client", "2.3.0")
	// A third session pushes out the least recently seen (C).
	f(7*time.Second, "D", "initialize", strings.Replace(initA, "py-client", "go-client", 1), "", "go-client", "2.3.0")
	f(8*time.Second, "C", "tools/call", call, "node", "node", "")
	// A session idle for longer than Idle is forgotten.
	f(2*time.Hour, "A", "tools/call", call, "python-httpx", "python-httpx", "")
	if c.Len() > 2 {
		t.Errorf("%d sessions remembered, bound 2", c.Len())
	}
	// A name from the wire is bounded and stays valid UTF-8.
	long := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"` + strings.Repeat("é", 200) + `","version":"1"}}}`
	rec := schema.Exchange{Server: "s", SessionID: "E", TS: t0.Add(3 * time.Hour)}
	c.Identify(&rec, &schema.Body{RequestBody: long})
	if len(rec.ClientName) > maxClientField || !strings.HasPrefix(rec.ClientName, "éé") || strings.ContainsRune(rec.ClientName, '\uFFFD') {
		t.Errorf("long name kept as %d bytes %q", len(rec.ClientName), rec.ClientName)
	}
}

func TestClientsSeededFromStore(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := newClients(ClientConfig{})
	stored := []schema.Exchange{
		{Server: "s", SessionID: "A", TS: t0, ClientName: "py-client", ClientVersion: "2.3.0"},
		{Server: "s", SessionID: "A", TS: t0.Add(time.Second), ClientName: "python-httpx"},
		{Server: "s", SessionID: "B", TS: t0.Add(2 * time.Second), ClientName: "ts-client", ClientVersion: "1"},
		// The client's own view, named as its logger names itself: live,
		// that name stays on this exchange alone.
		{Server: "s", SessionID: "C", TS: t0.Add(3 * time.Second), ClientName: "cursor", Sources: []string{"client", "gateway"}},
		{Server: "s", SessionID: "C", TS: t0.Add(4 * time.Second)},
	}
	stored[0].Method = "initialize"
	stored[1].Method, stored[2].Method = "tools/call", "tools/call"
	for i := range stored {
		c.Seed(&stored[i])
	}
	for _, tc := range []struct{ session, want string }{{"A", "py-client"}, {"B", "ts-client"}, {"C", "python-httpx"}} {
		rec := schema.Exchange{Server: "s", SessionID: tc.session, TS: t0.Add(time.Minute), ClientName: "python-httpx"}
		c.Identify(&rec, &schema.Body{RequestBody: `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`})
		if rec.ClientName != tc.want {
			t.Errorf("session %s after seeding: %q, want %q", tc.session, rec.ClientName, tc.want)
		}
	}
}
