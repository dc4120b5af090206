package apitest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Shared is a store that a test binary opens once, for every test and
// benchmark that reads it, and closes from TestMain. The zero value is
// ready to use; it is safe for concurrent use.
type Shared[S interface{ Close() error }] struct {
	once   sync.Once
	s      S
	err    error
	opened bool
}

// Get opens the store with open the first time it is called and returns
// it; when opening failed it fails t, each time it is asked.
func (sh *Shared[S]) Get(t testing.TB, open func() (S, error)) S {
	t.Helper()
	sh.once.Do(func() {
		sh.s, sh.err = open()
		sh.opened = sh.err == nil
	})
	if sh.err != nil {
		t.Fatal(sh.err)
	}
	return sh.s
}

// Close closes the store if it was opened.
func (sh *Shared[S]) Close() error {
	if !sh.opened {
		return nil
	}
	return sh.s.Close()
}

// BenchPath is the file of the benchmark store: MCPLENS_BENCH_DB (which
// keeps it between runs, shared by the API's and the web view's
// benchmarks), else bench-1m.duckdb in dir.
func BenchPath(dir string) string {
	if p := os.Getenv("MCPLENS_BENCH_DB"); p != "" {
		return p
	}
	return filepath.Join(dir, "bench-1m.duckdb")
}
