package clickhousetest

import (
	"strings"
	"testing"
)

// TestServerSurvivesKill starts a private server, stores a row, SIGKILLs
// the server and restarts it on the same data directory: the row is back.
func TestServerSurvivesKill(t *testing.T) {
	s := Start(t)
	s.Query(t, "CREATE DATABASE t")
	s.Query(t, "CREATE TABLE t.x (n UInt32) ENGINE = MergeTree ORDER BY n")
	s.Query(t, "INSERT INTO t.x VALUES (7)")
	s.Kill(t)
	if _, err := QueryHTTP(s.HTTPURL(), "SELECT 1"); err == nil {
		t.Fatal("the killed server still answers")
	}
	s.Restart(t)
	if got := s.Query(t, "SELECT sum(n) FROM t.x"); got != "7" {
		t.Fatalf("after SIGKILL and restart: sum %q, want 7", got)
	}
	if err := Exec(s.DSN(), "DROP DATABASE t"); err != nil {
		t.Fatalf("native protocol: %v", err)
	}
}

// TestNewDatabase: the database of the returned DSN does not exist until
// created and is gone after the test.
func TestNewDatabase(t *testing.T) {
	dsn := DSN(t)
	base := HTTPURL(t)
	var db string
	t.Run("inner", func(t *testing.T) {
		var dbDSN string
		dbDSN, db = NewDatabase(t, dsn)
		if !strings.HasSuffix(dbDSN, "/"+db) {
			t.Fatalf("DSN %s does not name %s", dbDSN, db)
		}
		if got := Query(t, base, "SELECT count() FROM system.databases WHERE name = '"+db+"'"); got != "0" {
			t.Fatalf("database %s exists before anyone created it", db)
		}
		if err := Exec(dsn, "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
	})
	if got := Query(t, base, "SELECT count() FROM system.databases WHERE name = '"+db+"'"); got != "0" {
		t.Fatalf("database %s left behind", db)
	}
}
