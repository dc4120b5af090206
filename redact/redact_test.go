package redact

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/mcplens/mcplens/schema"
)

func newTestRedactor(t testing.TB, cfg Config) *Redactor {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRedactBodies(t *testing.T) {
	r := newTestRedactor(t, Config{Keys: []string{"session_key", "q", "ak"}})
	tests := []struct {
		name, in, want string
	}{
		{"clean", `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`},
		{"access_token", `{"access_token":"abc123","expires_in":3600}`, `{"access_token":"[REDACTED]","expires_in":3600}`},
		{"spaces and escaped quote", `{"password" : "p@ss\"wo\\rd", "user":"bob"}`, `{"password" : "[REDACTED]", "user":"bob"}`},
		{"trailing escaped backslash", `{"token":"ab\\"}`, `{"token":"[REDACTED]"}`},
		{"camelCase keys", `{"apiKey":"k1","clientSecret":"k2","Refresh-Token":"k3"}`,
			`{"apiKey":"[REDACTED]","clientSecret":"[REDACTED]","Refresh-Token":"[REDACTED]"}`},
		{"configured key", `{"session_key":"abc"}`, `{"session_key":"[REDACTED]"}`},
		// A key's last two bytes rule it in or out before the rest is
		// read: they are its normalized bytes ('_' and '-' dropped,
		// lower case), and a one-byte key has none.
		{"key ends after separators and case", `{"session_K_e-Y_":"abc","TOKEN-":"t","p_asswor_d":"p"}`,
			`{"session_K_e-Y_":"[REDACTED]","TOKEN-":"[REDACTED]","p_asswor_d":"[REDACTED]"}`},
		{"one- and two-byte keys", `{"q":"abc","_Q-":"d","qq":"e","a_K":"f"}`, `{"q":"[REDACTED]","_Q-":"[REDACTED]","qq":"e","a_K":"[REDACTED]"}`},
		{"not a string", `{"token":123,"secret":null,"password":{"x":"y"}}`, `{"token":123,"secret":null,"password":{"x":"y"}}`},
		{"look-alike keys", `{"max_tokens":100,"progressToken":"p-1","tokens":"a","secrets_ref":"b"}`,
			`{"max_tokens":100,"progressToken":"p-1","tokens":"a","secrets_ref":"b"}`},
		{"JSON in a JSON string", `{"arguments":{"config":"{\"api_key\":\"k-123\",\"n\":1}"}}`,
			`{"arguments":{"config":"{\"api_key\":\"[REDACTED]\",\"n\":1}"}}`},
		{"escaped quote in escaped value", `{"c":"{\"secret\":\"a\\\"b\",\"d\":\"e\"}"}`,
			`{"c":"{\"secret\":\"[REDACTED]\",\"d\":\"e\"}"}`},
		{"two levels deep", `{"a":"{\"b\":\"{\\\"password\\\":\\\"hunter2\\\"}\"}"}`,
			`{"a":"{\"b\":\"{\\\"password\\\":\\\"[REDACTED]\\\"}\"}"}`},
		{"escaped key, unescaped-looking value", `{"a":"x\"token\":\"y","b":"\"z"}`, `{"a":"x\"token\":\"y","b":"\"z"}`},
		{"bearer", `{"text":"curl -H 'Authorization: Bearer abcdefghijklmnop1234.x'"}`,
			`{"text":"curl -H 'Authorization: Bearer [REDACTED]'"}`},
		{"bearer challenge kept", `Bearer realm="mcp", error="invalid_token"`, `Bearer realm="mcp", error="invalid_token"`},
		{"jwt", `{"t":"x eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl y"}`, `{"t":"x [REDACTED] y"}`},
		{"anthropic", `key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx-yz_0123 end`, `key [REDACTED] end`},
		{"openai", `"sk-proj-abcdefghijklmnopqrstuvwx"`, `"[REDACTED]"`},
		{"github", `ghp_abcdefghijklmnopqrstuvwxyz0123456789 and github_pat_11ABCDEFG0123456789_abcdefghij`, `[REDACTED] and [REDACTED]`},
		{"slack", `xoxb-123456789012-abcdefABCDEF`, `[REDACTED]`},
		{"slack user token", `a-b xoxp-123456789012-abc`, `a-b [REDACTED]`},
		{"slack refresh token", `xoxr-1234567890`, `[REDACTED]`},
		{"slack app token", `x xoxa-1234567890`, `x [REDACTED]`},
		{"aws", `id=AKIAIOSFODNN7EXAMPLE;`, `id=[REDACTED];`},
		{"google", `AIzaSyA-abcdefghijklmnopqrstuvwxyz01234`, `[REDACTED]`},
		{"aws session", `A AB ASIAIOSFODNN7EXAMPLE`, `A AB [REDACTED]`},
		{"aws and google after other A's", `AAA AIzaSyA-abcdefghijklmnopqrstuvwxyz01234 AKIAIOSFODNN7EXAMPLE`, `AAA [REDACTED] [REDACTED]`},
		{"token in escaped JSON text", `{"text":"{\"k\":\"sk-abcdefghijklmnopqrstuvwxyz\"}"}`, `{"text":"{\"k\":\"[REDACTED]\"}"}`},
		{"lower-case bearer in body text", `{"text":"authorization: bearer abcdefghijklmnop1234"}`,
			`{"text":"authorization: bearer [REDACTED]"}`},
		{"mixed-case bearer", `BeArEr abcdefghijklmnop1234`, `BeArEr [REDACTED]`},
		{"authorization key at depth", `{"headers":{"Authorization":"Basic dXNlcjpodW50ZXIy"}}`,
			`{"headers":{"Authorization":"[REDACTED]"}}`},
		{"header keys in escaped JSON", `{"a":"{\"Proxy-Authorization\":\"x\",\"cookie\":\"sid=1\",\"X-Api-Key\":\"k\"}"}`,
			`{"a":"{\"Proxy-Authorization\":\"[REDACTED]\",\"cookie\":\"[REDACTED]\",\"X-Api-Key\":\"[REDACTED]\"}"}`},
		{"basic credentials in text", `curl -H "authorization: basic dXNlcjpodW50ZXIy" x`, `curl -H "authorization: basic [REDACTED]" x`},
		{"BASIC without padding", `BASIC YWxhZGRpbjpvcGVuc2VzYW1l`, `BASIC [REDACTED]`},
		{"basic as a word", `basic information and Basic auth`, `basic information and Basic auth`},
		{"no word boundary", `task-abcdefghijklmnopqrstuvwxyz0123`, `task-abcdefghijklmnopqrstuvwxyz0123`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := r.Text(tc.in)
			if got != tc.want {
				t.Fatalf("\ngot  %s\nwant %s", got, tc.want)
			}
			if json.Valid([]byte(tc.in)) && !json.Valid([]byte(got)) {
				t.Fatalf("redaction broke valid JSON: %s", got)
			}
		})
	}
}

func TestRedactApply(t *testing.T) {
	r := newTestRedactor(t, Config{Headers: []string{"X-Internal-Auth"}, MaxBodyBytes: 64})
	ev := schema.Event{
		RequestHeaders: classify.HeaderOf(map[string]string{
			"authorization": "Bearer abc", "cookie": "a=b", "x-internal-auth": "s3cret",
			"content-type": "application/json", "x-forwarded-key": "sk-abcdefghijklmnopqrstuvwxyz", "api-key": "",
			"mcp-session-id": "eyJhbGciOiJIUzI1NiJ9.eyJzaWQiOiIxIn0.c2ln",
		}),
		ResponseHeaders: classify.HeaderOf(map[string]string{"set-cookie": "sid=1", "www-authenticate": `Bearer realm="mcp", scope="files:read"`}),
		RequestBody:     `{"password":"hunter2"}`,
		ResponseBody:    strings.Repeat("é", 40), // 80 bytes
	}
	r.Apply(&ev)
	wantReq := map[string]string{
		"authorization": Redacted, "cookie": Redacted, "x-internal-auth": Redacted,
		"content-type": "application/json", "x-forwarded-key": Redacted, "api-key": "",
		"mcp-session-id": "eyJhbGciOiJIUzI1NiJ9.eyJzaWQiOiIxIn0.c2ln", // read by correlation: kept
	}
	for k, v := range wantReq {
		if ev.RequestHeaders.Get(k) != v {
			t.Errorf("request header %s = %q, want %q", k, ev.RequestHeaders.Get(k), v)
		}
	}
	if ev.ResponseHeaders.Get("set-cookie") != Redacted || ev.ResponseHeaders.Get("www-authenticate") != `Bearer realm="mcp", scope="files:read"` {
		t.Errorf("response headers %v", ev.ResponseHeaders)
	}
	if ev.RequestBody != `{"password":"[REDACTED]"}` {
		t.Errorf("request body %s", ev.RequestBody)
	}
	if len(ev.ResponseBody) != 64 || !utf8.ValidString(ev.ResponseBody) || !ev.BodyTruncated {
		t.Errorf("response body not capped at a rune boundary: %d bytes, truncated=%v", len(ev.ResponseBody), ev.BodyTruncated)
	}
	// A protocol header named in the configuration is redacted whole:
	// the operator's word over correlation's.
	r = newTestRedactor(t, Config{Headers: []string{"Mcp-Session-Id"}})
	ev = schema.Event{RequestHeaders: classify.HeaderOf(map[string]string{"mcp-session-id": "s-1", "accept": "sk-abcdefghijklmnopqrstuvwxyz"})}
	r.Apply(&ev)
	if got := ev.RequestHeaders.Get("mcp-session-id"); got != Redacted {
		t.Errorf("configured protocol header = %q, want %q", got, Redacted)
	}
	if got := ev.RequestHeaders.Get("accept"); got != "sk-abcdefghijklmnopqrstuvwxyz" {
		t.Errorf("protocol header accept = %q, want it kept unscanned", got)
	}
}

func TestRedactConfig(t *testing.T) {
	if _, err := New(Config{Patterns: []string{"("}}); err == nil {
		t.Error("invalid pattern accepted")
	}
	r := newTestRedactor(t, Config{NoDefaults: true, Patterns: []string{`ssn-\d{3}`}, Headers: []string{"x-a"}, MaxBodyBytes: -1})
	if got := r.Text(`{"password":"x"} ssn-123 sk-abcdefghijklmnopqrstuvwxyz`); got != `{"password":"x"} [REDACTED] sk-abcdefghijklmnopqrstuvwxyz` {
		t.Errorf("NoDefaults: %s", got)
	}
	ev := schema.Event{RequestHeaders: classify.HeaderOf(map[string]string{"authorization": "a", "x-a": "b"}), ResponseBody: strings.Repeat("x", 1<<20)}
	r.Apply(&ev)
	if ev.RequestHeaders.Get("authorization") != "a" || ev.RequestHeaders.Get("x-a") != Redacted || ev.BodyTruncated {
		t.Errorf("NoDefaults apply: %v truncated=%v", ev.RequestHeaders, ev.BodyTruncated)
	}
	if d := newTestRedactor(t, Config{}); d.maxBody != DefaultMaxBodyBytes {
		t.Errorf("default cap %d", d.maxBody)
	}
}

func TestTruncateUTF8(t *testing.T) {
	f := func(s string, n int, want string) {
		t.Helper()
		if got := TruncateUTF8(s, n); got != want {
			t.Errorf("TruncateUTF8(%q, %d) = %q, want %q", s, n, got, want)
		}
	}
	f("abc", 5, "abc")
	f("abc", 2, "ab")
	f("aé", 2, "a")
	f("a😀", 4, "a")
	f("a😀b", 5, "a😀")
	f("\xff\xff\xff\xff\xff", 3, "\xff\xff\xff")
}

// FuzzRedact: the redactor scans untrusted text; it must not panic, must
// keep valid JSON valid, and must find nothing in its own output.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{
		`{"token":"a"}`, `{"a":"{\"api_key\":\"k\"}"}`, `{"a":"{\"b\":\"{\\\"password\\\":\\\"x\\\"}\"}"}`,
		`{"secret" : "a\\\"b"}`, `Bearer abcdefghijklmnopqrstuvwxyz`, `{"x":"eyJa.eyJb.c"}`,
	} {
		f.Add(s)
	}
	r := newTestRedactor(f, Config{})
	f.Fuzz(func(t *testing.T, s string) {
		got := r.Text(s)
		if json.Valid([]byte(s)) && !json.Valid([]byte(got)) {
			t.Fatalf("redaction broke valid JSON:\n%q\n%q", s, got)
		}
		if again := r.Text(got); again != got {
			t.Fatalf("redaction not idempotent:\n%q\n%q", got, again)
		}
	})
}

func benchRedact(b *testing.B, body string) {
	r := newTestRedactor(b, Config{})
	ev := schema.Event{RequestHeaders: classify.HeaderOf(map[string]string{"content-type": "application/json", "accept": "application/json"})}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		ev.RequestBody = body
		r.Apply(&ev)
	}
}

// cleanBody is a ~2 KiB tools/call request without secrets.
func cleanBody(b *testing.B) string {
	text := strings.Repeat("The forecast for Zürich (tool get_forecast, see docs/api-v2) is \"sunny\" with a high of 21°C; bring sunglasses. Next: Saturday, 6 by 4 max.\n", 15)[:2000]
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "get_forecast", "arguments": map[string]any{"city": "Zürich", "notes": text}}})
	if err != nil {
		b.Fatal(err)
	}
	return string(req)
}

func BenchmarkRedactClean(b *testing.B) {
	body := cleanBody(b)
	if r := newTestRedactor(b, Config{}); r.Text(body) != body {
		b.Fatal("clean body has a secret")
	}
	benchRedact(b, body)
}

func BenchmarkRedactSecret(b *testing.B) {
	body := strings.Replace(cleanBody(b), `"city"`, `"api_key":"sk-abcdefghijklmnopqrstuvwxyz","city"`, 1)
	benchRedact(b, body)
}

func TestRedactURL(t *testing.T) {
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	f := func(in, want string) {
		t.Helper()
		if got := r.URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
	f("", "")
	f("https://mcp.example.com/mcp", "https://mcp.example.com/mcp")
	f("https://mcp.example.com/mcp?api_key=abc123&x=1", "https://mcp.example.com/mcp?api_key=[REDACTED]&x=1")
	f("https://h/mcp?x=1&access-token=t0k", "https://h/mcp?x=1&access-token=[REDACTED]")
	f("https://user:hunter2@h/mcp", "https://user:[REDACTED]@h/mcp")
	f("https://h/mcp?sessionId=42", "https://h/mcp?sessionId=42")
}

// loadgenBodies returns the request and response bodies of calls that
// internal/loadgen generates (the steady-state benchmark's traffic: JSON
// and SSE bodies of 0.2-16 KiB, some with secrets).
func loadgenBodies(b *testing.B, calls int) []string {
	cfg := loadgen.DefaultConfig()
	cfg.Calls, cfg.Seed, cfg.SecretShare = calls, 7, 0.02
	g, err := loadgen.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var bodies []string
	for _, line := range g.Lines() {
		var ev struct {
			Req  string `json:"request_body"`
			Resp string `json:"response_body"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		for _, s := range []string{ev.Req, ev.Resp} {
			if s != "" {
				bodies = append(bodies, s)
			}
		}
	}
	return bodies
}

// BenchmarkRedactLoadgen redacts production-shaped bodies (ns/op is per
// body).
func BenchmarkRedactLoadgen(b *testing.B) {
	bodies := loadgenBodies(b, 3000)
	r := newTestRedactor(b, Config{})
	n := 0
	for _, s := range bodies {
		n += len(s)
	}
	b.SetBytes(int64(n / len(bodies)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = r.Text(bodies[i%len(bodies)])
		i++
	}
}
