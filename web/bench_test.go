package web_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
	"github.com/mcplens/mcplens/store/duckstore"
)

var (
	bench apitest.Shared[*duckstore.Store]
)

// benchAPI is the API (and view) over the million-exchange store of the
// API's benchmarks (apitest.OpenBench; MCPLENS_BENCH_DB keeps the file).
func benchAPI(b *testing.B) http.Handler {
	b.Helper()
	return benchAPIOver(b, bench.Get(b, func() (*duckstore.Store, error) {
		return apitest.OpenBench(context.Background(), apitest.BenchPath(tmpDir))
	}))
}

// benchAPIOver is the API (and view) over store, on the bench clock.
func benchAPIOver(b *testing.B, store queries.Store) http.Handler {
	b.Helper()
	cfg := api.DefaultConfig()
	cfg.RateLimit = 0
	tokens, err := api.LoadTokens("", bodiesToken+" scopes=read,bodies name=bench")
	if err != nil {
		b.Fatal(err)
	}
	a, err := api.New(cfg, api.Deps{Store: store, Tokens: tokens, Logger: zerolog.Nop(),
		Now: func() time.Time { return apitest.BenchFrom.Add(apitest.BenchSpan) }})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// serve answers one GET as a signed-in visitor and fails on anything
// but 200.
func serve(b *testing.B, h http.Handler, path string, cookie bool) {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if cookie {
		req.AddCookie(&http.Cookie{Name: "mcplens_token", Value: bodiesToken})
	} else {
		req.Header.Set("Authorization", "Bearer "+bodiesToken)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("%s: %d %.300s", path, rec.Code, rec.Body)
	}
}

func percentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	ms := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}

// BenchmarkPages measures each page over a million stored exchanges,
// through the whole handler (cookie, the page's API calls, rendering),
// for the last 24h and the whole 30 days; it reports the median and
// 99th percentile of the final run (use -benchtime 20x or more).
func BenchmarkPages(b *testing.B) { benchPages(b, benchAPI(b)) }

// BenchmarkPagesClickHouse is BenchmarkPages over the same million
// exchanges in a database of their own on the real ClickHouse server of
// CLICKHOUSE_DSN (built first, about a minute; dropped at the end).
func BenchmarkPagesClickHouse(b *testing.B) {
	store, err := apitest.OpenBenchClickHouse(b.Context(), clickhousetest.DSN(b), clickhousetest.UniqueName(b, "mcplens_bench"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	benchPages(b, benchAPIOver(b, store))
}

func benchPages(b *testing.B, h http.Handler) {
	month := url.Values{"from": {apitest.BenchFrom.Format(time.RFC3339)}, "to": {apitest.BenchFrom.Add(apitest.BenchSpan).Format(time.RFC3339)}}.Encode()
	rng := rand.New(rand.NewPCG(1, 2))
	type page struct {
		name string
		path func() string
	}
	var pages []page
	for _, w := range []struct{ name, q string }{{"24h", "from=-24h"}, {"30d", month}} {
		for _, p := range []struct{ name, path string }{
			{"overview", "/?"},
			{"server", "/server?name=srv-03&"},
			{"tool", "/tool?name=tool_07&"},
			{"client", "/client?name=client-05&"},
			{"exchanges-failed", "/exchanges?layer=transport&"},
		} {
			path := p.path + w.q
			pages = append(pages, page{p.name + "/" + w.name, func() string { return path }})
		}
	}
	pages = append(pages,
		page{"exchange", func() string { return "/exchange?id=" + apitest.GeneratedID(rng.IntN(apitest.BenchExchanges)) }},
		page{"session", func() string { return fmt.Sprintf("/session?id=sess-%07d&%s", 0, month) }},
	)
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				path := p.path()
				start := time.Now()
				serve(b, h, path, true)
				lat = append(lat, time.Since(start))
			}
			percentiles(b, lat)
		})
	}
}

// BenchmarkOverviewRatio compares the overview page with its yardstick:
// the same API answers asked one after the other straight from the REST
// API, alternating in rounds so that load from elsewhere hits both
// alike. ratio < 1 means the page's parallel calls and its rendering
// cost less than the answers it shows asked in a row.
func BenchmarkOverviewRatio(b *testing.B) {
	h := benchAPI(b)
	for _, w := range []struct{ name, q string }{{"24h", "from=-24h"}, {"30d", url.Values{"from": {apitest.BenchFrom.Format(time.RFC3339)}, "to": {apitest.BenchFrom.Add(apitest.BenchSpan).Format(time.RFC3339)}}.Encode()}} {
		calls := []string{
			"/api/v1/servers?order_by=errors&limit=10&" + w.q,
			"/api/v1/tools?order_by=errors&limit=10&" + w.q,
			"/api/v1/clients?order_by=errors&limit=10&" + w.q,
			"/api/v1/outcomes?group_by=layer&bucket=1h&limit=1000&" + w.q,
			"/api/v1/questions/http200-jsonrpc-errors?limit=20&" + w.q,
			"/api/v1/questions/unknown-side-effect-retries?limit=20&" + w.q,
			"/api/v1/questions/stream-cuts?limit=10&" + w.q,
			"/api/v1/questions/rate-limits?limit=10&" + w.q,
		}
		b.Run(w.name, func(b *testing.B) {
			var pageT, apiT time.Duration
			for b.Loop() {
				start := time.Now()
				serve(b, h, "/?"+w.q, true)
				pageT += time.Since(start)
				start = time.Now()
				for _, c := range calls {
					serve(b, h, c, false)
				}
				apiT += time.Since(start)
			}
			b.ReportMetric(float64(pageT)/float64(apiT), "ratio")
			b.ReportMetric(float64(pageT.Microseconds())/1000/float64(b.N), "page-ms")
			b.ReportMetric(float64(apiT.Microseconds())/1000/float64(b.N), "api-ms")
		})
	}
}
