package api

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// Keys of values the middleware leaves in the gin context.
const (
	ctxRequestID = "mcplens.request_id"
	ctxPrincipal = "mcplens.principal"
	ctxQuery     = "mcplens.query"
)

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// accessLog assigns the request id, then logs and counts the request once
// it is answered: method, route template, status, duration, token name.
// Never the query string, headers, tokens or bodies.
func (a *API) accessLog(c *gin.Context) {
	start := time.Now()
	id := c.GetHeader("X-Request-Id")
	if !validRequestID.MatchString(id) {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	c.Set(ctxRequestID, id)
	c.Header("X-Request-Id", id)
	c.Next()

	took := time.Since(start)
	route := "unmatched"
	if p := c.FullPath(); p != "" {
		route = openAPIPath(p)
	}
	status := c.Writer.Status()
	a.metrics.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	a.metrics.duration.WithLabelValues(route).Observe(took.Seconds())
	ev := a.log.Info()
	if status >= 500 {
		ev = a.log.Warn()
	}
	var token string
	if p, ok := c.Get(ctxPrincipal); ok {
		token = p.(Principal).Name
	}
	ev.Str("method", c.Request.Method).Str("route", route).Int("status", status).
		Float64("duration_ms", float64(took.Microseconds())/1000).Str("token", token).
		Str("request_id", id).Str("remote", c.ClientIP()).Int("bytes", c.Writer.Size()).
		Msg("request")
}

// recovery turns a panic into a 500 problem; the stack goes to the log,
// never to the client.
func (a *API) recovery(c *gin.Context) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		a.log.Error().Str("request_id", c.GetString(ctxRequestID)).Str("panic", fmt.Sprint(v)).
			Bytes("stack", debug.Stack()).Msg("handler panicked")
		if c.Writer.Written() {
			c.Abort()
			return
		}
		problem(c, Problem{Type: typeInternal, Title: "Internal Server Error", Status: http.StatusInternalServerError,
			Detail: "the request failed; the server log has the cause under this request id"})
	}()
	c.Next()
}

// devHeader marks every response of an API without authentication.
func (a *API) devHeader(c *gin.Context) {
	if a.cfg.Dev {
		c.Header("X-Mcplens-Dev-Mode", "authentication disabled (--dev)")
	}
	c.Next()
}

// cors answers allowed browser origins (none unless configured) and their
// preflight requests.
func (a *API) cors(c *gin.Context) {
	origin := c.GetHeader("Origin")
	if len(a.cfg.CORSOrigins) == 0 || origin == "" {
		c.Next()
		return
	}
	c.Writer.Header().Add("Vary", "Origin")
	allowAll := slices.Contains(a.cfg.CORSOrigins, "*")
	if !allowAll && !slices.Contains(a.cfg.CORSOrigins, origin) {
		c.Next()
		return
	}
	if allowAll {
		c.Header("Access-Control-Allow-Origin", "*")
	} else {
		c.Header("Access-Control-Allow-Origin", origin)
	}
	c.Header("Access-Control-Expose-Headers", "Link, Retry-After, X-Request-Id, X-Mcplens-Dev-Mode")
	if c.Request.Method == http.MethodOptions && c.GetHeader("Access-Control-Request-Method") != "" {
		c.Header("Access-Control-Allow-Methods", "GET")
		c.Header("Access-Control-Allow-Headers", "Authorization, X-Request-Id")
		c.Header("Access-Control-Max-Age", "600")
		c.AbortWithStatus(http.StatusNoContent)
		return
	}
	c.Next()
}

// noBody refuses requests that carry a body: the API is GET only. (Other
// methods get 405 first: they reach no handler.)
func (a *API) noBody(c *gin.Context) {
	if c.FullPath() != "" && (c.Request.ContentLength > 0 || len(c.Request.TransferEncoding) > 0) {
		problem(c, Problem{Type: typeTooLarge, Title: "Content Too Large", Status: http.StatusRequestEntityTooLarge,
			Detail: "the API takes no request body"})
		return
	}
	c.Next()
}

const realm = `Bearer realm="mcplens"`

// authenticate admits requests with a bearer token that has scope.
func (a *API) authenticate(scope Scope) gin.HandlerFunc {
	return func(c *gin.Context) {
		if a.cfg.Dev {
			c.Set(ctxPrincipal, Principal{Name: "dev", Scopes: []Scope{ScopeRead, ScopeBodies}})
			c.Next()
			return
		}
		scheme, token, _ := strings.Cut(c.GetHeader("Authorization"), " ")
		token = strings.TrimSpace(token)
		if !strings.EqualFold(scheme, "Bearer") || token == "" {
			c.Header("WWW-Authenticate", realm)
			problem(c, Problem{Type: typeUnauthorized, Title: "Unauthorized", Status: http.StatusUnauthorized,
				Detail: "send a token as Authorization: Bearer TOKEN"})
			return
		}
		p, ok := a.tokens.Lookup(token)
		if !ok {
			c.Header("WWW-Authenticate", realm+`, error="invalid_token", error_description="unknown token"`)
			problem(c, Problem{Type: typeUnauthorized, Title: "Unauthorized", Status: http.StatusUnauthorized,
				Detail: "the bearer token is not known"})
			return
		}
		c.Set(ctxPrincipal, p)
		if !p.Has(scope) {
			c.Header("WWW-Authenticate", fmt.Sprintf(`%s, error="insufficient_scope", scope=%q`, realm, scope))
			problem(c, Problem{Type: typeForbidden, Title: "Forbidden", Status: http.StatusForbidden,
				Detail: fmt.Sprintf("this endpoint needs a token with scope %q", scope)})
			return
		}
		c.Next()
	}
}

// rateLimit applies the per-token rate limit.
func (a *API) rateLimit(c *gin.Context) {
	if a.limits == nil {
		c.Next()
		return
	}
	p, _ := c.Get(ctxPrincipal)
	if ok, wait := a.limits.allow(p.(Principal).Name, time.Now()); !ok {
		c.Header("Retry-After", strconv.Itoa(wait))
		problem(c, Problem{Type: typeRateLimited, Title: "Too Many Requests", Status: http.StatusTooManyRequests,
			Detail: fmt.Sprintf("over %g requests/s for this token; retry after %ds", a.cfg.RateLimit, wait)})
		return
	}
	c.Next()
}

// checkParams rejects query parameters the route does not take, given
// more than once, or not decodable.
func checkParams(allowed []string) gin.HandlerFunc {
	return func(c *gin.Context) {
		q, err := url.ParseQuery(c.Request.URL.RawQuery)
		if err != nil {
			badRequest(c, "the query string does not decode", []InvalidParam{{Name: "query", Reason: "not URL-encoded"}})
			return
		}
		var bad []InvalidParam
		for name, vals := range q {
			switch {
			case !slices.Contains(allowed, name):
				reason := "unknown parameter; this endpoint takes none"
				if len(allowed) > 0 {
					reason = "unknown parameter; this endpoint takes " + strings.Join(allowed, ", ")
				}
				bad = append(bad, InvalidParam{Name: name, Reason: reason})
			case len(vals) > 1:
				bad = append(bad, InvalidParam{Name: name, Reason: fmt.Sprintf("given %d times; give it once", len(vals))})
			}
		}
		if len(bad) > 0 {
			sort.Slice(bad, func(i, j int) bool { return bad[i].Name < bad[j].Name })
			badRequest(c, "unknown or repeated query parameters", bad)
			return
		}
		c.Set(ctxQuery, q)
		c.Next()
	}
}
