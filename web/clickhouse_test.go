package web_test

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// TestBrowserClickHouse is TestBrowser over the same corpus on the real
// ClickHouse server of CLICKHOUSE_DSN (it skips without one, and fails
// under CI=true, where .ci/run starts it).
func TestBrowserClickHouse(t *testing.T) {
	dsn, _ := clickhousetest.NewDatabase(t, clickhousetest.DSN(t))
	s, err := chstore.Open(t.Context(), dsn, chstore.DefaultConfig(), zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	opts := schema.DefaultOptions()
	opts.TTL, opts.BodyTTL = 0, 0 // the corpus is weeks old
	if err := s.Migrate(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	b, err := querytest.ReadCorpus(apitest.CorpusPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	browse(t, startSite(t, s), false)
}
