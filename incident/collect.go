package incident

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
)

// collected is what a bundle holds, read from the store.
type collected struct {
	entries      []Entry
	truncated    bool // the range held more than MaxExchanges
	bodies       []schema.Body
	chains       map[string][]queries.ChainLink
	sessions     map[string][]queries.TimelineRow
	sessionOrder []string
	byLayer      map[string]map[string]int64 // layer -> outcome -> n
	classes      map[string]int64
	http200Fail  int64
	unsafeRetry  []string
}

// pageSize is the Search page the bundle walks the range with.
const pageSize = 1000

func collect(ctx context.Context, store queries.Store, p Params) (*collected, error) {
	c := &collected{chains: map[string][]queries.ChainLink{}, sessions: map[string][]queries.TimelineRow{},
		byLayer: map[string]map[string]int64{}, classes: map[string]int64{}}
	f := queries.Filter{From: p.From, To: p.To, Server: p.Server, Limit: pageSize}
	cursor := ""
	affected := map[string]bool{}
	for {
		page, err := store.Search(ctx, queries.SearchParams{Filter: f, Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("search exchanges: %w", err)
		}
		for _, row := range page.Rows {
			if len(c.entries) == p.MaxExchanges {
				c.truncated = true
				break
			}
			if err := c.add(ctx, store, row, affected); err != nil {
				return nil, err
			}
		}
		if c.truncated || page.Next == "" {
			break
		}
		cursor = page.Next
	}
	for s := range affected {
		c.sessionOrder = append(c.sessionOrder, s)
	}
	slices.Sort(c.sessionOrder)
	for _, s := range c.sessionOrder {
		rows, err := timeline(ctx, store, s, p)
		if err != nil {
			return nil, err
		}
		c.sessions[s] = rows
	}
	return c, nil
}

// add records one exchange; a failed one brings its body, its chains and
// its session into the bundle.
func (c *collected) add(ctx context.Context, store queries.Store, row queries.SearchRow, affected map[string]bool) error {
	d, err := store.Exchange(ctx, row.ExchangeID)
	if errors.Is(err, queries.ErrNotFound) {
		return nil // expired between the search and the read
	}
	if err != nil {
		return fmt.Errorf("read exchange %s: %w", row.ExchangeID, err)
	}
	x := d.Exchange
	c.entries = append(c.entries, Entry{Exchange: x, Evidence: evidenceOf(&x)})
	layer := string(x.Layer)
	if c.byLayer[layer] == nil {
		c.byLayer[layer] = map[string]int64{}
	}
	c.byLayer[layer][string(x.Outcome)]++
	if x.ErrorClass != "" {
		c.classes[string(x.ErrorClass)]++
	}
	if x.UnknownSideEffectRetry {
		c.unsafeRetry = append(c.unsafeRetry, x.ExchangeID)
	}
	if !failed(string(x.Outcome)) {
		return nil
	}
	if x.HTTPStatus == 200 {
		c.http200Fail++
	}
	if d.Body != nil {
		c.bodies = append(c.bodies, *d.Body)
	}
	if len(d.Chain) > 1 {
		c.chains[x.ChainID] = d.Chain
	}
	if x.SessionID != "" {
		affected[x.SessionID] = true
	}
	return nil
}

// timeline reads a whole session around the range.
func timeline(ctx context.Context, store queries.Store, session string, p Params) ([]queries.TimelineRow, error) {
	var out []queries.TimelineRow
	cursor := ""
	for {
		page, err := store.SessionTimeline(ctx, queries.SessionParams{SessionID: session, From: p.From.Add(-time.Hour), To: p.To.Add(time.Hour), Limit: pageSize, Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("timeline of session %s: %w", session, err)
		}
		out = append(out, page.Rows...)
		if page.Next == "" || len(out) >= 10*pageSize {
			return out, nil
		}
		cursor = page.Next
	}
}

// summary is the bundle's README.md.
func (c *collected) summary(p Params, stamp time.Time) string {
	var b strings.Builder
	scope := "all servers"
	if p.Server != "" {
		scope = "server `" + p.Server + "`"
	}
	fmt.Fprintf(&b, "# mcplens incident bundle\n\nRange %s to %s (UTC), %s. Built %s.\n\n",
		p.From.UTC().Format(time.RFC3339), p.To.UTC().Format(time.RFC3339), scope, stamp.Format(time.RFC3339))
	total := int64(len(c.entries))
	fmt.Fprintf(&b, "%d exchanges", total)
	if c.truncated {
		fmt.Fprintf(&b, " (the range holds more; the first %d by time are included)", p.MaxExchanges)
	}
	fmt.Fprintf(&b, "; %d failed behind an HTTP 200; %d re-sends may have run a side effect twice.\n\n", c.http200Fail, len(c.unsafeRetry))
	b.WriteString("## Exchanges per layer and outcome\n\n| layer | outcome | exchanges |\n|---|---|---|\n")
	layers := make([]string, 0, len(c.byLayer))
	for l := range c.byLayer {
		layers = append(layers, l)
	}
	sort.Strings(layers)
	for _, l := range layers {
		outs := make([]string, 0, len(c.byLayer[l]))
		for o := range c.byLayer[l] {
			outs = append(outs, o)
		}
		sort.Strings(outs)
		for _, o := range outs {
			fmt.Fprintf(&b, "| %s | %s | %d |\n", l, o, c.byLayer[l][o])
		}
	}
	if len(c.classes) > 0 {
		b.WriteString("\n## Error classes\n\n| error class | exchanges |\n|---|---|\n")
		names := make([]string, 0, len(c.classes))
		for k := range c.classes {
			names = append(names, k)
		}
		sort.Slice(names, func(i, j int) bool {
			if c.classes[names[i]] != c.classes[names[j]] {
				return c.classes[names[i]] > c.classes[names[j]]
			}
			return names[i] < names[j]
		})
		for _, k := range names {
			fmt.Fprintf(&b, "| %s | %d |\n", k, c.classes[k])
		}
	}
	if len(c.unsafeRetry) > 0 {
		b.WriteString("\n## Re-sends with unknown side effects\n\n")
		for _, id := range c.unsafeRetry {
			fmt.Fprintf(&b, "- `%s`\n", id)
		}
	}
	fmt.Fprintf(&b, "\n## Files\n\n- `exchanges.ndjson`: every exchange with its classification and the evidence that decided it (status, content type, SSE events, JSON-RPC id and code, the rule that fired).\n"+
		"- `bodies/`: the redacted, capped bodies of the %d failed exchanges that still have them.\n"+
		"- `chains.ndjson`: the %d retry and MRTR chains failed exchanges belong to.\n"+
		"- `sessions/`: the timeline of each of the %d affected sessions, in order.\n", len(c.bodies), len(c.chains), len(c.sessionOrder))
	return b.String()
}
