package web

import (
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/queries"
)

// dim is a dimension a page narrows to: its page, its API filter and
// its leaderboard.
type dim struct {
	name, title, path, filter, board string
}

var (
	dimServer = dim{"server", "Servers", "/server", "server", "/api/v1/servers"}
	dimTool   = dim{"tool", "Tools", "/tool", "tool", "/api/v1/tools"}
	dimClient = dim{"client", "Clients", "/client", "client", "/api/v1/clients"}
)

// recentFailures is how many of the latest exchanges of each failing
// outcome the page lists (and takes its class examples from).
const recentFailures = 5

// classRow is one error class of a subject's failures: its exact count in
// the range, the advice the classifier gives it, and an example among the
// latest failures when one has the class.
type classRow struct {
	Outcome, Class, Advice string
	N                      int64
	Href, ExampleHref      string
}

type subjectPage struct {
	Dim, Name           string
	Totals              totals
	Failed, OK          chart
	Classes             []classRow
	Failures            []queries.SearchRow
	Boards              []board
	RPCErrors           []queries.RPCErrorServer
	Retries             []queries.UnknownRetry
	StreamCuts          []queries.StreamCutRow
	RateLimits          []queries.RateLimitRow
	Disagreements       []queries.DisagreementRow
	InputRequired       []queries.InputRequiredRow
	Keep                url.Values
	BundleHref, AllHref string
}

// subject serves the page of one server, tool or client.
func (v *View) subject(d dim) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		if name == "" {
			v.required(w, r, "name", d.name)
			return
		}
		rng, tr := rangeOf(r)
		pinned, span := v.pin(rng)
		abs := params(pinned, d.filter, name)
		p := subjectPage{Dim: d.name, Name: name, Keep: rng}
		p.AllHref = "/exchanges?" + params(rng, d.filter, name).Encode()
		if d == dimServer {
			p.BundleHref = "/bundle?" + params(rng, "server", name).Encode()
		}

		var (
			step      time.Duration
			first     list[breakdownRow]
			breakdown list[breakdownRow]
			rpc       list[queries.RPCErrorServer]
			retries   list[queries.UnknownRetry]
			cuts      list[queries.StreamCutRow]
			limits    list[queries.RateLimitRow]
			disagree  list[queries.DisagreementRow]
			input     list[queries.InputRequiredRow]
		)
		c := v.calls(r)
		ask := c.get
		// By error class: the totals and the class table from one count.
		ask("/api/v1/outcomes", params(abs, "group_by", "error_class", "limit", v.limit(1000)), &first)
		c.do(func(r *http.Request) error {
			var err error
			step, err = v.breakdown(r, abs, span, &breakdown)
			return err
		})
		ask("/api/v1/questions/unknown-side-effect-retries", params(abs, "limit", v.limit(20)), &retries)
		var boards []*list[queries.LeaderboardRow]
		var boardDims []dim
		addBoard := func(of dim) {
			l := &list[queries.LeaderboardRow]{}
			boards, boardDims = append(boards, l), append(boardDims, of)
			ask(of.board, params(abs, "order_by", "errors", "limit", v.limit(10)), l)
		}
		switch d {
		case dimServer:
			addBoard(dimTool)
			addBoard(dimClient)
			ask("/api/v1/questions/http200-jsonrpc-errors", params(abs, "limit", v.limit(20)), &rpc)
			ask("/api/v1/questions/stream-cuts", params(abs, "limit", v.limit(10)), &cuts)
			ask("/api/v1/questions/rate-limits", params(abs, "limit", v.limit(10)), &limits)
			ask("/api/v1/questions/input-required", params(abs, "limit", v.limit(20)), &input)
		case dimTool:
			ask("/api/v1/questions/input-required", params(abs, "limit", v.limit(20)), &input)
		case dimClient:
			addBoard(dimServer)
			addBoard(dimTool)
			ask("/api/v1/questions/rate-limits", params(abs, "limit", v.limit(10)), &limits)
			ask("/api/v1/questions/client-disagreements", params(abs, "limit", v.limit(20)), &disagree)
		}
		if err := c.wait(); err != nil {
			v.fail(w, r, err)
			return
		}
		resolved(&tr, first.From, first.To)
		p.Totals = countRows(first.Rows)
		// The latest failures of each failing outcome.
		var failing []outcomeCount
		for _, oc := range p.Totals.ByOutcome {
			if oc.Failed {
				failing = append(failing, oc)
			}
		}
		latest := make([]list[queries.SearchRow], len(failing))
		c = v.calls(r)
		for i, oc := range failing {
			c.get("/api/v1/exchanges", params(abs, "outcome", oc.Outcome, "limit", v.limit(recentFailures)), &latest[i])
		}
		if err := c.wait(); err != nil {
			v.fail(w, r, err)
			return
		}
		p.Failed, p.OK = charts(breakdown.Rows, first.From, first.To, step)
		for i := range failing {
			p.Failures = append(p.Failures, latest[i].Rows...)
		}
		p.Classes = classesOf(first.Rows, p.Failures, rng, d, name)
		sort.Slice(p.Failures, func(i, j int) bool { return p.Failures[i].TS.After(p.Failures[j].TS) })
		for i, b := range boards {
			p.Boards = append(p.Boards, newBoard(boardDims[i], b.Rows, rng, false))
		}
		p.RPCErrors, p.Retries, p.StreamCuts, p.RateLimits = rpc.Rows, retries.Rows, cuts.Rows, limits.Rows
		p.Disagreements, p.InputRequired = disagree.Rows, input.Rows
		v.renderRange(w, r, http.StatusOK, "subject", d.name+" "+name, p, tr)
	}
}

// classesOf lists the error classes of the failing outcomes of a
// breakdown by error class, most frequent first, each with an example
// from the latest failures when one of them has it.
func classesOf(rows []breakdownRow, latest []queries.SearchRow, rng url.Values, d dim, name string) []classRow {
	type key struct{ outcome, class string }
	by := map[key]*classRow{}
	for _, r := range rows {
		if okOutcomes[r.Outcome] {
			continue
		}
		k := key{r.Outcome, r.GroupKey}
		c := by[k]
		if c == nil {
			c = &classRow{Outcome: r.Outcome, Class: r.GroupKey,
				Advice: string(classify.AdviceOf(classify.Outcome(r.Outcome), classify.ErrorClass(r.GroupKey))),
				Href:   "/exchanges?" + params(rng, d.filter, name, "outcome", r.Outcome, "error_class", r.GroupKey).Encode()}
			by[k] = c
		}
		c.N += r.Exchanges
	}
	for _, e := range latest {
		if c := by[key{e.Outcome, e.ErrorClass}]; c != nil && c.ExampleHref == "" {
			c.ExampleHref = link("/exchange", "id", e.ExchangeID)
		}
	}
	out := make([]classRow, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.N != b.N {
			return a.N > b.N
		}
		if a.Outcome != b.Outcome {
			return a.Outcome < b.Outcome
		}
		return a.Class < b.Class
	})
	return out
}
