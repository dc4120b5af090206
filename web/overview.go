package web

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/mcplens/mcplens/queries"
)

// list is the API's answer of a question or breakdown.
type list[T any] struct {
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
	Limit     int       `json:"limit"`
	Truncated bool      `json:"truncated"`
	Rows      []T       `json:"rows"`
}

// params builds API query parameters from pairs; empty values are left
// out.
func params(base url.Values, kv ...string) url.Values {
	q := url.Values{}
	for k, v := range base {
		q[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

// rangeOf returns the from and to the visitor asked for, as given.
func rangeOf(r *http.Request) (url.Values, timeRange) {
	q := r.URL.Query()
	tr := timeRange{From: q.Get("from"), To: q.Get("to"), Shown: true}
	if tr.From == "" {
		tr.From = "-24h"
	}
	return params(nil, "from", tr.From, "to", tr.To), tr
}

// resolved notes the range the API resolved, for the page to show.
func resolved(tr *timeRange, from, to time.Time) url.Values {
	tr.FromAt, tr.ToAt, tr.Resolved = from, to, true
	return url.Values{"from": {from.Format(time.RFC3339Nano)}, "to": {to.Format(time.RFC3339Nano)}}
}

// pin resolves a page's range once, on the API's clock and with its
// parser, so that all the page's API calls, sent at once, ask for the
// same instants while "now" moves. A range that does not parse is sent
// as given: the API refuses it with a problem naming the parameter.
func (v *View) pin(rng url.Values) (abs url.Values, span time.Duration) {
	now := v.cfg.Now()
	from, err := queries.ParseTime(rng.Get("from"), now)
	if err != nil {
		return rng, 24 * time.Hour
	}
	to := now
	if s := rng.Get("to"); s != "" {
		if to, err = queries.ParseTime(s, now); err != nil {
			return rng, 24 * time.Hour
		}
	}
	return url.Values{"from": {from.UTC().Format(time.RFC3339Nano)}, "to": {to.UTC().Format(time.RFC3339Nano)}}, to.Sub(from)
}

// totals counts a breakdown by what the overview shows.
type totals struct {
	All, Failed, OK, Accepted, InputRequired int64
	// Answered2xx counts the exchanges answered with a 2xx status;
	// Failed2xx those of them that failed all the same.
	Answered2xx, Failed2xx int64
	ByLayer                map[string]int64
	ByOutcome              []outcomeCount
}

type outcomeCount struct {
	Outcome, Layer string
	N              int64
	Failed         bool
}

func (t totals) Share2xx() float64 {
	if t.Answered2xx == 0 {
		return 0
	}
	return float64(t.Failed2xx) / float64(t.Answered2xx)
}

func (t totals) FailRate() float64 {
	if t.All == 0 {
		return 0
	}
	return float64(t.Failed) / float64(t.All)
}

func countRows(rows []breakdownRow) totals {
	t := totals{ByLayer: map[string]int64{}}
	by := map[string]*outcomeCount{}
	for _, r := range rows {
		n := r.Exchanges
		t.All += n
		oc := by[r.Outcome]
		if oc == nil {
			oc = &outcomeCount{Outcome: r.Outcome, Layer: r.Layer, Failed: !okOutcomes[r.Outcome]}
			by[r.Outcome] = oc
		}
		oc.N += n
		switch r.Outcome {
		case "SUCCESS", "TOOL_SUCCESS":
			t.OK += n
		case "ACCEPTED":
			t.Accepted += n
		case "INPUT_REQUIRED":
			t.InputRequired += n
		case "CANCELLED", "UNVERIFIED":
			// The client's decision, or a 2xx whose record cannot show
			// more: neither a failure nor a success.
		default:
			t.Failed += n
			t.ByLayer[r.Layer] += n
		}
		switch {
		case behind2xx[r.Outcome]:
			t.Failed2xx += n
			t.Answered2xx += n
		case r.Outcome != "HTTP_ERROR" && r.Outcome != "TRANSPORT_ERROR" && r.Outcome != "NO_RESPONSE":
			t.Answered2xx += n
		}
	}
	for _, oc := range by {
		t.ByOutcome = append(t.ByOutcome, *oc)
	}
	sort.Slice(t.ByOutcome, func(i, j int) bool {
		a, b := t.ByOutcome[i], t.ByOutcome[j]
		if a.Failed != b.Failed {
			return a.Failed
		}
		if a.N != b.N {
			return a.N > b.N
		}
		return a.Outcome < b.Outcome
	})
	return t
}

// charts draws the failures stacked by layer and, apart, the answers
// that are no failure.
func charts(rows []breakdownRow, from, to time.Time, step time.Duration) (failed, ok chart) {
	failed = stackChart("Failures by layer", rows, from, to, step, failureLayers, func(r breakdownRow) string {
		if okOutcomes[r.Outcome] {
			return ""
		}
		return r.Layer
	})
	ok = stackChart("Successes, ACCEPTED and input requests", rows, from, to, step, []string{"success", "accepted", "input_required"}, func(r breakdownRow) string {
		switch r.Outcome {
		case "SUCCESS", "TOOL_SUCCESS":
			return "success"
		case "ACCEPTED":
			return "accepted"
		case "INPUT_REQUIRED":
			return "input_required"
		}
		return ""
	})
	return failed, ok
}

// board is a leaderboard with each row's layer mix drawn.
type board struct {
	Dim  string
	Rows []boardRow
}

type boardRow struct {
	queries.LeaderboardRow
	Href string
	Mix  []mixSeg
}

type mixSeg struct {
	X, W  float64
	Class string
	Title string
}

const mixW = 120.0

func newBoard(d dim, rows []queries.LeaderboardRow, keep url.Values, failingOnly bool) board {
	b := board{Dim: d.title}
	for _, r := range rows {
		if failingOnly && r.Errors == 0 {
			continue
		}
		br := boardRow{LeaderboardRow: r, Href: d.path + "?" + params(keep, "name", r.GroupKey).Encode()}
		x := 0.0
		for _, l := range []struct {
			name string
			rate float64
		}{{"transport", r.TransportErrorRate}, {"protocol", r.ProtocolErrorRate}, {"application", r.ApplicationErrorRate}, {"stream", r.StreamErrorRate}} {
			if l.rate <= 0 {
				continue
			}
			w := l.rate * mixW
			br.Mix = append(br.Mix, mixSeg{X: x, W: w, Class: "s-" + l.name, Title: l.name + " " + pctWords(l.rate)})
			x += w
		}
		b.Rows = append(b.Rows, br)
	}
	return b
}

func pctWords(f float64) string { return funcs["pct"].(func(float64) string)(f) }

type overviewPage struct {
	Totals                   totals
	Failed, OK               chart
	Servers, Tools, Clients  board
	RPCErrors                []queries.RPCErrorServer
	Retries                  []queries.UnknownRetry
	RetriesTruncated         bool
	StreamCuts               []queries.StreamCutRow
	RateLimits               []queries.RateLimitRow
	Keep                     url.Values
	BundleHref, FailuresHref string
}

func (v *View) overview(w http.ResponseWriter, r *http.Request) {
	rng, tr := rangeOf(r)
	abs, span := v.pin(rng)
	var step time.Duration
	var (
		p                       overviewPage
		servers, tools, clients list[queries.LeaderboardRow]
		breakdown               list[breakdownRow]
		rpc                     list[queries.RPCErrorServer]
		retries                 list[queries.UnknownRetry]
		cuts                    list[queries.StreamCutRow]
		limits                  list[queries.RateLimitRow]
	)
	c := v.calls(r)
	ask := c.get
	ask("/api/v1/servers", params(abs, "order_by", "errors", "limit", v.limit(10)), &servers)
	ask("/api/v1/tools", params(abs, "order_by", "errors", "limit", v.limit(10)), &tools)
	ask("/api/v1/clients", params(abs, "order_by", "errors", "limit", v.limit(10)), &clients)
	c.do(func(r *http.Request) error {
		var err error
		step, err = v.breakdown(r, abs, span, &breakdown)
		return err
	})
	ask("/api/v1/questions/http200-jsonrpc-errors", params(abs, "limit", v.limit(20)), &rpc)
	ask("/api/v1/questions/unknown-side-effect-retries", params(abs, "limit", v.limit(20)), &retries)
	ask("/api/v1/questions/stream-cuts", params(abs, "limit", v.limit(10)), &cuts)
	ask("/api/v1/questions/rate-limits", params(abs, "limit", v.limit(10)), &limits)
	if err := c.wait(); err != nil {
		v.fail(w, r, err)
		return
	}
	resolved(&tr, servers.From, servers.To)
	p.Keep = rng
	p.Totals = countRows(breakdown.Rows)
	p.Failed, p.OK = charts(breakdown.Rows, servers.From, servers.To, step)
	p.Servers = newBoard(dimServer, servers.Rows, rng, true)
	p.Tools = newBoard(dimTool, tools.Rows, rng, true)
	p.Clients = newBoard(dimClient, clients.Rows, rng, true)
	p.RPCErrors, p.Retries, p.RetriesTruncated = rpc.Rows, retries.Rows, retries.Truncated
	p.StreamCuts, p.RateLimits = cuts.Rows, limits.Rows
	p.BundleHref = "/bundle?" + rng.Encode()
	v.renderRange(w, r, http.StatusOK, "overview", "Overview", p, tr)
}

// limit returns n, or the API's largest limit if that is smaller.
func (v *View) limit(n int) string { return strconv.Itoa(min(n, v.cfg.MaxLimit)) }

// breakdown asks for the outcomes per layer and bucket of q: in buckets
// that give at most about 360 bars, coarser when the API's row limit
// cuts the answer. It returns the bucket used.
func (v *View) breakdown(r *http.Request, q url.Values, span time.Duration, out *list[breakdownRow]) (time.Duration, error) {
	for i := bucketIndex(span, v.cfg.MaxLimit); ; i++ {
		b := breakdownBuckets[i]
		if err := v.get(r, "/api/v1/outcomes", params(q, "group_by", "layer", "bucket", b.name, "limit", v.limit(1<<30)), out); err != nil {
			return 0, err
		}
		if !out.Truncated || i == len(breakdownBuckets)-1 {
			return b.step, nil
		}
	}
}
