// Package clickhousetest connects tests to a real ClickHouse server, the
// counterpart of pipeline/kafkatest: the shared server that
// deploy/clickhouse/clickhouse.sh starts (CLICKHOUSE_DSN, CLICKHOUSE_HTTP_URL),
// throwaway databases on it, and private servers a test may SIGKILL and
// restart on the same data directory.
//
// Without CLICKHOUSE_DSN the tests skip, except under CI=true, where they
// fail: CI must never pass by skipping ClickHouse.
package clickhousetest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcplens/mcplens/pipeline/kafkatest"
)

// Variables printed by `deploy/clickhouse/clickhouse.sh start`.
const (
	EnvDSN  = "CLICKHOUSE_DSN"      // clickhouse://default:@127.0.0.1:19000/mcplens
	EnvHTTP = "CLICKHOUSE_HTTP_URL" // http://127.0.0.1:19001
)

// Test users of clickhouse.sh's users.xml.
const (
	UserPassword   = "mcplens-test" //nolint:gosec // a test user's, in clickhouse.sh's users.xml
	ReaderPassword = "reader-test"  // password of user "reader" (readonly profile)
)

// opTimeout bounds each helper call on the server.
const opTimeout = time.Minute

const how = "start a server with `deploy/clickhouse/clickhouse.sh start` and export its output"

// missing skips the test, or fails it under CI=true.
func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s under CI=true: %s", what, how)
	}
	t.Skipf("%s: %s", what, how)
}

// DSN returns the shared server's DSN from CLICKHOUSE_DSN. When it is unset
// it skips the test, or fails it when CI=true.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := strings.TrimSpace(os.Getenv(EnvDSN))
	if dsn == "" {
		missing(t, EnvDSN+" is not set")
	}
	return dsn
}

// HTTPURL returns the shared server's HTTP interface from
// CLICKHOUSE_HTTP_URL, skipping or failing like DSN.
func HTTPURL(t testing.TB) string {
	t.Helper()
	u := strings.TrimRight(strings.TrimSpace(os.Getenv(EnvHTTP)), "/")
	if u == "" {
		missing(t, EnvHTTP+" is not set")
	}
	return u
}

// UniqueName returns kafkatest.UniqueName as an unquoted ClickHouse
// identifier: lowercase, with '_' for '-' and '.'.
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	return strings.Map(func(r rune) rune {
		switch {
		case r == '-', r == '.':
			return '_'
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return r
	}, kafkatest.UniqueName(t, prefix))
}

// WithDatabase returns dsn with its database replaced by db (and any
// other part kept).
func WithDatabase(t testing.TB, dsn, db string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse clickhouse DSN: %v", err)
	}
	u.Path = "/" + db
	return u.String()
}

// WithUser returns dsn with its user and password replaced.
func WithUser(t testing.TB, dsn, user, password string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parse clickhouse DSN: %v", err)
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// NewDatabase returns a DSN naming a fresh database on the server of dsn
// and the database's name. The database is not created (migrations do
// that, as on a fresh install); it is dropped when the test ends.
func NewDatabase(t testing.TB, dsn string) (string, string) {
	t.Helper()
	db := UniqueName(t, "mcplens_test")
	t.Cleanup(func() {
		// The server may be down on purpose (fault tests): not a failure.
		if err := Exec(dsn, "DROP DATABASE IF EXISTS "+db); err != nil {
			t.Logf("drop database %s: %v", db, err)
		}
	})
	return WithDatabase(t, dsn, db), db
}

// Exec runs one statement on the server of dsn, outside its database (so
// it works before the database exists).
func Exec(dsn, stmt string) error {
	o, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return fmt.Errorf("parse clickhouse DSN: %w", err)
	}
	o.Auth.Database = "default"
	conn, err := clickhouse.Open(o)
	if err != nil {
		return fmt.Errorf("open clickhouse %s: %w", o.Addr, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return conn.Exec(ctx, stmt)
}

// Query sends one statement to the HTTP interface at base (as user
// default) and returns the answer's body with its last newline cut.
func Query(t testing.TB, base, stmt string) string {
	t.Helper()
	out, err := QueryHTTP(base, stmt)
	if err != nil {
		t.Fatalf("clickhouse %q: %v", stmt, err)
	}
	return out
}

// QueryHTTP is Query returning its error.
func QueryHTTP(base, stmt string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/", strings.NewReader(stmt))
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return strings.TrimSuffix(string(body), "\n"), nil
}
