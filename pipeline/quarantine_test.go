package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/redact"
)

func TestQuarantine(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	line := []byte(`{"ts":"2026-03-01T12:00:00Z","kind":"request","source":"client","http.method":"POST","http.status":"x"}`)
	msg := Message{Value: line, Pos: Position{Stream: "logs/a.ndjson", Offset: 42}}
	_, err := Decode(line, msg.Pos)
	q := quarantineRecord(msg, err, now, testRedactor(t, 0))

	if q.Position != "logs/a.ndjson:42" {
		t.Errorf("position %q", q.Position)
	}
	if want := `http.status: want an integer, got "\"x\""`; q.Reason != want {
		t.Errorf("reason %q, want %q", q.Reason, want)
	}
	if !q.TS.Equal(now) || q.TS.Location() != time.UTC {
		t.Errorf("ts %v, want %v in UTC", q.TS, now)
	}
	if !bytes.Equal(q.Raw, line) {
		t.Fatalf("raw %q", q.Raw)
	}
	line[0] = 'X' // the source reuses its buffer
	if q.Raw[0] != '{' {
		t.Error("raw bytes alias the message buffer")
	}
}

func testRedactor(t *testing.T, maxBody int) *redact.Redactor {
	t.Helper()
	r, err := redact.New(redact.Config{MaxBodyBytes: maxBody})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A quarantined line is kept as bytes, but never with a secret in it and
// never longer than a body may be.
func TestQuarantineRedactsAndCaps(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	secret := "tok-abcdefghijklmnop12345"
	garbage := bytes.Repeat([]byte{0xff, 'x'}, 1<<20)
	line := append([]byte(`{"authorization: bearer `+secret+`", "Cookie":"sid=`+secret+`" `), garbage...)
	msg := Message{Value: line, Pos: Position{Stream: "t", Topic: "mcp", Partition: 2, Offset: 9}}
	_, err := Decode(line, msg.Pos)
	q := quarantineRecord(msg, err, now, testRedactor(t, 4096))
	if bytes.Contains(q.Raw, []byte(secret)) || strings.Contains(q.Reason, secret) {
		t.Fatalf("secret kept in quarantine: raw %.120q reason %q", q.Raw, q.Reason)
	}
	if len(q.Raw) != 4096 {
		t.Errorf("raw kept %d bytes, want the 4096-byte cap", len(q.Raw))
	}
	if want := fmt.Sprintf("(raw line cut to 4096 of %d bytes)", len(line)); !strings.HasSuffix(q.Reason, want) {
		t.Errorf("reason %q does not say the line was cut (%s)", q.Reason, want)
	}
	if q.Position != "mcp/2/9" {
		t.Errorf("position %q", q.Position)
	}
}

func TestQuarantineReason(t *testing.T) {
	f := func(err error, want string) {
		t.Helper()
		if got := quarantineReason(err); got != want {
			t.Errorf("quarantineReason(%v) = %q, want %q", err, got, want)
		}
	}
	f(nil, "unknown")
	f(errors.New("sink rejected row"), "sink rejected row")
	f(fmt.Errorf("decode x:1: %w", &DecodeError{Reason: "not JSON: empty line"}), "not JSON: empty line")
	if got := quarantineReason(errors.New(strings.Repeat("x", 5000))); len(got) != maxQuarantineReason {
		t.Errorf("long reason not cut: %d bytes", len(got))
	}
}
