package web

import (
	"net/http"
	"net/url"
	"sort"
	"time"

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

// classSample is how many exchanges of each failing outcome the error
// class table reads.
const classSample = 200

// classRow is one error class of a subject's failures.
type classRow struct {
	Outcome, Class, Advice string
	// N counts the class among the Sampled exchanges of the outcome;
	// OutcomeN is the outcome's exact count, so N is exact when Sampled
	// equals it.
	N, Sampled, OutcomeN int64
	Href, ExampleHref    string
}

type subjectPage struct {
	Dim, Name           string
	Totals              totals
	Failed, OK          chart
	Classes             []classRow
	Sample              int
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
		p := subjectPage{Dim: d.name, Name: name, Keep: rng, Sample: classSample}
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
		ask("/api/v1/outcomes", params(abs, "group_by", "outcome", "limit", v.limit(100)), &first)
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
		// The error classes: a sample of each failing outcome.
		var failing []outcomeCount
		for _, oc := range p.Totals.ByOutcome {
			if oc.Failed {
				failing = append(failing, oc)
			}
		}
		samples := make([]list[queries.SearchRow], len(failing))
		c = v.calls(r)
		for i, oc := range failing {
			c.get("/api/v1/exchanges", params(abs, "outcome", oc.Outcome, "limit", v.limit(classSample)), &samples[i])
		}
		if err := c.wait(); err != nil {
			v.fail(w, r, err)
			return
		}
		p.Failed, p.OK = charts(breakdown.Rows, first.From, first.To, step)
		for i, oc := range failing {
			p.Classes = append(p.Classes, classesOf(oc, samples[i].Rows, rng, d, name)...)
			p.Failures = append(p.Failures, samples[i].Rows[:min(5, len(samples[i].Rows))]...)
		}
		sort.Slice(p.Failures, func(i, j int) bool { return p.Failures[i].TS.After(p.Failures[j].TS) })
		for i, b := range boards {
			p.Boards = append(p.Boards, newBoard(boardDims[i], b.Rows, rng, false))
		}
		p.RPCErrors, p.Retries, p.StreamCuts, p.RateLimits = rpc.Rows, retries.Rows, cuts.Rows, limits.Rows
		p.Disagreements, p.InputRequired = disagree.Rows, input.Rows
		v.renderRange(w, r, http.StatusOK, "subject", d.name+" "+name, p, tr)
	}
}

// classesOf counts the error classes among the sampled exchanges of one
// failing outcome.
func classesOf(oc outcomeCount, rows []queries.SearchRow, rng url.Values, d dim, name string) []classRow {
	by := map[string]*classRow{}
	var order []string
	for _, r := range rows {
		c := by[r.ErrorClass]
		if c == nil {
			c = &classRow{Outcome: oc.Outcome, Class: r.ErrorClass, Advice: r.RetryAdvice, OutcomeN: oc.N, Sampled: int64(len(rows)),
				Href:        "/exchanges?" + params(rng, d.filter, name, "outcome", oc.Outcome, "error_class", r.ErrorClass).Encode(),
				ExampleHref: link("/exchange", "id", r.ExchangeID)}
			by[r.ErrorClass] = c
			order = append(order, r.ErrorClass)
		}
		c.N++
	}
	out := make([]classRow, 0, len(order))
	for _, k := range order {
		out = append(out, *by[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].N > out[j].N })
	return out
}
