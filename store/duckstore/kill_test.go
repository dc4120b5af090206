package duckstore

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A store killed right after it migrated (nothing checkpointed, every
// migration in the write-ahead log) opens again: DuckDB cannot replay a
// column type change from its log, so migration 0010 checkpoints.
func TestReopenAfterKillAfterMigrate(t *testing.T) {
	if path := os.Getenv("DUCKSTORE_KILL_CHILD"); path != "" {
		if _, err := Open(context.Background(), path, Options{}); err != nil {
			t.Fatal(err)
		}
		os.Exit(0) // no Close: as a SIGKILL leaves it
	}
	path := filepath.Join(t.TempDir(), "killed.duckdb")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestReopenAfterKillAfterMigrate$")
	cmd.Env = append(os.Environ(), "DUCKSTORE_KILL_CHILD="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("reopen after the kill: %.400v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
