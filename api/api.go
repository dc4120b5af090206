package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/web"
)

// Deps are what the API is built on.
type Deps struct {
	// Store answers the questions; required.
	Store queries.Store
	// Tokens are the accepted bearer tokens; required (non-empty) unless
	// Config.Dev.
	Tokens *Tokens
	// Logger receives the access log and errors; the zero Logger discards.
	Logger zerolog.Logger
	// Registerer receives the request metrics; Gatherer serves /metrics.
	// Nil: no metrics registered, /metrics answers an empty exposition.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// Now is the clock of relative times and default windows; nil means
	// time.Now.
	Now func() time.Time
}

// API is the REST API's http.Handler. Safe for concurrent use.
type API struct {
	cfg     Config
	store   queries.Store
	tokens  *Tokens
	log     zerolog.Logger
	now     func() time.Time
	metrics *metrics
	gather  prometheus.Gatherer
	limits  *rateLimits
	doc     []byte
	engine  *gin.Engine
	routes  []route
	// view serves the web view's pages (package web) beside the API.
	view *gin.Engine
}

// route is one endpoint: its OpenAPI path template, the scope it needs
// ("" for none), the query parameters it takes, and its handler.
type route struct {
	path   string
	scope  Scope
	params []string
	handle gin.HandlerFunc
}

// The query parameters of the routes: every list takes a time range and
// a limit, and the dimension filters the store can apply to it.
var (
	pWindow    = []string{"from", "to", "limit"}
	pServer    = with(pWindow, "server", "evidence")
	pBundle    = with(pWindow, "server")
	pClient    = with(pServer, "client")
	pTool      = with(pServer, "tool")
	pAllDims   = with(pClient, "tool")
	pOutcomes  = with(pAllDims, "method", "group_by", "bucket")
	pBoard     = with(pClient, "order_by")
	pExchanges = with(pAllDims, "method", "outcome", "layer", "error_class", "session", "q", "cursor")
	pTimeline  = with(pWindow, "cursor")
)

func with(base []string, more ...string) []string { return append(slices.Clone(base), more...) }

// New builds the API. The router, the metrics and the OpenAPI document
// are set up here; nothing runs until ServeHTTP.
func New(cfg Config, deps Deps) (*API, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("api config: %w", err)
	}
	if deps.Store == nil {
		return nil, errors.New("api: no store")
	}
	if !cfg.Dev && deps.Tokens.Len() == 0 {
		return nil, errors.New("api: no bearer tokens (give a tokens file or MCPLENS_TOKENS, or --dev for a local demo without auth)")
	}
	a := &API{cfg: cfg, store: deps.Store, tokens: deps.Tokens, log: deps.Logger, now: deps.Now, gather: deps.Gatherer}
	if a.now == nil {
		a.now = time.Now
	}
	var err error
	if a.metrics, err = newMetrics(deps.Registerer); err != nil {
		return nil, err
	}
	if a.doc, err = renderDocument(cfg); err != nil {
		return nil, err
	}
	if cfg.RateLimit > 0 {
		a.limits = newRateLimits(cfg.RateLimit, cfg.RateBurst)
	}
	a.routes = []route{
		{"/healthz", "", nil, a.healthz},
		{"/readyz", "", nil, a.readyz},
		{"/metrics", "", nil, a.serveMetrics},
		{"/openapi.json", "", nil, a.openapi},

		{"/api/v1/questions/http200-jsonrpc-errors", ScopeRead, pServer, a.http200RPCErrors},
		{"/api/v1/questions/unknown-side-effect-retries", ScopeRead, pAllDims, a.unknownSideEffectRetries},
		{"/api/v1/questions/client-disagreements", ScopeRead, pClient, a.clientDisagreements},
		{"/api/v1/questions/rate-limits", ScopeRead, pClient, a.rateLimits},
		{"/api/v1/questions/stream-cuts", ScopeRead, pServer, a.streamCuts},
		{"/api/v1/questions/input-required", ScopeRead, pTool, a.inputRequired},
		{"/api/v1/outcomes", ScopeRead, pOutcomes, a.outcomes},
		{"/api/v1/servers", ScopeRead, pBoard, a.leaderboard(queries.GroupServer)},
		{"/api/v1/clients", ScopeRead, pBoard, a.leaderboard(queries.GroupClient)},
		{"/api/v1/tools", ScopeRead, pBoard, a.leaderboard(queries.GroupTool)},
		{"/api/v1/exchanges", ScopeRead, pExchanges, a.exchanges},
		{"/api/v1/exchanges/{id}", ScopeRead, nil, a.exchange},
		{"/api/v1/sessions/{id}/timeline", ScopeRead, pTimeline, a.sessionTimeline},
		{"/api/v1/incidents/bundle", ScopeBodies, pBundle, a.bundle},
	}
	a.engine = a.router()
	if a.view, err = a.viewRouter(); err != nil {
		return nil, err
	}
	return a, nil
}

// ServeHTTP implements http.Handler: the web view's paths go to the
// view, everything else to the REST API.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if web.Owns(r.URL.Path) {
		a.view.ServeHTTP(w, r)
		return
	}
	a.engine.ServeHTTP(w, r)
}

// viewRouter serves the web view at / with the API's access log,
// metrics and recovery. The view calls the REST API in process, so its
// pages answer what the API answers to the visitor's token.
func (a *API) viewRouter() (*gin.Engine, error) {
	v, err := web.New(web.Config{Dev: a.cfg.Dev, MaxLimit: a.cfg.MaxLimit, Now: a.now}, web.Deps{API: a.engine, Logger: a.log})
	if err != nil {
		return nil, err
	}
	e := gin.New()
	e.RedirectTrailingSlash, e.RedirectFixedPath, e.HandleMethodNotAllowed = false, false, true
	_ = e.SetTrustedProxies(nil)
	e.Use(a.accessLog, a.recovery, a.devHeader)
	for _, r := range web.Routes {
		e.Handle(r.Method, r.Path, gin.WrapH(v))
	}
	return e, nil
}

func (a *API) router() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.HandleMethodNotAllowed = true
	// Ids may hold '/', sent as %2F: match on the raw path, then unescape.
	e.UseRawPath = true
	e.UnescapePathValues = true
	e.ContextWithFallback = true
	// Log the peer address, not a client-supplied X-Forwarded-For.
	_ = e.SetTrustedProxies(nil)
	e.Use(a.accessLog, a.recovery, a.devHeader, a.cors, a.noBody)
	for _, r := range a.routes {
		handlers := []gin.HandlerFunc{}
		if r.scope != "" {
			handlers = append(handlers, a.authenticate(r.scope), a.rateLimit)
		}
		handlers = append(handlers, checkParams(r.params), r.handle)
		e.GET(ginPath(r.path), handlers...)
	}
	e.NoRoute(func(c *gin.Context) {
		problem(c, Problem{Type: typeNotFound, Title: "Not Found", Status: http.StatusNotFound, Detail: "no such endpoint; GET /openapi.json lists them"})
	})
	e.NoMethod(func(c *gin.Context) {
		problem(c, Problem{Type: typeMethod, Title: "Method Not Allowed", Status: http.StatusMethodNotAllowed, Detail: "the API only answers GET"})
	})
	return e
}

// ginPath turns an OpenAPI template (/a/{id}/b) into Gin's (/a/:id/b).
func ginPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			parts[i] = ":" + s[1:len(s)-1]
		}
	}
	return strings.Join(parts, "/")
}

// openAPIPath turns a Gin path (/a/:id/b) into an OpenAPI template.
func openAPIPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") || strings.HasPrefix(s, "*") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}
