package querytest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mcplens/mcplens/schema"
)

// Seeder is a store a restarted ingester is seeded from.
type Seeder interface {
	Write(ctx context.Context, b *schema.Batch) error
	Seed(ctx context.Context, window time.Duration) ([]schema.Exchange, []schema.ToolAnnotation, error)
}

// CheckSeedKeepsMergedViews writes a record merged from two views and one
// from a single view, newer than anything s holds, and fails unless the
// seed gives back each one's merged views as written (the client's event
// ids a restart must count as seen, and its clock; none for the single
// view).
func CheckSeedKeepsMergedViews(t testing.TB, ctx context.Context, s Seeder, now time.Time) {
	t.Helper()
	rec := func(id string, merged []string) schema.Exchange {
		x := schema.Exchange{ExchangeID: id, RequestEventID: id + "-gw", ResponseEventID: id + "-gw", TS: now, EndTS: now,
			Source: schema.SourceGateway, Sources: []string{schema.SourceClient, schema.SourceGateway}, MergedEventIDs: merged}
		if merged != nil {
			x.MergedObservers, x.MergedOffsetsMS = []string{"client/cli-1"}, []float64{-2512.5}
		}
		x.Outcome, x.Layer, x.Transport, x.RetryAdvice, x.SideEffectRisk = "SUCCESS", "interaction", "json", "NONE", "none"
		return x
	}
	b := &schema.Batch{Token: "merged-views", Exchanges: []schema.Exchange{
		rec("merged-two", []string{"c-req", "c-resp"}), rec("merged-none", nil),
	}}
	if err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	recs, _, err := s.Seed(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]schema.Exchange{}
	for _, x := range recs {
		got[x.ExchangeID] = x
	}
	if g := got["merged-two"]; !slices.Equal(g.MergedEventIDs, []string{"c-req", "c-resp"}) ||
		!slices.Equal(g.MergedObservers, []string{"client/cli-1"}) || !slices.Equal(g.MergedOffsetsMS, []float64{-2512.5}) {
		t.Errorf("seed gave merged views %q %q %v, want [c-req c-resp] [client/cli-1] [-2512.5] (seeded %d records)",
			g.MergedEventIDs, g.MergedObservers, g.MergedOffsetsMS, len(recs))
	}
	if g, ok := got["merged-none"]; !ok || len(g.MergedEventIDs)+len(g.MergedObservers)+len(g.MergedOffsetsMS) != 0 {
		t.Errorf("seed gave a single view merged views %q %q %v (found %v)", g.MergedEventIDs, g.MergedObservers, g.MergedOffsetsMS, ok)
	}
}
