package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

func TestStdoutSink(t *testing.T) {
	var ex, q bytes.Buffer
	s := NewStdoutSink(&ex, &q)
	ts := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := &schema.Batch{
		Exchanges: []schema.Exchange{
			{ExchangeID: "x-1", TS: ts, HTTPStatus: 200, Result: classify.Result{Outcome: classify.ToolError, Method: "tools/call"}},
			{ExchangeID: "x-2", TS: ts, HTTPStatus: 503, Sources: []string{"gateway", "client"}},
		},
		Bodies: []schema.Body{{ExchangeID: "x-1"}},
		Quarantine: []schema.Quarantined{
			{TS: ts, Position: "a.ndjson:3", Reason: "not JSON", Raw: []byte(`{"a":<b>`)},
			{TS: ts, Position: "a.ndjson:4", Reason: "not JSON", Raw: []byte{0xff, 0xfe, 'x'}},
		},
	}
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}

	lines := strings.Split(strings.TrimSuffix(ex.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d exchange lines, want 2:\n%s", len(lines), ex.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"exchange_id": "x-1", "http_status": 200.0, "outcome": "TOOL_ERROR", "method": "tools/call", "ts": "2026-03-01T12:00:00Z"} {
		if got[k] != want {
			t.Errorf("exchange key %q = %v, want %v", k, got[k], want)
		}
	}

	want := `{"quarantine":{"ts":"2026-03-01T12:00:00Z","position":"a.ndjson:3","reason":"not JSON","raw":"{\"a\":<b>"}}
{"quarantine":{"ts":"2026-03-01T12:00:00Z","position":"a.ndjson:4","reason":"not JSON","raw_base64":"//54"}}
`
	if q.String() != want {
		t.Errorf("quarantine output:\n%s\nwant\n%s", q.String(), want)
	}
}

func TestStdoutSinkSameWriter(t *testing.T) {
	var out bytes.Buffer
	s := NewStdoutSink(&out, &out)
	b := &schema.Batch{Exchanges: []schema.Exchange{{ExchangeID: "x"}}, Quarantine: []schema.Quarantined{{Raw: []byte("r")}}}
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Errorf("got %d lines, want 2", n)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestStdoutSinkErrors(t *testing.T) {
	s := NewStdoutSink(failingWriter{}, failingWriter{})
	if err := s.Write(context.Background(), &schema.Batch{Exchanges: []schema.Exchange{{ExchangeID: "x"}}}); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("write to a failing writer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var buf bytes.Buffer
	if err := NewStdoutSink(&buf, &buf).Write(ctx, &schema.Batch{Exchanges: []schema.Exchange{{}}}); !errors.Is(err, context.Canceled) || buf.Len() != 0 {
		t.Errorf("write with a done context: %v, %d bytes written", err, buf.Len())
	}
}
