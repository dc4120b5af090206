package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/queries"
)

// faultStore is the real store with Leaderboard and Exchange replaced: a
// fake only for faults a real store cannot be made to show on demand.
type faultStore struct {
	queries.Store
	leaderboard func(ctx context.Context) ([]queries.LeaderboardRow, error)
	exchange    func(ctx context.Context, id string) (*queries.ExchangeDetail, error)
}

func (f *faultStore) Leaderboard(ctx context.Context, p queries.LeaderboardParams) ([]queries.LeaderboardRow, error) {
	if f.leaderboard != nil {
		return f.leaderboard(ctx)
	}
	return f.Store.Leaderboard(ctx, p)
}

func (f *faultStore) Exchange(ctx context.Context, id string) (*queries.ExchangeDetail, error) {
	if f.exchange != nil {
		return f.exchange(ctx, id)
	}
	return f.Store.Exchange(ctx, id)
}

// stall holds store calls that ignore their context until the tests end.
var (
	stall     = make(chan struct{})
	stallOnce sync.Once
)

func releaseStalled() { stallOnce.Do(func() { close(stall) }) }

func problemOf(t *testing.T, rec *httptest.ResponseRecorder, status int) Problem {
	t.Helper()
	p := decode[Problem](t, rec, status)
	if ct := rec.Header().Get("Content-Type"); ct != problemJSON {
		t.Errorf("Content-Type %q, want %s", ct, problemJSON)
	}
	if p.Status != status || p.Type == "" || p.Title == "" || p.Detail == "" {
		t.Errorf("problem %+v", p)
	}
	for _, leak := range []string{"goroutine", ".go:", "panic", "sql:", "duckdb", "Binder", "runtime."} {
		if strings.Contains(rec.Body.String(), leak) {
			t.Errorf("problem leaks internals (%q): %s", leak, rec.Body)
		}
	}
	return p
}

// TestStoreClosed: a store that is down answers 503, and /readyz says so.
func TestStoreClosed(t *testing.T) {
	s, err := apitest.OpenCorpus(context.Background(), filepath.Join(t.TempDir(), "closed.duckdb"), apitest.CorpusPath())
	if err != nil {
		t.Fatal(err)
	}
	a := newTestAPI(t, s)
	if rec := a.get("/readyz", ""); rec.Code != 200 {
		t.Fatalf("readyz before close: %d", rec.Code)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, r := range a.routes {
		if r.scope == "" && r.path != "/readyz" {
			continue
		}
		rec := a.get(validPath(r), bodiesToken)
		problemOf(t, rec, http.StatusServiceUnavailable)
		if rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s: 503 without Retry-After", r.path)
		}
	}
	if !strings.Contains(a.logs.String(), "store unavailable") {
		t.Error("the store failure is not logged")
	}
}

// TestStoreDeadline: a store that does not answer in time gives 503 at
// the query timeout, whether it honours its context or ignores it.
func TestStoreDeadline(t *testing.T) {
	const timeout = 150 * time.Millisecond
	for name, wait := range map[string]func(ctx context.Context){
		"honours its context": func(ctx context.Context) { <-ctx.Done() },
		"ignores its context": func(context.Context) { <-stall },
	} {
		t.Run(name, func(t *testing.T) {
			store := &faultStore{Store: corpusStore(t),
				leaderboard: func(ctx context.Context) ([]queries.LeaderboardRow, error) {
					wait(ctx)
					return nil, ctx.Err()
				},
				exchange: func(ctx context.Context, _ string) (*queries.ExchangeDetail, error) {
					wait(ctx)
					return nil, ctx.Err()
				},
			}
			a := newTestAPI(t, store, func(c *Config) { c.QueryTimeout = timeout })
			for _, path := range []string{"/api/v1/servers", "/api/v1/exchanges/x", "/readyz"} {
				start := time.Now()
				rec := a.get(path, readToken)
				took := time.Since(start)
				p := problemOf(t, rec, http.StatusServiceUnavailable)
				if took < timeout-10*time.Millisecond || took > timeout+time.Second {
					t.Errorf("%s answered after %s, want the query timeout %s", path, took, timeout)
				}
				if path != "/readyz" && !strings.Contains(p.Detail, "timeout") {
					t.Errorf("%s: detail %q", path, p.Detail)
				}
			}
		})
	}
}

// TestRealStoreDeadline: a deadline that has passed before DuckDB answers
// is a 503 too.
func TestRealStoreDeadline(t *testing.T) {
	a := newTestAPI(t, corpusStore(t), func(c *Config) { c.QueryTimeout = time.Nanosecond })
	problemOf(t, a.get("/api/v1/outcomes?"+fixtureRange+"&bucket=1m&group_by=tool", readToken), http.StatusServiceUnavailable)
}

// TestStoreErrors: an unexpected store error or a panic is a 500 problem
// that names nothing internal; the log has the cause.
func TestStoreErrors(t *testing.T) {
	store := &faultStore{Store: corpusStore(t),
		leaderboard: func(context.Context) ([]queries.LeaderboardRow, error) {
			return nil, errors.New(`run leaderboard on duckdb: Binder Error: column "secret_column" not found`)
		},
		exchange: func(_ context.Context, id string) (*queries.ExchangeDetail, error) {
			if id == "nil" {
				return nil, nil // the handler dereferences it: a panic in the handler
			}
			panic("store bug")
		},
	}
	a := newTestAPI(t, store)
	for _, path := range []string{"/api/v1/servers", "/api/v1/exchanges/nil", "/api/v1/exchanges/panic"} {
		p := problemOf(t, a.get(path, readToken), http.StatusInternalServerError)
		if p.RequestID == "" || !strings.Contains(a.logs.String(), p.RequestID) {
			t.Errorf("%s: request id %q not in the log", path, p.RequestID)
		}
	}
	logs := a.logs.String()
	for _, want := range []string{"secret_column", "store bug", "handler panicked", "stack"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
}

// TestOtherStatuses: unknown ids and paths, other methods, bodies, rate
// limits.
func TestOtherStatuses(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	if p := problemOf(t, a.get("/api/v1/exchanges/no-such-exchange", readToken), 404); p.Type != typeNotFound {
		t.Errorf("unknown exchange: %+v", p)
	}
	problemOf(t, a.get("/api/v1/nothing", readToken), 404)
	problemOf(t, a.get("/api/v1/servers/", readToken), 404)
	problemOf(t, a.get("/nothing", ""), 404)

	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodHead} {
		rec := a.do(httptest.NewRequest(m, "/api/v1/servers", nil))
		if rec.Code != 405 || rec.Header().Get("Allow") != "GET" {
			t.Errorf("%s: %d, Allow %q", m, rec.Code, rec.Header().Get("Allow"))
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/api/v1/servers", strings.NewReader(`{"q":1}`))
	req.Header.Set("Authorization", "Bearer "+readToken)
	problemOf(t, a.do(req), http.StatusRequestEntityTooLarge)
	req = httptest.NewRequest(http.MethodGet, "/healthz", strings.NewReader("x"))
	req.TransferEncoding = []string{"chunked"}
	req.ContentLength = -1
	problemOf(t, a.do(req), http.StatusRequestEntityTooLarge)
}

// TestRateLimit: past its burst a token gets 429 with Retry-After; other
// tokens keep their own buckets.
func TestRateLimit(t *testing.T) {
	// One request per 100 s after a burst of 3: the answer does not depend
	// on how long the store takes under load (at 0.5/s a slow ClickHouse
	// refilled the bucket between requests).
	a := newTestAPI(t, corpusStore(t), func(c *Config) { c.RateLimit, c.RateBurst = 0.01, 3 })
	path := "/api/v1/questions/stream-cuts?" + fixtureRange
	for i := 0; i < 3; i++ {
		if rec := a.get(path, readToken); rec.Code != 200 {
			t.Fatalf("request %d: %d", i, rec.Code)
		}
	}
	rec := a.get(path, readToken)
	p := problemOf(t, rec, http.StatusTooManyRequests)
	if after, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || after < 40 || after > 100 || p.Type != typeRateLimited {
		t.Errorf("Retry-After %q, problem %+v", rec.Header().Get("Retry-After"), p)
	}
	if rec := a.get(path, bodiesToken); rec.Code != 200 {
		t.Errorf("another token: %d", rec.Code)
	}
	if rec := a.get("/healthz", ""); rec.Code != 200 {
		t.Errorf("healthz is rate limited: %d", rec.Code)
	}
}

// TestClientGone: a client that leaves while the store works is counted
// as 499, not as a store failure.
func TestClientGone(t *testing.T) {
	store := &faultStore{Store: corpusStore(t), leaderboard: func(ctx context.Context) ([]queries.LeaderboardRow, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	a := newTestAPI(t, store)
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequest(http.MethodGet, "/api/v1/servers", nil).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+readToken)
	time.AfterFunc(50*time.Millisecond, cancel)
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	if rec.Code != statusClientClosed || strings.Contains(a.logs.String(), "store unavailable") {
		t.Errorf("status %d, log %s", rec.Code, a.logs)
	}
}
