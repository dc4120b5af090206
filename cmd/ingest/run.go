package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/internal/logging"
	"github.com/mcplens/mcplens/internal/secret"
	"github.com/mcplens/mcplens/internal/serve"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/kafkasource"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store"
)

// run wires source, engine, sink and the HTTP endpoints, and stops them in
// reverse order when ctx ends or the input is exhausted.
func run(ctx context.Context, cfg config, logger zerolog.Logger) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	sink, err := openSink(ctx, cfg, logger, reg)
	if err != nil {
		return err
	}
	defer func() { _ = logging.Step(logger, "sink", sink.Close) }()
	if cfg.FaultFile != "" {
		logger.Warn().Str("file", cfg.FaultFile).Msg("fault injection on: sink writes fail while this file exists")
		sink = faultySink{Sink: sink, file: cfg.FaultFile}
	}
	src, err := openSource(cfg.From, logger, reg)
	if err != nil {
		return err
	}
	defer func() { _ = logging.Step(logger, "source", src.Close) }()
	engine, err := pipeline.New(cfg.Pipeline, pipeline.Deps{Source: src, Sink: sink, Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	if s, ok := sink.(seeder); ok {
		recs, anns, err := s.Seed(ctx, cfg.Pipeline.Chains.Window)
		if err != nil {
			return fmt.Errorf("seed retry chains from the store: %w", err)
		}
		engine.Seed(recs, anns)
		logger.Info().Int("exchanges", len(recs)).Int("annotations", len(anns)).Msg("retry chains seeded from the store")
	}

	var ready atomic.Bool
	g, gctx := errgroup.WithContext(ctx)
	// The HTTP servers stop when the engine has stopped (stopServers), not
	// when ctx ends: /metrics and the API stay up through the final flush.
	srvCtx, stopServers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServers()
	if cfg.Listen != "" {
		ln, err := serve.Listen(ctx, cfg.Listen)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: opsHandler(reg, &ready), ReadHeaderTimeout: api.ReadHeaderTimeout}
		logger.Info().Str("addr", ln.Addr().String()).Msg("serving /metrics, /healthz, /readyz")
		g.Go(func() error { return serve.Run(srvCtx, srv, ln, 5*time.Second, logger, "metrics") })
	}
	if cfg.APIListen != "" {
		if err := serveAPI(gctx, srvCtx, g, cfg, sink, logger, reg); err != nil {
			return err
		}
	}
	g.Go(func() error {
		defer stopServers()
		ready.Store(true)
		logger.Info().Stringer("from", cfg.From).Stringer("to", cfg.To).Msg("ingest started")
		err := engine.Run(gctx)
		ready.Store(false)
		return err
	})
	return g.Wait()
}

// serveAPI serves the REST API from the sink's store in this process, with
// cmd/api's server limits (api.NewServer), until srvCtx ends.
func serveAPI(ctx, srvCtx context.Context, g *errgroup.Group, cfg config, sink pipeline.Sink, logger zerolog.Logger, reg *prometheus.Registry) error {
	if f, ok := sink.(faultySink); ok {
		sink = f.Sink
	}
	engine, ok := sink.(queries.Engine)
	if !ok {
		return fmt.Errorf("--api-listen needs a store sink (duckdb: or clickhouse://), not %s", cfg.To)
	}
	tokens, err := api.LoadTokens(cfg.TokensFile, os.Getenv("MCPLENS_TOKENS"))
	if err != nil {
		return err
	}
	a, err := api.New(cfg.API, api.Deps{Store: queries.On(engine), Tokens: tokens, Logger: logger.With().Str("component", "api").Logger(), Registerer: reg, Gatherer: reg})
	if err != nil {
		return err
	}
	ln, err := serve.Listen(ctx, cfg.APIListen)
	if err != nil {
		return err
	}
	logger.Info().Str("addr", ln.Addr().String()).Msg("serving the REST API from the same store")
	g.Go(func() error { return serve.Run(srvCtx, api.NewServer(cfg.API, a), ln, 10*time.Second, logger, "api") })
	return nil
}

// faultySink fails writes while a file exists: a way for end-to-end tests
// to take the store away from a running ingester.
type faultySink struct {
	pipeline.Sink
	file string
}

func (f faultySink) Write(ctx context.Context, b *schema.Batch) error {
	if _, err := os.Stat(f.file); err == nil {
		return errors.New("store unavailable (fault injected)")
	}
	return f.Sink.Write(ctx, b)
}

// Seed passes chain seeding through to the wrapped store.
func (f faultySink) Seed(ctx context.Context, window time.Duration) ([]schema.Exchange, []schema.ToolAnnotation, error) {
	if s, ok := f.Sink.(seeder); ok {
		return s.Seed(ctx, window)
	}
	return nil, nil, nil
}

func opsHandler(reg *prometheus.Registry, ready *atomic.Bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "not ready\n", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	return mux
}

func openSource(from secret.URL, logger zerolog.Logger, reg prometheus.Registerer) (pipeline.Source, error) {
	switch u := from.Reveal(); {
	case strings.HasPrefix(u, "file:"):
		path, err := pipeline.ParseFileURL(u)
		if err != nil {
			return nil, err
		}
		return pipeline.NewFileSource(path, pipeline.FileSourceConfig{})
	case strings.HasPrefix(u, "kafka://"):
		kc, err := kafkasource.ParseURL(u)
		if err != nil {
			return nil, err
		}
		return kafkasource.New(kc, logger, reg)
	}
	return nil, fmt.Errorf("--from %s: want file:PATH or kafka://HOST:PORT/TOPIC?group=G", from)
}

// seeder is a store that can hand back the last chain window of exchanges
// and the known tool annotations, so a restarted ingester links retries
// whose earlier attempt it stored before the restart.
type seeder interface {
	Seed(ctx context.Context, window time.Duration) ([]schema.Exchange, []schema.ToolAnnotation, error)
}

func openSink(ctx context.Context, cfg config, logger zerolog.Logger, reg prometheus.Registerer) (pipeline.Sink, error) {
	switch to := cfg.To.Reveal(); {
	case store.Is(to):
		return store.Open(ctx, cfg.To, store.Options{
			Migrate: cfg.Migrate, Schema: cfg.Schema, ClickHouse: cfg.CH,
			Logger: logger, Registerer: reg,
		})
	case to == "stdout":
		return pipeline.NewStdoutSink(os.Stdout, os.Stderr), nil
	case strings.HasPrefix(to, "file:"):
		path, err := pipeline.ParseFileSinkURL(to)
		if err != nil {
			return nil, err
		}
		logger.Info().Str("path", path).Msg("writing exchange records to file")
		return pipeline.OpenFileSink(path)
	}
	return nil, fmt.Errorf("--to %s: want stdout, file:PATH, duckdb:PATH or clickhouse://HOST:PORT/DB", cfg.To)
}
