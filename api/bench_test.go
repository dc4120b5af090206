package api

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
	"github.com/mcplens/mcplens/store/duckstore"
)

// The benchmark store (apitest.OpenBench). MCPLENS_BENCH_DB names a file
// to keep between runs (built on first use); otherwise it is built in a
// temporary directory.
const benchExchanges = apitest.BenchExchanges

var (
	benchFrom = apitest.BenchFrom
	benchSpan = apitest.BenchSpan
	bench     apitest.Shared[*duckstore.Store]
)

func benchStore(b *testing.B) *duckstore.Store {
	b.Helper()
	return bench.Get(b, func() (*duckstore.Store, error) {
		return apitest.OpenBench(context.Background(), apitest.BenchPath(tmpDir))
	})
}

// BenchmarkRoutes measures each question, breakdown and lookup route over
// a million stored exchanges, through the whole handler (auth, params,
// store, JSON), for the default window (the last 24h) and the whole 30
// days. It reports the median and 99th percentile latency of the requests
// of the final run; use -benchtime 50x or more for a stable p99.
func BenchmarkRoutes(b *testing.B) { benchRoutes(b, benchStore(b)) }

// BenchmarkRoutesClickHouse is BenchmarkRoutes over the same million
// exchanges in a database of their own on the real ClickHouse server of
// CLICKHOUSE_DSN (built first, a few minutes; dropped at the end).
func BenchmarkRoutesClickHouse(b *testing.B) {
	dsn := clickhousetest.DSN(b)
	store, err := apitest.OpenBenchClickHouse(b.Context(), dsn, clickhousetest.UniqueName(b, "mcplens_bench"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	benchRoutes(b, store)
}

func benchRoutes(b *testing.B, store queries.Store) {
	cfg := DefaultConfig()
	cfg.RateLimit, cfg.QueryTimeout = 0, time.Minute // a slow answer is measured, not cut
	a, err := New(cfg, Deps{Store: store, Tokens: testTokens(b), Now: func() time.Time { return benchFrom.Add(benchSpan) }})
	if err != nil {
		b.Fatal(err)
	}
	day := "from=-24h"
	month := "from=" + benchFrom.Format(time.RFC3339) + "&to=" + benchFrom.Add(benchSpan).Format(time.RFC3339)
	rng := rand.New(rand.NewPCG(1, 2))
	type bench struct {
		name string
		path func() string
	}
	var benches []bench
	for _, w := range []struct{ name, q string }{{"24h", day}, {"30d", month}} {
		for _, r := range []struct{ name, path string }{
			{"http200-jsonrpc-errors", "/api/v1/questions/http200-jsonrpc-errors"},
			{"unknown-side-effect-retries", "/api/v1/questions/unknown-side-effect-retries"},
			{"client-disagreements", "/api/v1/questions/client-disagreements"},
			{"rate-limits", "/api/v1/questions/rate-limits"},
			{"stream-cuts", "/api/v1/questions/stream-cuts"},
			{"input-required", "/api/v1/questions/input-required"},
			{"outcomes", "/api/v1/outcomes?x"},
			{"outcomes-by-server-hourly", "/api/v1/outcomes?group_by=server&bucket=1h&limit=1000&x"},
			{"servers", "/api/v1/servers"},
			{"clients-by-errors", "/api/v1/clients?order_by=errors&x"},
			{"tools-by-p99", "/api/v1/tools?order_by=p99&x"},
			{"exchanges-page", "/api/v1/exchanges"},
			{"exchanges-rate-limited", "/api/v1/exchanges?error_class=RATE_LIMITED&x"},
			{"exchanges-text", "/api/v1/exchanges?q=internal&x"},
		} {
			path := r.path + "?" + w.q
			if r.path[len(r.path)-1] == 'x' {
				path = r.path[:len(r.path)-1] + w.q
			}
			benches = append(benches, bench{r.name + "/" + w.name, func() string { return path }})
		}
	}
	benches = append(benches,
		bench{"exchange", func() string {
			return "/api/v1/exchanges/" + apitest.GeneratedID(rng.IntN(benchExchanges))
		}},
		bench{"session-timeline", func() string {
			return "/api/v1/sessions/" + fmt.Sprintf("sess-%07d", 0) + "/timeline?" + month
		}},
	)
	for _, bb := range benches {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, bb.path(), nil)
				req.Header.Set("Authorization", "Bearer "+bodiesToken)
				rec := httptest.NewRecorder()
				start := time.Now()
				a.ServeHTTP(rec, req)
				lat = append(lat, time.Since(start))
				if rec.Code != 200 {
					b.Fatalf("%s: %d %s", req.URL, rec.Code, rec.Body)
				}
			}
			slices.Sort(lat)
			ms := func(q float64) float64 {
				return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(ms(0.50), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}
