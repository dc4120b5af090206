package main

import (
	"testing"

	"github.com/mcplens/mcplens/store/duckstore"
)

// TestDuckDBOptions: the flags win; unset, a store ingest only writes
// gets duckstore.WriterOptions, and one it also serves the API from gets
// DuckDB's threads and duckstore.ServingMemoryLimit.
func TestDuckDBOptions(t *testing.T) {
	for _, tc := range []struct {
		api     string
		threads int
		memory  string
		want    duckstore.Options
	}{
		{"", 0, "", duckstore.WriterOptions()},
		{"", 0, "2GB", duckstore.Options{Threads: 1, MemoryLimit: "2GB"}},
		{"", 4, "", duckstore.Options{Threads: 4, MemoryLimit: "512MB"}},
		{"127.0.0.1:0", 0, "", duckstore.Options{MemoryLimit: duckstore.ServingMemoryLimit}},
		{"127.0.0.1:0", 2, "3GiB", duckstore.Options{Threads: 2, MemoryLimit: "3GiB"}},
	} {
		c := config{APIListen: tc.api, DuckDBThreads: tc.threads, DuckDBMemoryLimit: tc.memory}
		got := c.duckDBOptions()
		if got.Threads != tc.want.Threads || got.MemoryLimit != tc.want.MemoryLimit {
			t.Errorf("--api-listen %q --duckdb-threads %d --duckdb-memory-limit %q: threads %d, memory %q; want %d, %q",
				tc.api, tc.threads, tc.memory, got.Threads, got.MemoryLimit, tc.want.Threads, tc.want.MemoryLimit)
		}
	}
}
