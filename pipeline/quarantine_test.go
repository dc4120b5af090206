package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestQuarantine(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	line := []byte(`{"ts":"2026-03-01T12:00:00Z","kind":"request","source":"client","http.method":"POST","http.status":"x"}`)
	msg := Message{Value: line, Pos: Position{Stream: "logs/a.ndjson", Offset: 42}}
	_, err := Decode(line, msg.Pos)
	q := quarantineRecord(msg, err, now)

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
