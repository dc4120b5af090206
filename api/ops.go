package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcplens/mcplens/queries"
)

// readyProbeID is an exchange id no store holds: /readyz asks for it and
// takes ErrNotFound as proof that the store answers (queries.Store has no
// ping).
const readyProbeID = "mcplens-readyz-probe"

// readyTimeout bounds /readyz below probes' usual 1-2s timeouts.
const readyTimeout = 2 * time.Second

func (a *API) healthz(c *gin.Context) { c.PureJSON(http.StatusOK, gin.H{"status": "ok"}) }

func (a *API) readyz(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), min(readyTimeout, a.cfg.QueryTimeout))
	defer cancel()
	_, err := within(ctx, func(ctx context.Context) (*queries.ExchangeDetail, error) { return a.store.Exchange(ctx, readyProbeID) })
	if err != nil && !errors.Is(err, queries.ErrNotFound) {
		a.storeError(c, err)
		return
	}
	c.PureJSON(http.StatusOK, gin.H{"status": "ready"})
}

func (a *API) serveMetrics(c *gin.Context) {
	g := a.gather
	if g == nil {
		g = prometheus.NewRegistry()
	}
	promhttp.HandlerFor(g, promhttp.HandlerOpts{}).ServeHTTP(c.Writer, c.Request)
}

func (a *API) openapi(c *gin.Context) { c.Data(http.StatusOK, "application/json", a.doc) }
