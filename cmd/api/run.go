package main

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/internal/logging"
	"github.com/mcplens/mcplens/internal/serve"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store"
)

// deps are what main hands run besides the configuration.
type deps struct {
	Logger zerolog.Logger
	Tokens *api.Tokens
	// Listening, if set, is told the listening address (tests listen on
	// port 0).
	Listening func(addr string)
}

// run opens the store, serves the API until ctx ends, then stops serving
// (letting in-flight requests finish) and closes the store.
func run(ctx context.Context, cfg config, d deps) error {
	logger := d.Logger
	if cfg.API.Dev {
		logger.Warn().Str("listen", cfg.Listen).
			Msg("AUTHENTICATION DISABLED (--dev): anyone who can reach this address reads every exchange, bodies included; never use --dev outside a local demo")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	start := time.Now()
	opts := schema.DefaultOptions()
	opts.DB = "" // --migrate: the DSN's database, one node, default TTLs
	st, err := store.Open(ctx, cfg.Store, store.Options{
		ReadOnly: true, Migrate: cfg.Migrate, Schema: opts, ClickHouse: cfg.ClickHouse, DuckDB: cfg.duckDBOptions(),
		Logger: logger, Registerer: reg,
	})
	if err != nil {
		return err
	}
	logger.Info().Stringer("store", cfg.Store).Int64("took_ms", time.Since(start).Milliseconds()).Msg("opened store")
	defer func() { _ = logging.Step(logger, "store", st.Close) }()

	handler, err := api.New(cfg.API, api.Deps{
		Store: queries.On(st), Tokens: d.Tokens, Logger: logger, Registerer: reg, Gatherer: reg,
	})
	if err != nil {
		return err
	}
	ln, err := serve.Listen(ctx, cfg.Listen)
	if err != nil {
		return err
	}
	logger.Info().Str("addr", ln.Addr().String()).Int("tokens", d.Tokens.Len()).Bool("dev", cfg.API.Dev).
		Strs("cors_origins", cfg.API.CORSOrigins).Msg("serving the API")
	if d.Listening != nil {
		d.Listening(ln.Addr().String())
	}
	return serve.Run(ctx, api.NewServer(cfg.API, handler), ln, cfg.ShutdownTimeout, logger, "api")
}
