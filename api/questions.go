package api

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mcplens/mcplens/queries"
)

// listBody is the answer of every question and breakdown: the range it
// covers, the limit, whether the limit cut the rows, and the rows.
type listBody[T any] struct {
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
	Limit     int       `json:"limit"`
	Truncated bool      `json:"truncated"`
	Rows      []T       `json:"rows"`
}

func newList[T any](f queries.Filter, rows []T, limitRows int) listBody[T] {
	if rows == nil {
		rows = []T{}
	}
	return listBody[T]{From: f.From, To: f.To, Limit: f.Limit, Truncated: limitRows >= f.Limit, Rows: rows}
}

// filter reads from, to, limit and the dimension filters (server, client,
// tool, method, evidence; checkParams has rejected the ones the route does
// not take).
func (a *API) filter(p *reqParams) queries.Filter {
	var f queries.Filter
	f.From, f.To = p.window(a.now(), a.cfg.DefaultWindow, a.cfg.MaxSpan)
	f.Limit = p.limit(a.cfg.defaultLimit(), a.cfg.MaxLimit)
	f.Server, f.Client, f.Tool, f.Method = p.text("server"), p.text("client"), p.text("tool"), p.text("method")
	f.Evidence = p.oneOf("evidence", "", queries.EvidenceLevels...)
	return f
}

// question serves a question whose rows are the store's answer as is.
func question[T any](a *API, ask1 func(ctx context.Context, f queries.Filter) ([]T, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := queryOf(c)
		f := a.filter(p)
		if !p.ok(c) {
			return
		}
		rows, err := ask(a, c, func(ctx context.Context) ([]T, error) { return ask1(ctx, f) })
		if err != nil {
			a.storeError(c, err, "from", "to", "limit")
			return
		}
		c.PureJSON(http.StatusOK, newList(f, rows, len(rows)))
	}
}

func (a *API) http200RPCErrors(c *gin.Context) {
	p := queryOf(c)
	f := a.filter(p)
	if !p.ok(c) {
		return
	}
	rows, err := ask(a, c, func(ctx context.Context) ([]queries.RPCErrorServer, error) { return a.store.HTTP200RPCErrors(ctx, f) })
	if err != nil {
		a.storeError(c, err, "from", "to", "limit")
		return
	}
	// The limit bounds the (server, code, message) rows.
	n := 0
	for i := range rows {
		if rows[i].Top == nil {
			rows[i].Top = []queries.RPCErrorCode{}
		}
		n += len(rows[i].Top)
	}
	c.PureJSON(http.StatusOK, newList(f, rows, n))
}

func (a *API) unknownSideEffectRetries(c *gin.Context) {
	question(a, func(ctx context.Context, f queries.Filter) ([]queries.UnknownRetry, error) {
		return a.store.UnknownSideEffectRetries(ctx, queries.RetriesParams{Filter: f})
	})(c)
}

func (a *API) clientDisagreements(c *gin.Context) { question(a, a.store.ClientDisagreements)(c) }
func (a *API) rateLimits(c *gin.Context)          { question(a, a.store.RateLimits)(c) }
func (a *API) streamCuts(c *gin.Context)          { question(a, a.store.StreamCuts)(c) }
func (a *API) inputRequired(c *gin.Context)       { question(a, a.store.InputRequired)(c) }

// Breakdown groups and buckets of /api/v1/outcomes.
var (
	groupBys = []string{"server", "client", "tool", "method", "error_class", "layer", "outcome"}
	buckets  = map[string]time.Duration{"1m": time.Minute, "5m": 5 * time.Minute, "1h": time.Hour, "1d": 24 * time.Hour}
)

type breakdownBody struct {
	listBody[queries.BreakdownRow]
	GroupBy *string `json:"group_by"`
	Bucket  *string `json:"bucket"`
}

func (a *API) outcomes(c *gin.Context) {
	p := queryOf(c)
	bp := queries.BreakdownParams{Filter: a.filter(p)}
	groupBy := p.oneOf("group_by", "", groupBys...)
	bucket := p.oneOf("bucket", "", "1m", "5m", "1h", "1d")
	if !p.ok(c) {
		return
	}
	bp.Bucket = buckets[bucket]
	// The store groups by server, client, tool, method or error class; every row
	// carries its layer and outcome, so those groups are the ungrouped
	// rows keyed here.
	bp.GroupBy = groupBy
	if groupBy == "layer" || groupBy == "outcome" {
		bp.GroupBy = queries.GroupNone
	}
	rows, err := ask(a, c, func(ctx context.Context) ([]queries.BreakdownRow, error) { return a.store.Breakdown(ctx, bp) })
	if err != nil {
		a.storeError(c, err, "from", "to", "limit", "group_by", "bucket")
		return
	}
	if groupBy == "layer" || groupBy == "outcome" {
		for i := range rows {
			rows[i].GroupKey = rows[i].Layer
			if groupBy == "outcome" {
				rows[i].GroupKey = rows[i].Outcome
			}
		}
		sort.SliceStable(rows, func(i, j int) bool {
			x, y := rows[i], rows[j]
			if !x.Bucket.Equal(y.Bucket) {
				return x.Bucket.Before(y.Bucket)
			}
			if x.GroupKey != y.GroupKey {
				return x.GroupKey < y.GroupKey
			}
			if x.Layer != y.Layer {
				return x.Layer < y.Layer
			}
			return x.Outcome < y.Outcome
		})
	}
	body := breakdownBody{listBody: newList(bp.Filter, rows, len(rows))}
	if groupBy != "" {
		body.GroupBy = &groupBy
	}
	if bucket != "" {
		body.Bucket = &bucket
	}
	c.PureJSON(http.StatusOK, body)
}

type leaderboardBody struct {
	listBody[queries.LeaderboardRow]
	OrderBy string `json:"order_by"`
}

// leaderboard ranks servers, clients or tools.
func (a *API) leaderboard(group string) gin.HandlerFunc {
	return func(c *gin.Context) {
		p := queryOf(c)
		lp := queries.LeaderboardParams{Filter: a.filter(p), GroupBy: group}
		lp.OrderBy = p.oneOf("order_by", queries.OrderVolume, queries.OrderVolume, queries.OrderErrors, queries.OrderP99)
		if !p.ok(c) {
			return
		}
		rows, err := ask(a, c, func(ctx context.Context) ([]queries.LeaderboardRow, error) { return a.store.Leaderboard(ctx, lp) })
		if err != nil {
			a.storeError(c, err, "from", "to", "limit", "order_by")
			return
		}
		c.PureJSON(http.StatusOK, leaderboardBody{listBody: newList(lp.Filter, rows, len(rows)), OrderBy: lp.OrderBy})
	}
}
