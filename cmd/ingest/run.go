package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime/pprof"
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
	"github.com/mcplens/mcplens/internal/memlimit"
	"github.com/mcplens/mcplens/internal/progress"
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
	if n, _ := memlimit.Parse(cfg.MemoryLimit); n > 0 {
		logger.Info().Int64("bytes", memlimit.Apply(n)).Msg("memory limit set")
	}
	if pct, set, _ := memlimit.ParseGCPercent(cfg.GCPercent, os.Getenv("GOGC")); set {
		logger.Info().Int("percent", memlimit.ApplyGCPercent(pct, set)).Msg("GOGC set")
	}
	if cfg.CPUProfile != "" {
		stop, err := startCPUProfile(cfg.CPUProfile)
		if err != nil {
			return err
		}
		defer func() { _ = logging.Step(logger, "cpu profile", stop) }()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	sink, err := openSink(ctx, cfg, logger, reg)
	if err != nil {
		return err
	}
	defer func() { _ = logging.Step(logger, "sink", sink.Close) }()
	if cfg.FaultFile != "" {
		logger.Warn().Str("file", cfg.FaultFile).Msg("fault injection on: sink writes fail while this file exists")
		f := faultySink{Sink: sink, file: cfg.FaultFile}
		sink = f
		if st, ok := f.Sink.(pipeline.StateSink); ok {
			sink = faultyStateSink{faultySink: f, state: st}
		}
	}
	src, err := openSource(cfg.From, logger, reg)
	if err != nil {
		return err
	}
	defer func() { _ = logging.Step(logger, "source", src.Close) }()
	format, err := formatOf(cfg.Format)
	if err != nil {
		return err
	}
	engine, err := pipeline.New(cfg.Pipeline, pipeline.Deps{Source: src, Sink: sink, Logger: logger, Registerer: reg, Format: format})
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

	var running atomic.Bool
	g, gctx := errgroup.WithContext(ctx)
	// The HTTP servers stop when the engine has stopped (stopServers), not
	// when ctx ends: /metrics and the API stay up through the final flush.
	srvCtx, stopServers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServers()
	if listen := cfg.listenAddr(); listen != "" {
		ln, err := serve.Listen(ctx, listen)
		if err != nil {
			return err
		}
		rd := readiness{running: &running, source: src, sink: sink}
		srv := &http.Server{Handler: opsHandler(reg, rd), ReadHeaderTimeout: api.ReadHeaderTimeout}
		logger.Info().Str("addr", ln.Addr().String()).Msg("serving /metrics, /healthz, /readyz")
		g.Go(func() error { return serve.Run(srvCtx, srv, ln, 5*time.Second, logger, "metrics") })
	} else {
		logger.Info().Msg("no /metrics server (a file source needs none; --listen HOST:PORT serves one)")
	}
	if cfg.APIListen != "" {
		if err := serveAPI(gctx, srvCtx, g, cfg, sink, logger, reg); err != nil {
			return err
		}
	}
	report := progress.New(cfg.Progress, progress.Deps{Out: os.Stderr, Stats: engine.Stats, Source: src})
	reportCtx, stopReport := context.WithCancel(gctx)
	defer stopReport()
	g.Go(func() error { report.Run(reportCtx); return nil })
	g.Go(func() error {
		defer stopServers()
		defer stopReport()
		running.Store(true)
		logger.Info().Stringer("from", cfg.From).Stringer("to", cfg.To).Msg("ingest started")
		err := engine.Run(gctx)
		running.Store(false)
		return err
	})
	err = g.Wait()
	summarize(logger, report, engine.Stats())
	return err
}

// startCPUProfile starts profiling the process's CPU into path; stop ends
// the profile and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path) //nolint:gosec // G304: the operator's own flag
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// summarize writes the run's totals: the human summary line when progress
// lines are on (a terminal, or --progress always), else one log entry.
func summarize(logger zerolog.Logger, report *progress.Reporter, st pipeline.Stats) {
	if report.Periodic() {
		fmt.Fprintln(os.Stderr, report.Summary())
		return
	}
	outcomes := zerolog.Dict()
	for o, n := range st.Exchanges {
		outcomes.Int64(string(o), n)
	}
	logger.Info().Int64("events", st.Events).Int64("accepted", st.Accepted).Int64("duplicates", st.Duplicates).
		Int64("quarantined", st.Quarantined).Int64("exchanges", st.TotalExchanges()).Dict("outcomes", outcomes).
		Int64("stored", st.Stored).Int64("evicted", st.Evicted).Str("summary", report.Summary()).Msg("ingest done")
}

// serveAPI serves the REST API from the sink's store in this process, with
// cmd/api's server limits (api.NewServer), until srvCtx ends.
func serveAPI(ctx, srvCtx context.Context, g *errgroup.Group, cfg config, sink pipeline.Sink, logger zerolog.Logger, reg *prometheus.Registry) error {
	engine, ok := baseSink(sink).(queries.Engine)
	if !ok {
		return fmt.Errorf("--api-listen needs a store sink (duckdb: or clickhouse://), not %s", cfg.To)
	}
	tokens, err := api.LoadTokens(cfg.TokensFile, os.Getenv("MCPLENS_TOKENS"))
	if err != nil {
		return err
	}
	a, err := api.New(cfg.API, api.Deps{Store: queries.On(engine), Tokens: tokens, Logger: logger.With().Str("subsystem", "api").Logger(), Registerer: reg, Gatherer: reg})
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

// baseSink is the store under a --fault-file wrapper.
func baseSink(sink pipeline.Sink) pipeline.Sink {
	switch f := sink.(type) {
	case faultySink:
		return f.Sink
	case faultyStateSink:
		return f.Sink
	}
	return sink
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

// faultyStateSink is a faultySink over a store that keeps the ingest
// state: writes (the state's too) fail while the file exists; loading the
// state at start does not, so the outage is seen as failed writes.
type faultyStateSink struct {
	faultySink
	state pipeline.StateSink
}

func (f faultyStateSink) LoadState(ctx context.Context, streams []string) ([]schema.StreamState, error) {
	return f.state.LoadState(ctx, streams)
}

// opsHandler serves /metrics, /healthz (liveness: the process answers)
// and /readyz (readiness: see readiness.check).
func opsHandler(reg *prometheus.Registry, rd readiness) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := rd.check(r.Context()); err != nil {
			http.Error(w, "not ready: "+err.Error()+"\n", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	return mux
}

// readiness says whether the ingester is doing its work: the engine runs,
// the source can consume (for Kafka: the broker answers and this member
// has partitions of a stable group) and the sink answers (ClickHouse: the
// server answers a ping and the database exists; DuckDB: the file is
// open).
type readiness struct {
	running *atomic.Bool
	source  pipeline.Source
	sink    pipeline.Sink
}

func (rd readiness) check(ctx context.Context) error {
	if !rd.running.Load() {
		return errors.New("pipeline not running")
	}
	if s, ok := rd.source.(interface{ Ready(context.Context) error }); ok {
		if err := s.Ready(ctx); err != nil {
			return fmt.Errorf("source: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var err error
	switch s := baseSink(rd.sink).(type) {
	case interface{ Ready(context.Context) error }:
		err = s.Ready(ctx)
	case pipeline.Pinger:
		err = s.Ping(ctx)
	}
	if err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return nil
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
			DuckDB: cfg.duckDBOptions(),
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
