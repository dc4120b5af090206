package duckstore

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/pipeline/statetest"
)

// Issue 12, case 4: no byte wedges the stream. A raw 0xFF (and a NUL) in a
// response body is stored as the bytes logged; a raw 0xFF in server or
// session_id quarantines the line naming the field; every good line is
// stored and the partition is committed to its end.
func TestBadBytesNeverWedge(t *testing.T) {
	ctx := context.Background()
	store, err := Open(ctx, filepath.Join(t.TempDir(), "bytes.duckdb"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	line := func(i int, server, session, body string) []byte {
		return fmt.Appendf(nil, `{"event_id":"e-%d","ts":"2026-11-02T%02d:%02d:%02dZ","kind":"exchange","source":"gateway","server":"%s","session_id":"%s","http.method":"POST","http.status":200,"http.response_headers":{"content-type":"application/json"},"request_body":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}","response_body":"%s"}`,
			i, 10+i/3600, i/60%60, i%60, server, session, i, body)
	}
	good := `{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}`
	var msgs [][]byte
	for i := range 200 {
		msgs = append(msgs, line(i, "kv", "s-1", good))
	}
	badBody := "{\"jsonrpc\":\"2.0\",\"id\":200,\"error\":{\"code\":-32603,\"message\":\"cut \xe2\x82\xff\"}}"
	msgs = append(msgs,
		line(200, "kv", "s-1", strings.ReplaceAll(badBody, `"`, `\"`)),
		line(201, "k\xffv", "s-1", good),
		line(202, "kv", "s-\xc0", good),
		line(203, "kv", "s-1", `\u0000\u0000`),
		line(3600, "kv", "s-1", good)) // moves the watermark past the others
	n := int64(len(msgs))
	src := statetest.NewSource(msgs...)
	statetest.RunUntil(t, store, src, func() bool { return src.Committed() == n })

	var stored, quarantined int
	if err := store.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM exchanges), (SELECT count(*) FROM quarantine)`).Scan(&stored, &quarantined); err != nil {
		t.Fatal(err)
	}
	if stored != 202 || quarantined != 2 {
		t.Errorf("%d exchanges and %d quarantined, want 202 and 2", stored, quarantined)
	}
	var body []byte
	var msg string
	if err := store.db.QueryRowContext(ctx, `SELECT b.response_body, e.error_message FROM exchange_bodies b JOIN exchanges e USING (exchange_id)
		WHERE e.request_event_id = 'e-200'`).Scan(&body, &msg); err != nil {
		t.Fatal(err)
	}
	if want := []byte("{\"jsonrpc\":\"2.0\",\"id\":200,\"error\":{\"code\":-32603,\"message\":\"cut \xe2\x82\xff\"}}"); !bytes.Equal(body, want) {
		t.Errorf("body stored as %q, want the logged bytes %q", body, want)
	}
	if msg != "cut \uFFFD" && msg != "cut \uFFFD\uFFFD" {
		t.Errorf("error_message %q, want the invalid bytes repaired", msg)
	}
	if err := store.db.QueryRowContext(ctx, `SELECT b.response_body FROM exchange_bodies b JOIN exchanges e USING (exchange_id)
		WHERE e.request_event_id = 'e-203'`).Scan(&body); err != nil || !bytes.Equal(body, []byte{0, 0}) {
		t.Errorf("NUL body stored as %q (%v), want two NUL bytes", body, err)
	}
	for _, want := range []string{"server: invalid UTF-8 at byte 1", "session_id: invalid UTF-8 at byte 2"} {
		var k int
		if err := store.db.QueryRowContext(ctx, `SELECT count(*) FROM quarantine WHERE reason = $1`, want).Scan(&k); err != nil || k != 1 {
			t.Errorf("quarantine reason %q: %d rows (%v)", want, k, err)
		}
	}
}
