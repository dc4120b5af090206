package web

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Config is what the operator tells the view.
type Config struct {
	// Dev: the API runs without authentication (api --dev), so the view
	// asks for no token and says so on every page.
	Dev bool
	// SessionMaxAge is how long the login cookie lives; 0 means 12h.
	SessionMaxAge time.Duration
	// MaxLimit is the API's largest limit (api --max-limit); the view
	// never asks for more. 0 means 1000.
	MaxLimit int
	// Now is the API's clock, which resolves relative times; nil means
	// time.Now.
	Now func() time.Time
}

// Deps are what the view is built on.
type Deps struct {
	// API is the REST API's handler, called in process; required.
	API http.Handler
	// Logger receives errors of the API calls; the zero Logger discards.
	Logger zerolog.Logger
}

// View serves the pages. Safe for concurrent use.
type View struct {
	cfg   Config
	api   http.Handler
	log   zerolog.Logger
	pages map[string]*template.Template
	mux   *http.ServeMux
}

// Route is one path the view serves.
type Route struct {
	Method, Path string
}

// Routes are the paths of the view, in gin's syntax; [Owns] reports the
// same set.
var Routes = []Route{
	{http.MethodGet, "/"},
	{http.MethodGet, "/server"},
	{http.MethodGet, "/tool"},
	{http.MethodGet, "/client"},
	{http.MethodGet, "/exchanges"},
	{http.MethodGet, "/exchange"},
	{http.MethodGet, "/session"},
	{http.MethodGet, "/bundle"},
	{http.MethodGet, "/login"},
	{http.MethodPost, "/login"},
	{http.MethodPost, "/logout"},
	{http.MethodGet, "/assets/*file"},
	{http.MethodGet, "/favicon.ico"},
}

// Owns reports whether path is one of the view's.
func Owns(path string) bool {
	if strings.HasPrefix(path, "/assets/") {
		return true
	}
	for _, r := range Routes {
		if r.Path == path {
			return true
		}
	}
	return false
}

// New builds the view; the templates are parsed here.
func New(cfg Config, deps Deps) (*View, error) {
	if deps.API == nil {
		return nil, errors.New("web: no API handler")
	}
	if cfg.SessionMaxAge <= 0 {
		cfg.SessionMaxAge = 12 * time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxLimit <= 0 {
		cfg.MaxLimit = 1000
	}
	v := &View{cfg: cfg, api: deps.API, log: deps.Logger, pages: map[string]*template.Template{}}
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("parse layout: %w", err)
	}
	for _, name := range []string{"overview", "subject", "exchanges", "exchange", "session", "login", "error"} {
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse page %s: %w", name, err)
		}
		v.pages[name] = t
	}
	assets, err := fs.Sub(assetFS, "assets")
	if err != nil {
		return nil, err
	}
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", v.overview)
	m.HandleFunc("GET /server", v.subject(dimServer))
	m.HandleFunc("GET /tool", v.subject(dimTool))
	m.HandleFunc("GET /client", v.subject(dimClient))
	m.HandleFunc("GET /exchanges", v.exchanges)
	m.HandleFunc("GET /exchange", v.exchange)
	m.HandleFunc("GET /session", v.session)
	m.HandleFunc("GET /bundle", v.bundle)
	m.HandleFunc("GET /login", v.loginForm)
	m.HandleFunc("POST /login", v.login)
	m.HandleFunc("POST /logout", v.logout)
	static := http.StripPrefix("/assets/", http.FileServerFS(assets))
	m.Handle("GET /assets/", cacheable(static))
	m.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/assets/favicon.svg"
		cacheable(static).ServeHTTP(w, r2)
	})
	v.mux = m
	return v, nil
}

// csp allows the page its own stylesheet and images and nothing else: no
// script, no frame, no form posting elsewhere.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP implements http.Handler.
func (v *View) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	v.mux.ServeHTTP(w, r)
}

// cacheable lets browsers keep the embedded assets for an hour.
func cacheable(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}
