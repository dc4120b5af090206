package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/internal/leaktest"
	"github.com/mcplens/mcplens/internal/logging/logtest"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// testNow is the clock of the tests: the corpus spans November 2026.
var testNow = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

// The tokens of the tests.
const (
	readToken       = "read-token-0123456789abcdef"
	bodiesToken     = "bodies-token-0123456789abcdef"
	bodiesOnlyToken = "bodies-only-token-0123456789"
	wrongToken      = "wrong-token-0123456789abcdef"
)

var (
	tmpDir string
	corpus apitest.Shared[corpusDB]
)

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "mcplens-api-test")
	if err != nil {
		panic(err)
	}
	tmpDir = dir
	code := m.Run()
	if err := corpus.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close corpus store:", err)
		code = 1
	}
	releaseStalled()
	os.RemoveAll(dir)
	if code == 0 {
		if err := leaktest.Wait(5*time.Second, "mcplens/mcplens/api."); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.bench").Value.String() == "" {
		if err := testContract.coverage(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// corpusStore is the store holding the conformance corpus, shared by the
// tests (they only read it): DuckDB, or the ClickHouse server of
// CLICKHOUSE_DSN when MCPLENS_TEST_ENGINE=clickhouse.
func corpusStore(t testing.TB) queries.Store {
	t.Helper()
	engine, err := apitest.Engine()
	if err != nil {
		t.Fatal(err)
	}
	var dsn string
	if engine == "clickhouse" {
		dsn = clickhousetest.DSN(t) // skips or fails here, not inside the Once
	}
	return corpus.Get(t, func() (corpusDB, error) {
		var s corpusDB
		var err error
		switch engine {
		case "clickhouse":
			s, err = apitest.OpenCorpusClickHouse(context.Background(), dsn, clickhousetest.UniqueName(t, "mcplens_apitest"), apitest.CorpusPath())
		default:
			s, err = apitest.OpenCorpus(context.Background(), filepath.Join(tmpDir, "corpus.duckdb"), apitest.CorpusPath())
		}
		if err != nil {
			return nil, fmt.Errorf("load the conformance corpus: %w", err)
		}
		return s, nil
	})
}

// corpusDB is the store of the corpus on either engine.
type corpusDB interface {
	queries.Store
	Close() error
}

func testTokens(t testing.TB) *Tokens {
	t.Helper()
	var tk Tokens
	h := sha256.Sum256([]byte(bodiesToken))
	list := readToken + " scopes=read name=reader; sha256:" + hex.EncodeToString(h[:]) +
		" scopes=read,bodies name=postmortem; " + bodiesOnlyToken + " scopes=bodies name=bodies-only"
	if err := tk.ParseTokenList(list, "test"); err != nil {
		t.Fatal(err)
	}
	return &tk
}

// testAPI is an API over a store with the test tokens, a fixed clock, a
// captured log and a fresh registry.
type testAPI struct {
	*API
	t    testing.TB
	logs *logtest.Buffer
	reg  *prometheus.Registry
}

func newTestAPI(t testing.TB, store queries.Store, configure ...func(*Config)) *testAPI {
	t.Helper()
	cfg := DefaultConfig()
	cfg.RateLimit = 0
	if engine, _ := apitest.Engine(); engine == "clickhouse" {
		// A bundle reads every failed exchange one query at a time; on
		// the shared, loaded CI machine a ClickHouse round trip can take
		// 100 ms, so the default 10 s would time out a healthy server.
		cfg.QueryTimeout = 3 * time.Minute // a minute was exceeded at load 29
	}
	for _, f := range configure {
		f(&cfg)
	}
	logs := &logtest.Buffer{}
	reg := prometheus.NewRegistry()
	a, err := New(cfg, Deps{
		Store: store, Tokens: testTokens(t), Logger: zerolog.New(logs), Registerer: reg, Gatherer: reg,
		Now: func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	return &testAPI{API: a, t: t, logs: logs, reg: reg}
}

// get sends GET path with a bearer token ("" for none), checks the
// response against the OpenAPI document and returns it.
func (a *testAPI) get(path, token string) *httptest.ResponseRecorder {
	a.t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return a.do(req)
}

func (a *testAPI) do(req *http.Request) *httptest.ResponseRecorder {
	a.t.Helper()
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	testContract.check(a.t, req, rec)
	return rec
}

// decode decodes a JSON response body, failing the test on a status
// other than want.
func decode[T any](t testing.TB, rec *httptest.ResponseRecorder, want int) T {
	t.Helper()
	var v T
	if rec.Code != want {
		t.Fatalf("status %d, want %d: %s", rec.Code, want, rec.Body.String())
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("decode %s: %v", rec.Body.String(), err)
	}
	return v
}

// fixtureRange is the query string of a range covering the corpus.
const fixtureRange = "from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z"
