// Command tap is a recording MCP reverse proxy: put it in front of any MCP
// server (Streamable HTTP; JSON and SSE responses pass through untouched
// and live) and it writes one contract-v1 exchange event per HTTP exchange
// to stdout, a file or Kafka, with secrets redacted and bodies capped.
//
//	tap --upstream http://127.0.0.1:3000 --listen 127.0.0.1:8787 --to kafka://127.0.0.1:9092/mcp-logs
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/flagenv"
	"github.com/mcplens/mcplens/internal/logging"
	"github.com/mcplens/mcplens/redact"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/tap"
)

type config struct {
	Listen        string
	MetricsListen string
	Upstream      string
	To            string
	LogLevel      string
	Tap           tap.Config
	Queue         tap.QueueConfig
	DrainTimeout  time.Duration
	Redact        redact.Config
}

func (c *config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:8787", "address the proxy listens on")
	fs.StringVar(&c.Upstream, "upstream", "", "URL of the MCP server to proxy (required), e.g. http://127.0.0.1:3000")
	fs.StringVar(&c.To, "to", "stdout", "where events go: stdout, file:PATH (appended) or kafka://HOST:PORT[,HOST:PORT]/TOPIC")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.MetricsListen, "metrics-listen", "", "address for /metrics and /healthz (mcplens_tap_* counters of delivered, spilled and dropped events); empty: off")
	c.Tap.RegisterFlags(fs)
	c.Queue.RegisterFlags(fs)
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", 10*time.Second, "on shutdown, how long queued events may take to reach the sink; the rest are spilled (--tap.spill-dir) or counted as dropped")
	fs.Func("redact-pattern", "extra regular expression whose matches in bodies are redacted (repeatable)", func(s string) error {
		c.Redact.Patterns = append(c.Redact.Patterns, s)
		return nil
	})
	fs.Func("redact-header", "extra header whose value is redacted (repeatable)", func(s string) error {
		c.Redact.Headers = append(c.Redact.Headers, strings.ToLower(s))
		return nil
	})
}

func (c *config) Validate() error {
	var errs []error
	if c.Upstream == "" {
		errs = append(errs, errors.New("--upstream is required"))
	} else if u, err := url.Parse(c.Upstream); err != nil || u.Scheme == "" || u.Host == "" {
		errs = append(errs, fmt.Errorf("--upstream %q: want an absolute http(s) URL", c.Upstream))
	}
	if c.Listen == "" {
		errs = append(errs, errors.New("--listen is required"))
	}
	if err := c.Tap.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Queue.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func main() {
	var cfg config
	fs := flag.NewFlagSet("tap", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: tap --upstream URL [--listen ADDR] [--to stdout|file:PATH|kafka://HOST:PORT/TOPIC]\n\n"+
			"A recording MCP reverse proxy: one contract-v1 exchange event per HTTP exchange.\n\n"+flagenv.Usage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := flagenv.Parse(fs, os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	logger := logging.New(os.Stderr, cfg.LogLevel, "json", "tap")
	logging.CaptureStdlib(logger)
	if err := cfg.Validate(); err != nil {
		logger.Error().Err(err).Msg("invalid configuration")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, logger); err != nil {
		logger.Error().Err(err).Msg("tap failed")
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config, logger zerolog.Logger) error {
	up, err := url.Parse(cfg.Upstream)
	if err != nil {
		return fmt.Errorf("parse upstream: %w", err)
	}
	sink, closeSink, err := openSink(cfg.To, cfg.Queue.AttemptTimeout)
	if err != nil {
		return err
	}
	defer func() {
		start := time.Now()
		err := closeSink()
		logger.Info().Err(err).Int64("took_ms", time.Since(start).Milliseconds()).Msg("closed event sink")
	}()
	reg := prometheus.NewRegistry()
	queue, err := tap.NewQueue(cfg.Queue, tap.QueueDeps{Sink: sink, Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	defer func() {
		start := time.Now()
		qctx, cancel := context.WithTimeout(context.Background(), cmp.Or(cfg.DrainTimeout, 10*time.Second))
		defer cancel()
		err := queue.Close(qctx)
		st := queue.Stats()
		logger.Info().Err(err).Int64("took_ms", time.Since(start).Milliseconds()).Int64("delivered", st.Delivered).Int64("spilled", st.Spilled).
			Int64("dropped", st.Dropped).Int64("rejected", st.Rejected).Msg("closed event queue")
	}()
	red, err := redact.New(cfg.Redact)
	if err != nil {
		return fmt.Errorf("build redactor: %w", err)
	}
	cfg.Tap.Redact = func(ev *schema.Event) { red.Apply(ev) }
	rec, err := tap.New(cfg.Tap, tap.Deps{Next: tap.NewProxy(up, logger), Writer: queue, Logger: logger})
	if err != nil {
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	srv := &http.Server{Handler: rec, ReadHeaderTimeout: 10 * time.Second, ErrorLog: logging.StdLogger(logger, zerolog.WarnLevel, "net/http")}
	errc := make(chan error, 2)
	if cfg.MetricsListen != "" {
		mln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.MetricsListen)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("listen %s: %w", cfg.MetricsListen, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: logging.StdLogger(logger, zerolog.WarnLevel, "net/http")}
		go func() { errc <- msrv.Serve(mln) }()
		defer func() { _ = msrv.Close() }()
		logger.Info().Str("addr", mln.Addr().String()).Msg("serving metrics")
	}
	logger.Info().Str("addr", ln.Addr().String()).Str("upstream", cfg.Upstream).Str("to", cfg.To).Msg("tap proxying")
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	start := time.Now()
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	logger.Info().Err(err).Int64("took_ms", time.Since(start).Milliseconds()).Msg("stopped proxy")
	return nil
}
