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
// seed gives back each one's merged_event_ids as written (the client's
// event ids a restart must count as seen; none for the single view).
func CheckSeedKeepsMergedViews(t testing.TB, ctx context.Context, s Seeder, now time.Time) {
	t.Helper()
	rec := func(id string, merged []string) schema.Exchange {
		x := schema.Exchange{ExchangeID: id, RequestEventID: id + "-gw", ResponseEventID: id + "-gw", TS: now, EndTS: now,
			Source: schema.SourceGateway, Sources: []string{schema.SourceClient, schema.SourceGateway}, MergedEventIDs: merged}
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
	got := map[string][]string{}
	for _, x := range recs {
		got[x.ExchangeID] = x.MergedEventIDs
	}
	if g := got["merged-two"]; !slices.Equal(g, []string{"c-req", "c-resp"}) {
		t.Errorf("seed gave merged_event_ids %q, want [c-req c-resp] (seeded %d records)", g, len(recs))
	}
	if g, ok := got["merged-none"]; !ok || len(g) != 0 {
		t.Errorf("seed gave a single view merged_event_ids %q (found %v)", g, ok)
	}
}
