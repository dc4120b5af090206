package classify

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/ from the current output")

// TestSSEGolden classifies each testdata/sse/*.sse stream as the answer to
// tools/call id 1 and compares the result with NAME.golden. Streams whose
// name contains "cut" are recorded as cut, the rest as complete.
func TestSSEGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/sse/*.sse")
	if err != nil || len(files) == 0 {
		t.Fatalf("no SSE fixtures: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".sse")
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ex := post(callReq, 200, sseCT, string(body))
			ex.Stream, ex.CloseReason = StreamComplete, "eof"
			if strings.Contains(name, "cut") {
				ex.Stream, ex.CloseReason = StreamCut, "server_abort"
			}
			got, err := json.MarshalIndent(Classify(&ex), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(f, ".sse") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden: %v (run `go test ./classify -run TestSSEGolden -update` to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("classification of %s changed:\n got: %s\nwant: %s\nIf the change is intended, run `go test ./classify -run TestSSEGolden -update` and review the diff.", f, got, want)
			}
		})
	}
}

// The golden files pin every field; these assertions say what matters in
// each stream so that a careless -update cannot bless a wrong answer.
func TestSSEStreams(t *testing.T) {
	cases := map[string]struct {
		outcome Outcome
		events  int
	}{
		"progress_then_final":        {ToolSuccess, 3},
		"crlf":                       {ToolSuccess, 2},
		"cr_only":                    {ToolSuccess, 2},
		"priming_retry_comment":      {ToolSuccess, 2},
		"multiline_data":             {ToolSuccess, 1},
		"server_request_same_id":     {ToolSuccess, 2},
		"cut_mid_event":              {StreamIncomplete, 1},
		"complete_without_final":     {StreamIncomplete, 1},
		"final_error":                {JSONRPCError, 1},
		"final_iserror":              {ToolError, 1},
		"no_trailing_blank_complete": {ToolSuccess, 1},
		"no_trailing_blank_cut":      {StreamIncomplete, 0},
		"malformed_final":            {MalformedJSON, 1},
		"stray_id":                   {InvalidEnvelope, 1},
		"bom":                        {ToolSuccess, 1},
		"input_required":             {InputRequired, 1},
	}
	for name, c := range cases {
		body, err := os.ReadFile("testdata/sse/" + name + ".sse")
		if err != nil {
			t.Fatal(err)
		}
		ex := post(callReq, 200, sseCT, string(body))
		ex.Stream = StreamComplete
		if strings.Contains(name, "cut") {
			ex.Stream = StreamCut
		}
		r := Classify(&ex)
		if r.Outcome != c.outcome || r.SSEEvents != c.events || r.Transport != TransportSSE {
			t.Errorf("%s: outcome %s (rule %s), %d events, transport %s; want %s, %d events, sse", name, r.Outcome, r.Rule, r.SSEEvents, r.Transport, c.outcome, c.events)
		}
	}
}

func TestSSEScanner(t *testing.T) {
	f := func(body string, flush bool, want ...string) {
		t.Helper()
		s := newSSEScanner([]byte(body), flush)
		var got []string
		for {
			ev, ok := s.next()
			if !ok {
				break
			}
			got = append(got, string(ev.typ)+"|"+string(ev.id)+"|"+string(ev.data))
		}
		if strings.Join(got, ";") != strings.Join(want, ";") {
			t.Errorf("events of %q = %q, want %q", body, got, want)
		}
	}
	f("data: a\n\n", false, "||a")
	f("data:a\ndata: b\n\n", false, "||a\nb")
	f("data:  two spaces\n\n", false, "|| two spaces")
	f("event: x\nid: 7\ndata: y\n\n", false, "x|7|y")
	f(": comment\n\ndata: z\r\n\r\n", false, "||z")
	f("id: 1\n\n", false)               // no data line: nothing dispatched
	f("id: 1\ndata:\n\n", false, "|1|") // priming event: empty data
	f("data\n\n", false, "||")          // a field name without colon
	f("data: tail", false)
	f("data: tail", true, "||tail")
	f("id: a\x00b\ndata: q\n\n", false, "||q") // ids with NUL are ignored
	f("retry: 10\ndata: r\n\n", false, "||r")
}
