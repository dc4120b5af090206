package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/store/duckstore"
)

// deps are what main hands run besides the configuration.
type deps struct {
	Logger zerolog.Logger
	Tokens *api.Tokens
	// Listening, if set, is told the listening address (tests listen on
	// port 0).
	Listening func(addr string)
}

// readOnlyOpenTimeout bounds waiting for a DuckDB writer to release the
// file.
const readOnlyOpenTimeout = 30 * time.Second

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
	store, closeStore, err := openStore(ctx, cfg, logger, reg)
	if err != nil {
		return err
	}
	logger.Info().Str("store", redactStoreURL(cfg.Store)).Dur("took", time.Since(start)).Msg("opened store")
	defer closeStep(logger, "store", closeStore)

	handler, err := api.New(cfg.API, api.Deps{
		Store: store, Tokens: d.Tokens, Logger: logger, Registerer: reg, Gatherer: reg,
	})
	if err != nil {
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      cfg.API.QueryTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
	}
	logger.Info().Str("addr", ln.Addr().String()).Int("tokens", d.Tokens.Len()).Bool("dev", cfg.API.Dev).
		Strs("cors_origins", cfg.API.CORSOrigins).Msg("serving the API")
	if d.Listening != nil {
		d.Listening(ln.Addr().String())
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		start := time.Now()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
		defer cancel()
		err := srv.Shutdown(sctx)
		logger.Info().Err(err).Dur("took", time.Since(start)).Msg("stopped http server")
		if err != nil {
			return fmt.Errorf("shut down http server: %w", err)
		}
		return nil
	})
	return g.Wait()
}

// openStore opens the store of --store and returns it with its Close.
func openStore(ctx context.Context, cfg config, logger zerolog.Logger, reg prometheus.Registerer) (queries.Store, func() error, error) {
	switch {
	case strings.HasPrefix(cfg.Store, "duckdb:"):
		path, err := duckstore.ParseURL(cfg.Store)
		if err != nil {
			return nil, nil, err
		}
		opts := duckstore.Options{Logger: logger}
		if cfg.Migrate {
			s, err := duckstore.Open(ctx, path, opts)
			if err != nil {
				return nil, nil, err
			}
			return s, s.Close, nil
		}
		if _, err := os.Stat(path); err != nil {
			return nil, nil, fmt.Errorf("duckdb file %q: %w (ingest into it first, or pass --migrate to create an empty store)", path, err)
		}
		octx, cancel := context.WithTimeout(ctx, readOnlyOpenTimeout)
		defer cancel()
		s, err := duckstore.OpenReadOnly(octx, path, opts)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	case strings.HasPrefix(cfg.Store, "clickhouse://"):
		return openClickHouse(ctx, cfg, logger, reg)
	}
	return nil, nil, fmt.Errorf("--store %q: want duckdb:PATH or clickhouse://HOST:PORT/DB", cfg.Store)
}

// redactStoreURL hides a password in a store URL for logging.
func redactStoreURL(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	userinfo, host, ok := strings.Cut(rest, "@")
	if !ok {
		return s
	}
	user, _, _ := strings.Cut(userinfo, ":")
	return scheme + "://" + user + ":xxxxx@" + host
}

func closeStep(logger zerolog.Logger, what string, close func() error) {
	start := time.Now()
	err := close()
	logger.Info().Err(err).Dur("took", time.Since(start)).Msgf("closed %s", what)
}
