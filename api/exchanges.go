package api

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
)

// pageBody is one page of an ordered listing: Next is the cursor of the
// next page and NextURL the request that fetches it (also in the Link
// header), both null on the last page.
type pageBody[T any] struct {
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Limit   int       `json:"limit"`
	Rows    []T       `json:"rows"`
	Next    *string   `json:"next"`
	NextURL *string   `json:"next_url"`
}

// newPage builds a page and its Link header. The next URL repeats the
// request with from and to resolved to absolute times, so that a relative
// range ("-1h") does not move while a client walks the pages.
func newPage[T any](c *gin.Context, from, to time.Time, limit int, rows []T, next string) pageBody[T] {
	if rows == nil {
		rows = []T{}
	}
	b := pageBody[T]{From: from, To: to, Limit: limit, Rows: rows}
	if next != "" {
		q, _ := url.ParseQuery(c.Request.URL.RawQuery)
		q.Set("from", from.Format(time.RFC3339Nano))
		q.Set("to", to.Format(time.RFC3339Nano))
		q.Set("cursor", next)
		u := c.Request.URL.EscapedPath() + "?" + q.Encode()
		b.Next, b.NextURL = &next, &u
		c.Header("Link", "<"+u+`>; rel="next"`)
	}
	return b
}

var (
	outcomeNames    = names(classify.Outcomes)
	layerNames      = []string{"transport", "protocol", "application", "interaction", "stream"}
	errorClassNames = names(classify.ErrorClasses)
)

func names[S ~string](v []S) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = string(s)
	}
	return out
}

// exchanges lists exchanges matching filters, in (ts, exchange_id) order.
func (a *API) exchanges(c *gin.Context) {
	p := queryOf(c)
	sp := queries.SearchParams{Filter: a.filter(p)}
	sp.Outcome = p.oneOf("outcome", "", outcomeNames...)
	sp.Layer = p.oneOf("layer", "", layerNames...)
	sp.ErrorClass = p.oneOf("error_class", "", errorClassNames...)
	sp.Q = p.text("q")
	sp.Cursor = p.text("cursor")
	session := p.text("session")
	if !p.ok(c) {
		return
	}
	type result struct {
		rows []queries.SearchRow
		next string
	}
	res, err := ask(a, c, func(ctx context.Context) (result, error) {
		if session != "" {
			rows, next, err := a.searchSession(ctx, sp, session)
			return result{rows, next}, err
		}
		page, err := a.store.Search(ctx, sp)
		return result{page.Rows, page.Next}, err
	})
	if err != nil {
		a.storeError(c, err, "cursor", "from", "to", "limit", "q")
		return
	}
	c.PureJSON(http.StatusOK, newPage(c, sp.From, sp.To, sp.Limit, res.rows, res.next))
}

// exchangeBody is one exchange with its chain (one list: each link says
// by retry_of or continues how it joins) and, with scope bodies, its
// recorded headers and bodies.
type exchangeBody struct {
	Exchange schema.Exchange     `json:"exchange"`
	Chain    []queries.ChainLink `json:"chain"`
	Body     *schema.Body        `json:"body"`
	// Bodies says why Body is what it is.
	Bodies string `json:"bodies"`
}

// What exchangeBody.Bodies says.
const (
	bodiesIncluded  = "included"
	bodiesNotStored = "not stored (never recorded, or past the body retention)"
	bodiesOmitted   = "omitted: needs scope bodies"
)

func (a *API) exchange(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		return
	}
	d, err := ask(a, c, func(ctx context.Context) (*queries.ExchangeDetail, error) { return a.store.Exchange(ctx, id) })
	if err != nil {
		a.storeError(c, err, "id")
		return
	}
	b := exchangeBody{Exchange: d.Exchange, Chain: orEmpty(d.Chain)}
	if b.Exchange.Sources == nil {
		b.Exchange.Sources = []string{}
	}
	p, _ := c.Get(ctxPrincipal)
	switch {
	case !p.(Principal).Has(ScopeBodies):
		b.Bodies = bodiesOmitted
	case d.Body == nil:
		b.Bodies = bodiesNotStored
	default:
		body := *d.Body
		if body.RequestHeaders == nil {
			body.RequestHeaders = classify.Header{}
		}
		if body.ResponseHeaders == nil {
			body.ResponseHeaders = classify.Header{}
		}
		b.Body, b.Bodies = &body, bodiesIncluded
	}
	c.PureJSON(http.StatusOK, b)
}

type timelineBody struct {
	SessionID string `json:"session_id"`
	pageBody[queries.TimelineRow]
}

func (a *API) sessionTimeline(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		return
	}
	p := queryOf(c)
	f := a.filter(p)
	sp := queries.SessionParams{SessionID: id, From: f.From, To: f.To, Limit: f.Limit, Cursor: p.text("cursor")}
	if !p.ok(c) {
		return
	}
	page, err := ask(a, c, func(ctx context.Context) (queries.Page[queries.TimelineRow], error) {
		return a.store.SessionTimeline(ctx, sp)
	})
	if err != nil {
		a.storeError(c, err, "cursor", "from", "to", "limit")
		return
	}
	c.PureJSON(http.StatusOK, timelineBody{SessionID: id, pageBody: newPage(c, sp.From, sp.To, sp.Limit, page.Rows, page.Next)})
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return slices.Clip(s)
}
