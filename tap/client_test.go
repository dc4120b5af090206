package tap

import "testing"

func TestClientInfo(t *testing.T) {
	f := func(body, ua, wantName, wantVersion string) {
		t.Helper()
		name, version := clientInfo(body, ua)
		if name != wantName || version != wantVersion {
			t.Errorf("clientInfo(%q, %q) = %q %q, want %q %q", body, ua, name, version, wantName, wantVersion)
		}
	}
	const ua = "Go-http-client/1.1"
	f(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"claude","version":"2.1"}}}`, ua, "claude", "2.1")
	f(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/clientInfo":{"name":"cli","version":"9"}}}}`, ua, "cli", "9")
	// clientInfo outside initialize is not the client's.
	f(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"clientInfo":{"name":"nope"}}}`, ua, "Go-http-client", "1.1")
	f(`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"b","version":"1"}}}]`, ua, "b", "1")
	f(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"tr`, ua, "Go-http-client", "1.1")
	f(`{"method":"initialize","params":"clientInfo"}`, "", "", "")
	f(`{}`, "python-httpx/0.28.1", "python-httpx", "0.28.1")
	f(``, "curl", "curl", "")
}

func FuzzClientInfo(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"a","version":"1"}}}`, "ua/1")
	f.Add(`[{"method":"x","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c"}}}}]`, "")
	f.Add(`{"params":{"_meta":{"io.modelcontextprotocol/clientInfo":null}},"clientInfo":1}`, " / ")
	f.Fuzz(func(t *testing.T, body, ua string) {
		_, _ = clientInfo(body, ua) // must not panic
	})
}

func TestTrimPartialRune(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := string(trimPartialRune([]byte(in))); got != want {
			t.Errorf("trimPartialRune(%q) = %q, want %q", in, got, want)
		}
	}
	f("abc", "abc")
	f("ab\xc3", "ab")                         // first byte of é
	f("ab\xe2\x82", "ab")                     // two of €'s three bytes
	f("ab€", "ab€")                           // complete
	f("\x82\x82\x82\x82", "\x82\x82\x82\x82") // not UTF-8 at all: left alone
}
