package metricstest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestSums(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("# HELP a x\n# TYPE a gauge\na{p=\"0\"} 2\na{p=\"1\"} 3.5\nb 0\nc_total 1e3\n"))
	}))
	defer srv.Close()
	got := Sums(strings.TrimPrefix(srv.URL, "http://"))
	if got["a"] != 5.5 || got["c_total"] != 1000 {
		t.Errorf("sums %v", got)
	}
	if v, ok := got["b"]; !ok || v != 0 {
		t.Errorf("b = %v, %v: an exported 0 must have a key", v, ok)
	}
	if _, ok := got["d"]; ok {
		t.Error("a family not exported has a key")
	}
}

func TestSumsOfNothingListening(t *testing.T) {
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if got := Sums(addr); got != nil {
		t.Errorf("a failed scrape gave %v", got)
	}
}
