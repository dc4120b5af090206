package apitest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// CheckServerLimits holds a live API server at addr (host:port) to the
// limits of api.NewServer, behaviourally: a request whose headers exceed
// maxHeaderBytes (api.MaxHeaderBytes) gets 431, and a client that never
// finishes its headers is disconnected after readHeaderTimeout
// (api.ReadHeaderTimeout); a server without it would hold the connection
// until the test's own deadline and fail it.
func CheckServerLimits(t *testing.T, addr string, maxHeaderBytes int, readHeaderTimeout time.Duration) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Padding", strings.Repeat("p", 2*maxHeaderBytes))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("oversized headers: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized headers: status %d, want 431", resp.StatusCode)
	}

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	deadline := readHeaderTimeout + 10*time.Second
	_ = conn.SetReadDeadline(start.Add(deadline))
	_, err = bufio.NewReader(conn).ReadString('\n')
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Errorf("a client that never finished its headers was still connected after %s: no ReadHeaderTimeout", deadline)
	}
}
