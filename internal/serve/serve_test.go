package serve

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/logging"
	"github.com/mcplens/mcplens/internal/logging/logtest"
)

func TestRunServesUntilCancelled(t *testing.T) {
	ln, err := Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	arrived, release := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		close(arrived)
		<-release // an in-flight request when shutdown starts
		_, _ = io.WriteString(w, "done")
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- Run(ctx, &http.Server{Handler: mux, ReadHeaderTimeout: time.Second}, ln, 5*time.Second, zerolog.Nop(), "test")
	}()
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- string(b)
	}()
	<-arrived
	cancel()
	close(release)
	if s := <-got; s != "done" {
		t.Errorf("in-flight request got %q, want it finished", s)
	}
	if err := <-errc; err != nil {
		t.Errorf("Run after a clean shutdown: %v", err)
	}
}

func TestRunReportsServeError(t *testing.T) {
	ln, err := Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // Serve fails at once
	if err := Run(context.Background(), &http.Server{ReadHeaderTimeout: time.Second}, ln, time.Second, zerolog.Nop(), "x"); err == nil {
		t.Error("a failed Serve must be reported")
	}
}

// TestRunLogsServerErrorsAsJSON: what net/http itself reports about a
// handler (here a second WriteHeader) reaches the logger as a zerolog
// entry, not a plain log line on stderr.
func TestRunLogsServerErrorsAsJSON(t *testing.T) {
	ln, err := Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs logtest.Buffer
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.WriteHeader(http.StatusInternalServerError) // superfluous: net/http logs it
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- Run(ctx, &http.Server{Handler: mux, ReadHeaderTimeout: time.Second}, ln, time.Second, logging.New(&logs, "info", "json", "test"), "test")
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	entries := logtest.CheckLines(t, "serve.Run", []byte(logs.String()), "test")
	e := logtest.Find(entries, "superfluous response.WriteHeader")
	if e == nil || e["level"] != "warn" || e["logger"] != "net/http" {
		t.Errorf("net/http's complaint as a warning from net/http: %v in %s", e, logs.String())
	}
}
