// Package serve runs an HTTP server for as long as a context lasts: the
// one way every mcplens command serves (the API, /metrics and the probes).
package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/logging"
)

// Run serves srv on ln until ctx ends or serving fails, then shuts srv
// down, letting in-flight requests finish for at most grace, and logs how
// long that took. It returns nil after a clean shutdown. Without an
// ErrorLog of its own, srv's errors (a panic in a handler, a superfluous
// WriteHeader, an accept error) go to logger as warnings.
func Run(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration, logger zerolog.Logger, name string) error {
	if srv.ErrorLog == nil {
		srv.ErrorLog = logging.StdLogger(logger, zerolog.WarnLevel, "net/http")
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve %s: %w", name, err)
	case <-ctx.Done():
	}
	start := time.Now()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	logger.Info().Err(err).Int64("took_ms", time.Since(start).Milliseconds()).Msgf("stopped %s server", name)
	if err != nil {
		return fmt.Errorf("shut down %s server: %w", name, err)
	}
	return nil
}

// Listen opens a TCP listener on addr ("127.0.0.1:0" picks a free port).
func Listen(ctx context.Context, addr string) (net.Listener, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return ln, nil
}
