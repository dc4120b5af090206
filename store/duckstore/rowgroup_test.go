package duckstore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// rowGroups is how many row groups table has in the file, after a
// checkpoint.
func rowGroups(t *testing.T, s *Store, table string) int {
	t.Helper()
	if _, err := s.DB().Exec("CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.DB().QueryRow("SELECT count(DISTINCT row_group_id) FROM pragma_storage_info(?)", table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRowGroupSize checks that the store's row group size reaches the
// file: 20,000 rows are two groups at 16,384, ten at 2,048, one at
// DuckDB's 122,880; that a file written with one size reopens, with its
// rows, under another; and that a size DuckDB refuses is an error.
func TestRowGroupSize(t *testing.T) {
	dir := t.TempDir()
	g := newGenerator(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	open := func(path string, size int) *Store {
		t.Helper()
		s, err := Open(context.Background(), path, Options{RowGroupSize: size})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	count := func(s *Store) int {
		t.Helper()
		var n int
		if err := s.DB().QueryRow("SELECT count(*) FROM exchanges").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct{ size, groups int }{{0, 2}, {2048, 10}, {122880, 1}} {
		s := open(filepath.Join(dir, fmt.Sprintf("rg-%d.duckdb", c.size)), c.size)
		if err := s.Write(context.Background(), g.batch(20_000)); err != nil {
			t.Fatal(err)
		}
		if got := rowGroups(t, s, "exchanges"); got != c.groups {
			t.Errorf("size %d: %d row groups for 20,000 rows, want %d", c.size, got, c.groups)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The file of 2,048-row groups, reopened and written at the default.
	s := open(filepath.Join(dir, "rg-2048.duckdb"), 0)
	if n := count(s); n != 20_000 {
		t.Errorf("reopened: %d rows, want 20000", n)
	}
	if err := s.Write(context.Background(), g.batch(20_000)); err != nil {
		t.Fatal(err)
	}
	if n := count(s); n != 40_000 {
		t.Errorf("written after reopening: %d rows, want 40000", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []int{-2048, 1000, 3000} {
		if s, err := Open(context.Background(), filepath.Join(dir, "bad.duckdb"), Options{RowGroupSize: bad}); err == nil {
			s.Close()
			t.Errorf("row group size %d accepted", bad)
		}
	}
}

// TestConnectionsOutliveOpenContext opens with a context that ends right
// after, then makes the pool open more connections: each attaches the
// file without that context.
func TestConnectionsOutliveOpenContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctx.duckdb")
	for _, readOnly := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		var s *Store
		var err error
		if readOnly {
			s, err = OpenReadOnly(ctx, path, Options{})
		} else {
			s, err = Open(ctx, path, Options{})
		}
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				conn, err := s.DB().Conn(context.Background())
				if err != nil {
					errs <- err
					return
				}
				defer conn.Close()
				var n int
				errs <- conn.QueryRowContext(context.Background(), "SELECT count(*) FROM exchanges").Scan(&n)
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("read-only %v: a later connection: %v", readOnly, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
