package queries

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mcplens/mcplens/schema"
)

// Store answers every question about stored exchanges. The DuckDB and
// ClickHouse stores implement it (through [Questions]); the REST API
// depends only on this interface. Implementations are safe for concurrent
// use.
type Store interface {
	// HTTP200RPCErrors lists servers that answer HTTP 200 with JSON-RPC
	// errors, by share of their 200s, each with its top codes and
	// messages (Filter.Limit bounds the (server, code, message) rows).
	HTTP200RPCErrors(ctx context.Context, f Filter) ([]RPCErrorServer, error)
	// UnknownSideEffectRetries lists re-sent tool calls whose earlier
	// attempt had an unknown outcome, in ts order.
	UnknownSideEffectRetries(ctx context.Context, p RetriesParams) ([]UnknownRetry, error)
	// Breakdown counts exchanges by layer and outcome per bucket and group.
	Breakdown(ctx context.Context, p BreakdownParams) ([]BreakdownRow, error)
	// Leaderboard ranks servers, clients or tools.
	Leaderboard(ctx context.Context, p LeaderboardParams) ([]LeaderboardRow, error)
	// ClientDisagreements counts exchanges whose client concluded
	// otherwise than the classification.
	ClientDisagreements(ctx context.Context, f Filter) ([]DisagreementRow, error)
	// RateLimits summarizes 429s and early re-sends per server and client.
	RateLimits(ctx context.Context, f Filter) ([]RateLimitRow, error)
	// StreamCuts summarizes cut streams and NO_RESPONSE per server.
	StreamCuts(ctx context.Context, f Filter) ([]StreamCutRow, error)
	// InputRequired summarizes MRTR input requests per server and tool.
	InputRequired(ctx context.Context, f Filter) ([]InputRequiredRow, error)
	// Exchange returns one exchange with its body and chains, or
	// ErrNotFound.
	Exchange(ctx context.Context, id string) (*ExchangeDetail, error)
	// SessionTimeline returns one page of a session's exchanges in order.
	SessionTimeline(ctx context.Context, p SessionParams) (Page[TimelineRow], error)
	// Search returns one page of matching exchanges in (ts, exchange_id)
	// order.
	Search(ctx context.Context, p SearchParams) (Page[SearchRow], error)
	// ToolAnnotations returns the latest annotations of every tool of a
	// server ("" for all servers).
	ToolAnnotations(ctx context.Context, server string) ([]schema.ToolAnnotation, error)
	// Quarantine lists quarantined input lines rejected in [From, To).
	Quarantine(ctx context.Context, f Filter) ([]QuarantineRow, error)
}

// ErrNotFound is returned by Exchange for an unknown id.
var ErrNotFound = errors.New("not found")

// Questions implements Store over an Engine. Safe for concurrent use if
// the Engine is.
type Questions struct {
	e Engine
	// Now is the wall clock for default time ranges; nil means time.Now.
	Now func() time.Time
}

var _ Store = (*Questions)(nil)

// On returns the questions answered by an engine.
func On(e Engine) *Questions { return &Questions{e: e} }

func (q *Questions) now() time.Time {
	if q.Now != nil {
		return q.Now()
	}
	return time.Now()
}

func rangeArgs(f Filter) Args {
	return Args{"from": f.From, "to": f.To, "limit": f.Limit}
}

// filterArgs are rangeArgs and the evidence filter, which every question
// over exchanges takes.
func filterArgs(f Filter) Args {
	a := rangeArgs(f)
	a["evidence"] = f.Evidence
	return a
}

// HTTP200RPCErrors implements Store.
func (q *Questions) HTTP200RPCErrors(ctx context.Context, f Filter) ([]RPCErrorServer, error) {
	f, err := f.normalized(q.now)
	if err != nil {
		return nil, err
	}
	a := filterArgs(f)
	a["server"] = f.Server
	rows, err := run[RPCErrorRow](ctx, q.e, "http200_rpc_errors", a)
	if err != nil {
		return nil, err
	}
	var out []RPCErrorServer
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].Server != r.Server {
			out = append(out, RPCErrorServer{Server: r.Server, RPCErrors: r.RPCErrors, HTTP200: r.HTTP200, Share: r.Share})
		}
		s := &out[len(out)-1]
		s.Top = append(s.Top, RPCErrorCode{JSONRPCCode: r.JSONRPCCode, ErrorMessage: r.ErrorMessage, N: r.N, ExampleIDs: r.ExampleIDs})
	}
	return out, nil
}

// UnknownSideEffectRetries implements Store.
func (q *Questions) UnknownSideEffectRetries(ctx context.Context, p RetriesParams) ([]UnknownRetry, error) {
	f, err := p.normalized(q.now)
	if err != nil {
		return nil, err
	}
	if p.ChainWindow == 0 {
		p.ChainWindow = time.Hour
	}
	if p.ChainWindow < 0 {
		return nil, fmt.Errorf("%w: negative chain window", ErrInvalid)
	}
	a := filterArgs(f)
	a["chain_from"] = ms(f.From.Add(-p.ChainWindow))
	a["server"], a["client"], a["tool"] = f.Server, f.Client, f.Tool
	return run[UnknownRetry](ctx, q.e, "unknown_side_effect_retries", a)
}

// Breakdown implements Store.
func (q *Questions) Breakdown(ctx context.Context, p BreakdownParams) ([]BreakdownRow, error) {
	f, err := p.normalized(q.now)
	if err != nil {
		return nil, err
	}
	if err := oneOf("group_by", p.GroupBy, GroupNone, GroupServer, GroupClient, GroupTool, GroupMethod, GroupErrorClass); err != nil {
		return nil, err
	}
	if p.Bucket < 0 || p.Bucket%time.Second != 0 || p.Bucket > 366*24*time.Hour {
		return nil, fmt.Errorf("%w: bucket %s: want whole seconds up to a year", ErrInvalid, p.Bucket)
	}
	a := filterArgs(f)
	a["bucket_s"] = int64(p.Bucket / time.Second)
	a["group_by"] = p.GroupBy
	a["server"], a["client"], a["tool"], a["method"] = f.Server, f.Client, f.Tool, f.Method
	return run[BreakdownRow](ctx, q.e, "breakdown", a)
}

// Leaderboard implements Store.
func (q *Questions) Leaderboard(ctx context.Context, p LeaderboardParams) ([]LeaderboardRow, error) {
	f, err := p.normalized(q.now)
	if err != nil {
		return nil, err
	}
	if p.GroupBy == "" {
		p.GroupBy = GroupServer
	}
	if p.OrderBy == "" {
		p.OrderBy = OrderVolume
	}
	if err := errors.Join(oneOf("group_by", p.GroupBy, GroupServer, GroupClient, GroupTool),
		oneOf("order_by", p.OrderBy, OrderVolume, OrderErrors, OrderP99)); err != nil {
		return nil, err
	}
	a := filterArgs(f)
	a["group_by"], a["order_by"] = p.GroupBy, p.OrderBy
	a["server"], a["client"] = f.Server, f.Client
	return run[LeaderboardRow](ctx, q.e, "leaderboard", a)
}

// ClientDisagreements implements Store.
func (q *Questions) ClientDisagreements(ctx context.Context, f Filter) ([]DisagreementRow, error) {
	f, err := f.normalized(q.now)
	if err != nil {
		return nil, err
	}
	a := filterArgs(f)
	a["server"], a["client"] = f.Server, f.Client
	return run[DisagreementRow](ctx, q.e, "client_disagreements", a)
}

// RateLimits implements Store.
func (q *Questions) RateLimits(ctx context.Context, f Filter) ([]RateLimitRow, error) {
	f, err := f.normalized(q.now)
	if err != nil {
		return nil, err
	}
	a := filterArgs(f)
	a["server"], a["client"] = f.Server, f.Client
	return run[RateLimitRow](ctx, q.e, "rate_limits", a)
}

// StreamCuts implements Store.
func (q *Questions) StreamCuts(ctx context.Context, f Filter) ([]StreamCutRow, error) {
	f, err := f.normalized(q.now)
	if err != nil {
		return nil, err
	}
	a := filterArgs(f)
	a["server"] = f.Server
	return run[StreamCutRow](ctx, q.e, "stream_cuts", a)
}

// InputRequired implements Store.
func (q *Questions) InputRequired(ctx context.Context, f Filter) ([]InputRequiredRow, error) {
	f, err := f.normalized(q.now)
	if err != nil {
		return nil, err
	}
	a := filterArgs(f)
	a["server"], a["tool"] = f.Server, f.Tool
	return run[InputRequiredRow](ctx, q.e, "input_required", a)
}

// ChainSpan is how far around an exchange its chain is looked for: a
// chain's links are at most the ingester's chain window (10m by default)
// apart, so 6h holds any chain of practical length.
const ChainSpan = 6 * time.Hour

// Exchange implements Store.
func (q *Questions) Exchange(ctx context.Context, id string) (*ExchangeDetail, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: empty exchange id", ErrInvalid)
	}
	type stamp struct {
		TS time.Time `json:"ts"`
	}
	found, err := run[stamp](ctx, q.e, "exchange_ts", Args{"exchange_id": id})
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("exchange %q: %w", id, ErrNotFound)
	}
	recs, err := run[schema.Exchange](ctx, q.e, "exchange", Args{"exchange_id": id, "ts": ms(found[0].TS)})
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 { // expired between the two reads
		return nil, fmt.Errorf("exchange %q: %w", id, ErrNotFound)
	}
	d := &ExchangeDetail{Exchange: recs[0]}
	ts := ms(d.Exchange.TS)
	// The body and the chain are independent reads: run them side by side.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		bodies, err := run[schema.Body](gctx, q.e, "exchange_body", Args{"exchange_id": id, "ts": ts})
		if len(bodies) > 0 {
			d.Body = &bodies[0]
		}
		return err
	})
	if d.Exchange.ChainID != "" {
		g.Go(func() error {
			var err error
			d.Chain, err = run[ChainLink](gctx, q.e, "chain", Args{
				"chain_id": d.Exchange.ChainID, "from": ts.Add(-ChainSpan), "to": ts.Add(ChainSpan), "limit": MaxLimit,
			})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return d, nil
}

// SessionTimeline implements Store.
func (q *Questions) SessionTimeline(ctx context.Context, p SessionParams) (Page[TimelineRow], error) {
	if p.SessionID == "" {
		return Page[TimelineRow]{}, fmt.Errorf("%w: empty session id", ErrInvalid)
	}
	if p.To.IsZero() {
		p.To = q.now()
	}
	if p.From.IsZero() {
		p.From = p.To.Add(-30 * 24 * time.Hour)
	}
	f, err := Filter{From: p.From, To: p.To, Limit: p.Limit}.normalized(q.now)
	if err != nil {
		return Page[TimelineRow]{}, err
	}
	ats, aid, err := after(f.From, p.Cursor)
	if err != nil {
		return Page[TimelineRow]{}, err
	}
	a := rangeArgs(f)
	a["session_id"], a["after_ts"], a["after_id"] = p.SessionID, ats, aid
	rows, err := run[TimelineRow](ctx, q.e, "session_timeline", a)
	if err != nil {
		return Page[TimelineRow]{}, err
	}
	page := Page[TimelineRow]{Rows: rows}
	if len(rows) == f.Limit {
		last := rows[len(rows)-1]
		page.Next = cursor{ts: last.TS, id: last.ExchangeID}.String()
	}
	return page, nil
}

// Search implements Store.
func (q *Questions) Search(ctx context.Context, p SearchParams) (Page[SearchRow], error) {
	f, err := p.normalized(q.now)
	if err != nil {
		return Page[SearchRow]{}, err
	}
	ats, aid, err := after(f.From, p.Cursor)
	if err != nil {
		return Page[SearchRow]{}, err
	}
	a := filterArgs(f)
	a["after_ts"], a["after_id"] = ats, aid
	a["server"], a["client"], a["tool"], a["method"] = f.Server, f.Client, f.Tool, f.Method
	a["outcome"], a["layer"], a["error_class"], a["q_like"] = p.Outcome, p.Layer, p.ErrorClass, likePattern(p.Q)
	rows, err := run[SearchRow](ctx, q.e, "search", a)
	if err != nil {
		return Page[SearchRow]{}, err
	}
	page := Page[SearchRow]{Rows: rows}
	if len(rows) == f.Limit {
		last := rows[len(rows)-1]
		page.Next = cursor{ts: last.TS, id: last.ExchangeID}.String()
	}
	return page, nil
}

// ToolAnnotations implements Store.
func (q *Questions) ToolAnnotations(ctx context.Context, server string) ([]schema.ToolAnnotation, error) {
	return run[schema.ToolAnnotation](ctx, q.e, "tool_annotations", Args{"server": server})
}

// Quarantine implements Store.
func (q *Questions) Quarantine(ctx context.Context, f Filter) ([]QuarantineRow, error) {
	f, err := f.normalized(q.now)
	if err != nil {
		return nil, err
	}
	return run[QuarantineRow](ctx, q.e, "quarantine", rangeArgs(f))
}

// ChainWindow returns what a restarted ingester needs to link retries
// across the restart (pipeline.Engine.Seed): every exchange stored within
// window of the newest one, in ts order, and the latest tool annotations.
func (q *Questions) ChainWindow(ctx context.Context, window time.Duration) ([]schema.Exchange, []schema.ToolAnnotation, error) {
	type latest struct {
		Latest time.Time `json:"latest"`
	}
	l, err := run[latest](ctx, q.e, "latest", Args{})
	if err != nil {
		return nil, nil, err
	}
	anns, err := q.ToolAnnotations(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	if len(l) == 0 {
		return nil, anns, nil
	}
	recs, err := run[schema.Exchange](ctx, q.e, "chain_window", Args{"from": ms(l[0].Latest.Add(-window))})
	if err != nil {
		return nil, nil, err
	}
	return recs, anns, nil
}

// likePattern turns search text into the LIKE pattern of search.sql: ""
// for no text, else the lower-cased text between % wildcards, with its own
// %, _ and ! escaped by '!'.
func likePattern(q string) string {
	if q == "" {
		return ""
	}
	return "%" + likeEscaper.Replace(strings.ToLower(q)) + "%"
}

var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
