package pipeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

var decodePos = Position{Stream: "t.ndjson", Offset: 7}

// decodeTestdata returns the non-blank lines of a testdata file.
func decodeTestdata(t testing.TB, name string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "decode", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			lines = append(lines, bytes.Clone(sc.Bytes()))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// checkEvent asserts what every successfully decoded event guarantees.
func checkEvent(t testing.TB, ev schema.Event) {
	t.Helper()
	if ev.V != schema.ContractVersion || ev.EventID == "" || ev.TS.IsZero() || ev.TS.Location() != time.UTC {
		t.Fatalf("bad identity: v=%d id=%q ts=%v", ev.V, ev.EventID, ev.TS)
	}
	switch ev.Kind {
	case schema.KindExchange, schema.KindRequest, schema.KindResponse:
	default:
		t.Fatalf("bad kind %q", ev.Kind)
	}
	switch ev.Source {
	case schema.SourceGateway, schema.SourceClient, schema.SourceServer:
	default:
		t.Fatalf("bad source %q", ev.Source)
	}
	if ev.HasRequest() && ev.HTTPMethod == "" {
		t.Fatal("request side without http.method")
	}
	if ev.HasResponse() && ev.HTTPStatus == 0 && ev.TransportError == "" {
		t.Fatal("response side without http.status or transport_error")
	}
	for _, h := range []classify.Header{ev.RequestHeaders, ev.ResponseHeaders} {
		for _, f := range h {
			k := f.Name
			if strings.ContainsAny(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
				t.Fatalf("header name %q not lower-case", k)
			}
		}
	}
	for k, raw := range ev.Attrs {
		if !json.Valid(raw) {
			t.Fatalf("attr %q is not valid JSON: %q", k, raw)
		}
	}
	if _, err := json.Marshal(ev); err != nil {
		t.Fatalf("marshal decoded event: %v", err)
	}
}

func TestDecodeValidFile(t *testing.T) {
	for i, line := range decodeTestdata(t, "valid.ndjson") {
		ev, err := Decode(line, decodePos)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		checkEvent(t, ev)
	}
}

func TestDecodeInvalidFile(t *testing.T) {
	for i, line := range decodeTestdata(t, "invalid.ndjson") {
		_, err := Decode(line, decodePos)
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("line %d: want a *DecodeError, got %v", i+1, err)
		}
	}
}

func TestDecodeFields(t *testing.T) {
	lines := decodeTestdata(t, "valid.ndjson")
	f := func(line int, want schema.Event) {
		t.Helper()
		got, err := Decode(lines[line-1], decodePos)
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		if want.EventID == "" {
			want.EventID = deriveEventID(lines[line-1])
		}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.MarshalIndent(got, "", " ")
			w, _ := json.MarshalIndent(want, "", " ")
			t.Errorf("line %d:\ngot  %s\nwant %s", line, g, w)
		}
	}
	dur, yes, no := 12.5, true, false
	f(1, schema.Event{
		V: 1, EventID: "gw-1", TS: time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC),
		Kind: "exchange", Source: "gateway", Observer: "gw-0", ExchangeID: "x-1",
		Server: "weather", URL: "https://mcp.example.com/mcp", ClientName: "claude-code",
		ClientVersion: "1.2.3", SessionID: "s-1", HTTPMethod: "POST", HTTPStatus: 200,
		RequestHeaders: classify.HeaderOf(map[string]string{
			"content-type": "application/json", "accept": "application/json, text/event-stream", "mcp-session-id": "s-1",
		}),
		ResponseHeaders: classify.HeaderOf(map[string]string{"content-type": "application/json"}),
		RequestBody:     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_forecast","arguments":{"city":"Z\u00fcrich"}}}`, // one level of escaping removed, the body's own kept
		ResponseBody:    `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"sunny\n"}]}}`,
		DurationMS:      &dur, Attempt: 1, RetryOrigin: "none", ClientOutcome: "success",
		Attrs: map[string]json.RawMessage{
			"region": json.RawMessage(`"eu"`), "pod": json.RawMessage(`"gw-0-abc"`), "labels": json.RawMessage(`{"team":"a"}`),
		},
	})
	f(2, schema.Event{
		V: 1, TS: time.Date(2026, 3, 1, 12, 0, 1, 0, time.UTC), Kind: "exchange", Source: "gateway",
		HTTPMethod: "POST", HTTPStatus: 202, RequestHeaders: classify.HeaderOf(map[string]string{"content-type": "application/json"}),
		RequestBody:    `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		StreamComplete: &yes, CloseReason: "eof",
		Attrs: map[string]json.RawMessage{"http.version": json.RawMessage(`"1.1"`)},
	})
	f(3, schema.Event{
		V: 1, TS: time.Date(2026, 3, 1, 10, 0, 2, 5e8, time.UTC), Kind: "request", Source: "client",
		ExchangeID: "x-2", HTTPMethod: "POST", RequestBody: `{"jsonrpc":"2.0","id":"a","method":"tools/list"}`,
	})
	f(4, schema.Event{
		V: 1, TS: time.Date(2026, 3, 1, 12, 0, 2, 7e8, time.UTC), Kind: "response", Source: "client",
		ExchangeID: "x-2", HTTPStatus: 200, ResponseHeaders: classify.HeaderOf(map[string]string{"content-type": "text/event-stream"}),
		ResponseBody:   "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{\"tools\":[]}}\n\n",
		StreamComplete: &no, CloseReason: "reset", BodyTruncated: true,
	})
	f(5, schema.Event{
		V: 1, TS: time.Date(2026, 3, 1, 12, 0, 3, 1, time.UTC), Kind: "exchange", Source: "client",
		HTTPMethod: "POST", RequestBody: `{"jsonrpc":"2.0","id":2,"method":"tools/call"}`,
		TransportError: "connection_refused", IdempotencyKey: "k-1",
	})
	f(6, schema.Event{
		V: 1, TS: time.Date(2026, 3, 1, 12, 0, 4, 0, time.UTC), Kind: "response", Source: "server",
		HTTPStatus: 500, ResponseBody: "Internal Server Error",
	})
	f(7, schema.Event{
		V: 1, TS: time.Date(2026, 3, 1, 12, 0, 5, 0, time.UTC), Kind: "request", Source: "gateway",
		HTTPMethod: "GET", RequestHeaders: classify.HeaderOf(map[string]string{"last-event-id": "42", "x-weird": ""}),
	})
}

// TestDecodeHeaders: header names come out lower-cased and sorted, and
// of a name given twice (in any case) the value given last counts, as
// when the headers were a map.
func TestDecodeHeaders(t *testing.T) {
	for _, c := range []struct {
		headers string
		want    classify.Header
	}{
		{`{}`, classify.Header{}},
		{`{"X-B":"2","a":"1"}`, classify.Header{{Name: "a", Value: "1"}, {Name: "x-b", Value: "2"}}},
		{`{"B":"1","a":"x","b":"2","A":null}`, classify.Header{{Name: "a", Value: "x"}, {Name: "b", Value: "2"}}},
		{`{"z":"1","Z":"2","z":"3","y":""}`, classify.Header{{Name: "y", Value: ""}, {Name: "z", Value: "3"}}},
		{`{"\u0041":"v"}`, classify.Header{{Name: "a", Value: "v"}}},
	} {
		line := `{"v":1,"ts":"2026-03-01T12:00:00Z","source":"gateway","kind":"request","http.method":"POST","request_body":"","http.request_headers":` + c.headers + `}`
		ev, err := Decode([]byte(line), decodePos)
		if err != nil {
			t.Fatalf("%s: %v", c.headers, err)
		}
		if !reflect.DeepEqual(ev.RequestHeaders, c.want) {
			t.Errorf("%s: decoded %v, want %v", c.headers, ev.RequestHeaders, c.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	const ok = `"ts":"2026-03-01T12:00:00Z","source":"client"`
	tests := []struct {
		name, line, field, reason string
	}{
		{"empty", "  ", "", "not JSON: empty line"},
		{"not json", "not json", "", "not JSON"},
		{"trailing garbage", `{}x`, "", "not JSON"},
		{"array", `[1]`, "", "not a JSON object: got array"},
		{"missing ts", `{"kind":"request","source":"client","http.method":"POST","request_body":""}`, "ts", "required"},
		{"bad ts", `{"ts":"2026-03-01 12:00:00","kind":"request","source":"client"}`, "ts", "RFC 3339"},
		{"one-digit hour", `{"ts":"2026-03-01T1:00:00Z","kind":"request","source":"client"}`, "ts", "RFC 3339"},
		{"year 0", `{"ts":"0000-01-01T00:00:00+01:00","kind":"request","source":"client"}`, "ts", "out of range"},
		{"ts number", `{"ts":1700000000,"kind":"request","source":"client"}`, "ts", "want a string, got number"},
		{"missing kind", `{` + ok + `}`, "kind", "required"},
		{"unknown kind", `{` + ok + `,"kind":"Request"}`, "kind", `unknown kind "Request"`},
		{"missing source", `{"ts":"2026-03-01T12:00:00Z","kind":"request"}`, "source", "required"},
		{"unknown source", `{"ts":"2026-03-01T12:00:00Z","kind":"request","source":"proxy"}`, "source", `unknown source "proxy"`},
		{"v2", `{"v":2,` + ok + `,"kind":"request"}`, "v", "unsupported contract version 2"},
		{"v2 after bad field", `{"kind":7,"v":2}`, "v", "unsupported contract version 2"},
		{"v0", `{"v":0,` + ok + `,"kind":"request"}`, "v", "invalid contract version 0"},
		{"v string", `{"v":"1",` + ok + `,"kind":"request"}`, "v", "want an integer"},
		{"request no method", `{` + ok + `,"kind":"request","request_body":""}`, "http.method", `required for kind "request"`},
		{"request no body", `{` + ok + `,"kind":"request","http.method":"POST"}`, "request_body", `required for kind "request"`},
		{"exchange no body", `{` + ok + `,"kind":"exchange","http.method":"POST","http.status":200,"response_body":""}`, "request_body", `required for kind "exchange"`},
		{"response no status", `{` + ok + `,"kind":"response","response_body":""}`, "http.status", "unless transport_error"},
		{"response status 0", `{` + ok + `,"kind":"response","http.status":0,"response_body":""}`, "http.status", "unless transport_error"},
		{"response no body", `{` + ok + `,"kind":"response","http.status":200}`, "response_body", "unless transport_error"},
		{"status string", `{` + ok + `,"kind":"response","http.status":"200"}`, "http.status", `want an integer, got "\"200\""`},
		{"status float", `{` + ok + `,"kind":"response","http.status":200.5}`, "http.status", "want an integer"},
		{"status range", `{` + ok + `,"kind":"response","http.status":1200}`, "http.status", "out of range"},
		{"nested status string", `{` + ok + `,"kind":"response","http":{"status":"x"}}`, "http.status", "want an integer"},
		{"body object", `{` + ok + `,"kind":"request","http.method":"POST","request_body":{}}`, "request_body", "want a string, got object"},
		{"response body number", `{` + ok + `,"kind":"response","http.status":200,"response_body":1}`, "response_body", "want a string"},
		{"headers array", `{` + ok + `,"kind":"request","http.request_headers":[]}`, "http.request_headers", "want an object of strings"},
		{"header number", `{` + ok + `,"kind":"request","http.response_headers":{"X-N":1}}`, "http.response_headers", `value of "X-N": want a string, got number`},
		{"method number", `{` + ok + `,"kind":"request","http.method":1}`, "http.method", "want a string"},
		{"truncated string", `{` + ok + `,"kind":"request","body_truncated":"yes"}`, "body_truncated", "want a boolean"},
		{"stream complete", `{` + ok + `,"kind":"request","stream":{"complete":1}}`, "stream.complete", "want a boolean"},
		{"duration string", `{` + ok + `,"kind":"request","duration_ms":"5"}`, "duration_ms", "want a finite number"},
		{"duration nan", `{` + ok + `,"kind":"request","duration_ms":NaN}`, "duration_ms", "want a finite number"},
		{"duration negative", `{` + ok + `,"kind":"request","duration_ms":-3.5}`, "duration_ms", `want a finite number >= 0, got "-3.5"`},
		{"server invalid utf-8", `{` + ok + `,"kind":"request","server":"pay` + "\xff" + `ments"}`, "server", "invalid UTF-8 at byte 3"},
		{"session cut mid-character", `{` + ok + `,"kind":"request","session_id":"s-` + "\xe2\x82" + `"}`, "session_id", "invalid UTF-8 at byte 2"},
		{"server NUL escape", `{` + ok + `,"kind":"request","server":"a\u0000b"}`, "server", "NUL byte at byte 1"},
		{"observer invalid utf-8", `{` + ok + `,"kind":"request","observer":"` + "\xc0" + `"}`, "observer", "invalid UTF-8"},
		{"attempt negative", `{` + ok + `,"kind":"request","attempt":-1}`, "attempt", "out of range"},
		{"attrs array", `{` + ok + `,"kind":"request","attrs":[]}`, "attrs", "want an object"},
		{"attrs bad json", `{` + ok + `,"kind":"request","attrs":{"x":[1-2]}}`, "attrs", "not JSON"},
		{"unknown bad json", `{` + ok + `,"kind":"request","x":"a` + "\x01" + `"}`, "", "not JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.line), decodePos)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("want a *DecodeError, got %v", err)
			}
			if !strings.HasPrefix(err.Error(), "decode t.ndjson:7: ") {
				t.Errorf("error %q does not name the position", err)
			}
			if de.Field != tc.field || !strings.Contains(de.Reason, tc.reason) {
				t.Errorf("got field %q reason %q, want field %q reason containing %q", de.Field, de.Reason, tc.field, tc.reason)
			}
		})
	}
}

func TestDecodeDerivedEventID(t *testing.T) {
	line := []byte(`{"ts":"2026-03-01T12:00:00Z","kind":"request","source":"client","http.method":"POST","request_body":""}`)
	a, err := Decode(line, decodePos)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Decode(append(bytes.Clone(line), "\r\n"...), decodePos)
	c, _ := Decode(bytes.Replace(line, []byte(`""`), []byte(`"x"`), 1), decodePos)
	if !strings.HasPrefix(a.EventID, "h:") || len(a.EventID) != 34 {
		t.Fatalf("derived id %q: want h: and 32 hex digits", a.EventID)
	}
	if a.EventID != b.EventID {
		t.Errorf("replayed line got another id: %q vs %q", a.EventID, b.EventID)
	}
	if a.EventID == c.EventID {
		t.Errorf("different lines got the same id %q", a.EventID)
	}
}

// TestDecodeNoAliasing: events share no memory with the line or with the
// Decoder's buffers, so both may be reused.
func TestDecodeNoAliasing(t *testing.T) {
	lines := decodeTestdata(t, "valid.ndjson")
	var d Decoder
	first, err := d.Decode(lines[0], decodePos)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(first)
	for i := range lines[0] {
		lines[0][i] = 'x'
	}
	for _, l := range lines[1:] {
		if _, err := d.Decode(l, decodePos); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := json.Marshal(first); !bytes.Equal(got, want) {
		t.Fatalf("event changed after the line and the decoder were reused:\n%s\n%s", got, want)
	}
}

func TestDecodeConcurrent(t *testing.T) {
	lines := genEventLines(64)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i, l := range lines {
				ev, err := Decode(l, Position{Stream: fmt.Sprint(g), Offset: int64(i)})
				if err != nil {
					t.Error(err)
					return
				}
				checkEvent(t, ev)
			}
		})
	}
	wg.Wait()
}

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"valid.ndjson", "invalid.ndjson"} {
		for _, l := range decodeTestdata(f, name) {
			f.Add(l)
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := Decode(line, decodePos)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error is not a *DecodeError: %v", err)
			}
			return
		}
		checkEvent(t, ev)
		again, err := Decode(line, decodePos)
		if err != nil || again.EventID != ev.EventID {
			t.Fatalf("decode not deterministic: %v, %q vs %q", err, again.EventID, ev.EventID)
		}
	})
}

// genEventLines makes n contract lines like a gateway's: half exchange records,
// half split request/response records, with ~2 KiB JSON-RPC bodies.
func genEventLines(n int) [][]byte {
	text := strings.Repeat("The forecast for Zürich (tool get_forecast, see docs/api-v2) is \"sunny\" with a high of 21°C; bring sunglasses. Next: Saturday, 6 by 4 max.\n", 15)[:2000]
	lines := make([][]byte, 0, n)
	for i := range n {
		id := fmt.Sprintf("%d", i)
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call",
			"params": map[string]any{"name": "get_forecast", "arguments": map[string]any{"city": "Zürich", "notes": text}}})
		resp, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i,
			"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}})
		ev := map[string]any{
			"v": 1, "event_id": "ev-" + id, "ts": time.Date(2026, 3, 1, 12, 0, 0, i*1000, time.UTC).Format(time.RFC3339Nano),
			"source": "gateway", "observer": "gw-0", "exchange_id": "x-" + id, "server": "weather",
			"url": "https://mcp.example.com/mcp", "client_name": "claude-code", "client_version": "1.2.3",
			"session_id": fmt.Sprintf("s-%d", i%10), "duration_ms": 12.5,
		}
		reqH := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Mcp-Protocol-Version": "2025-06-18", "Mcp-Session-Id": ev["session_id"].(string)}
		respH := map[string]string{"Content-Type": "application/json", "Mcp-Session-Id": ev["session_id"].(string)}
		switch i % 4 {
		case 0, 1:
			ev["kind"] = "exchange"
			ev["http.method"], ev["http.status"] = "POST", 200
			ev["http.request_headers"], ev["http.response_headers"] = reqH, respH
			ev["request_body"], ev["response_body"] = string(req), string(resp)
		case 2:
			ev["kind"] = "request"
			ev["http.method"], ev["http.request_headers"], ev["request_body"] = "POST", reqH, string(req)
		case 3:
			ev["kind"] = "response"
			ev["http.status"], ev["http.response_headers"], ev["response_body"] = 200, respH, string(resp)
		}
		line, _ := json.Marshal(ev)
		lines = append(lines, line)
	}
	return lines
}

func benchLines(b *testing.B) ([][]byte, int64) {
	lines := genEventLines(256)
	var total int64
	for _, l := range lines {
		total += int64(len(l))
	}
	b.SetBytes(total / int64(len(lines)))
	b.ReportAllocs()
	return lines, total
}

func reportEventsPerSec(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkDecode(b *testing.B) {
	lines, _ := benchLines(b)
	var d Decoder
	i := 0
	for b.Loop() {
		if _, err := d.Decode(lines[i%len(lines)], decodePos); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportEventsPerSec(b)
}

// BenchmarkDecodePooled is the package-level Decode, drawing from the pool.
func BenchmarkDecodePooled(b *testing.B) {
	lines, _ := benchLines(b)
	i := 0
	for b.Loop() {
		if _, err := Decode(lines[i%len(lines)], decodePos); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportEventsPerSec(b)
}

// BenchmarkDecodeNaiveMap is the baseline BenchmarkDecode must beat:
// encoding/json into map[string]any, same lines, no validation at all.
func BenchmarkDecodeNaiveMap(b *testing.B) {
	lines, _ := benchLines(b)
	i := 0
	for b.Loop() {
		var m map[string]any
		if err := json.Unmarshal(lines[i%len(lines)], &m); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportEventsPerSec(b)
}
