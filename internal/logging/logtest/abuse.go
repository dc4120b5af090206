package logtest

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// AbuseHTTP sends an HTTP server at addr what makes servers complain:
// bytes that are no HTTP, a request cut inside its headers, a header over
// any limit, a TLS handshake to a plain port and a POST where only GET is
// served. A test then checks what the server logged about it.
func AbuseHTTP(t testing.TB, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := &net.Dialer{Timeout: 2 * time.Second}
	send := func(b []byte) {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			t.Errorf("dial %s: %v", addr, err)
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		_, _ = c.Write(b)
		_, _ = c.Read(make([]byte, 512))
	}
	send([]byte("\x00\xff\xfeGARBAGE \x01\x02\r\n\r\n"))
	send([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Cut: "))
	send([]byte("GET /readyz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n"))
	td := &tls.Dialer{NetDialer: d, Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // a handshake to a plain port, expected to fail
	if c, err := td.DialContext(ctx, "tcp", addr); err == nil {
		_ = c.Close()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/readyz", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_ = resp.Body.Close()
	}
}

// RefusedAddr returns a loopback address nothing listens on: a client
// dialing it (a Kafka reader, a ClickHouse driver) is refused.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}
