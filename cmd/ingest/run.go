package main

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/kafkasource"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore"
	"github.com/mcplens/mcplens/store/duckstore"
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
	defer closeStep(logger, "sink", sink.Close)
	if cfg.FaultFile != "" {
		logger.Warn().Str("file", cfg.FaultFile).Msg("fault injection on: sink writes fail while this file exists")
		sink = faultySink{Sink: sink, file: cfg.FaultFile}
	}
	src, err := openSource(cfg.From, logger, reg)
	if err != nil {
		return err
	}
	defer closeStep(logger, "source", src.Close)
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
	var srv *http.Server
	if cfg.Listen != "" {
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Listen)
		if err != nil {
			return fmt.Errorf("listen %s: %w", cfg.Listen, err)
		}
		srv = &http.Server{Handler: opsHandler(reg, &ready), ReadHeaderTimeout: 5 * time.Second}
		logger.Info().Str("addr", ln.Addr().String()).Msg("serving /metrics, /healthz, /readyz")
		g.Go(func() error {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("serve metrics: %w", err)
			}
			return nil
		})
	}
	var apiSrv *http.Server
	if cfg.APIListen != "" {
		apiSrv, err = serveAPI(gctx, g, cfg, sink, logger, reg)
		if err != nil {
			return err
		}
	}
	g.Go(func() error {
		ready.Store(true)
		logger.Info().Str("from", cfg.From).Str("to", cfg.To).Msg("ingest started")
		err := engine.Run(gctx)
		ready.Store(false)
		if apiSrv != nil {
			start := time.Now()
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = apiSrv.Shutdown(sctx)
			cancel()
			logger.Info().Dur("took", time.Since(start)).Msg("stopped api server")
		}
		if srv != nil {
			start := time.Now()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
			logger.Info().Dur("took", time.Since(start)).Msg("stopped http server")
		}
		return err
	})
	return g.Wait()
}

// serveAPI serves the REST API from the sink's store in this process.
func serveAPI(ctx context.Context, g *errgroup.Group, cfg config, sink pipeline.Sink, logger zerolog.Logger, reg *prometheus.Registry) (*http.Server, error) {
	if f, ok := sink.(faultySink); ok {
		sink = f.Sink
	}
	engine, ok := sink.(queries.Engine)
	if !ok {
		return nil, fmt.Errorf("--api-listen needs a store sink (duckdb: or clickhouse://), not %s", cfg.To)
	}
	tokens, err := api.LoadTokens(cfg.TokensFile, os.Getenv("MCPLENS_TOKENS"))
	if err != nil {
		return nil, err
	}
	a, err := api.New(cfg.API, api.Deps{Store: queries.On(engine), Tokens: tokens, Logger: logger.With().Str("component", "api").Logger(), Registerer: reg, Gatherer: reg})
	if err != nil {
		return nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.APIListen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.APIListen, err)
	}
	srv := &http.Server{Handler: a, ReadHeaderTimeout: 5 * time.Second}
	logger.Info().Str("addr", ln.Addr().String()).Msg("serving the REST API from the same store")
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve api: %w", err)
		}
		return nil
	})
	return srv, nil
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

func closeStep(logger zerolog.Logger, what string, close func() error) {
	start := time.Now()
	err := close()
	logger.Info().Err(err).Dur("took", time.Since(start)).Msgf("closed %s", what)
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

func openSource(from string, logger zerolog.Logger, reg prometheus.Registerer) (pipeline.Source, error) {
	switch {
	case strings.HasPrefix(from, "file:"):
		path, err := pipeline.ParseFileURL(from)
		if err != nil {
			return nil, err
		}
		return pipeline.NewFileSource(path, pipeline.FileSourceConfig{})
	case strings.HasPrefix(from, "kafka://"):
		kc, err := kafkasource.ParseURL(from)
		if err != nil {
			return nil, err
		}
		return kafkasource.New(kc, logger, reg)
	}
	return nil, fmt.Errorf("--from %q: want file:PATH or kafka://HOST:PORT/TOPIC?group=G", from)
}

// seeder is a store that can hand back the last chain window of exchanges
// and the known tool annotations, so a restarted ingester links retries
// whose earlier attempt it stored before the restart.
type seeder interface {
	Seed(ctx context.Context, window time.Duration) ([]schema.Exchange, []schema.ToolAnnotation, error)
}

func openSink(ctx context.Context, cfg config, logger zerolog.Logger, reg prometheus.Registerer) (pipeline.Sink, error) {
	switch to := cfg.To; {
	case strings.HasPrefix(to, "clickhouse://"):
		ch := cfg.CH
		if ch.User == "" {
			ch.User = os.Getenv("CLICKHOUSE_USER")
		}
		if ch.Password == "" {
			ch.Password = os.Getenv("CLICKHOUSE_PASSWORD")
		}
		s, err := chstore.Open(ctx, to, ch, logger, reg)
		if err != nil {
			return nil, err
		}
		if cfg.Migrate {
			if err := s.Migrate(ctx, cfg.Schema); err != nil {
				s.Close()
				return nil, fmt.Errorf("migrate: %w", err)
			}
		}
		return s, nil
	case strings.HasPrefix(to, "duckdb:"):
		path, err := duckstore.ParseURL(to)
		if err != nil {
			return nil, err
		}
		logger.Info().Str("path", path).Msg("writing to DuckDB (migrations applied on open)")
		return duckstore.Open(ctx, path, duckstore.Options{Logger: logger})
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
	return nil, fmt.Errorf("--to %q: want stdout, file:PATH, duckdb:PATH or clickhouse://HOST:PORT/DB", cfg.To)
}
