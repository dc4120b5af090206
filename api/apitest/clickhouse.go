package apitest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// EnvEngine selects the store every API test runs on: "duckdb" (the
// default) or "clickhouse", the server of CLICKHOUSE_DSN. make test runs
// the API tests once per engine.
const EnvEngine = "MCPLENS_TEST_ENGINE"

// Engine returns the engine MCPLENS_TEST_ENGINE names, or an error for an
// unknown one.
func Engine() (string, error) {
	switch e := strings.TrimSpace(os.Getenv(EnvEngine)); e {
	case "", "duckdb":
		return "duckdb", nil
	case "clickhouse":
		return e, nil
	default:
		return "", fmt.Errorf("%s=%q: want duckdb or clickhouse", EnvEngine, e)
	}
}

// ClickHouseCorpus is the conformance corpus in its own database on a
// ClickHouse server. Close drops the database.
type ClickHouseCorpus struct {
	*chstore.Store
	DB   string
	drop func() error
}

// OpenCorpusClickHouse migrates database db (which must not exist yet) on
// the server of dsn, without TTLs (the corpus is weeks old), and stores
// the corpus at corpusPath in it, as ingest --migrate would.
func OpenCorpusClickHouse(ctx context.Context, dsn, db, corpusPath string) (*ClickHouseCorpus, error) {
	b, err := querytest.ReadCorpus(corpusPath)
	if err != nil {
		return nil, err
	}
	s, err := OpenClickHouse(ctx, dsn, db)
	if err != nil {
		return nil, err
	}
	b.Token = "corpus"
	if err := s.Write(ctx, b); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// OpenClickHouse migrates a fresh database db on the server of dsn
// without TTLs and opens the store on it.
func OpenClickHouse(ctx context.Context, dsn, db string) (*ClickHouseCorpus, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse clickhouse DSN: %w", err)
	}
	u.Path = "/" + db
	s, err := chstore.Open(ctx, u.String(), chstore.DefaultConfig(), zerolog.Nop(), nil)
	if err != nil {
		return nil, err
	}
	opts := schema.DefaultOptions()
	opts.TTL, opts.BodyTTL = 0, 0
	if err := s.Migrate(ctx, opts); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	drop := func() error { return clickhousetest.Exec(dsn, "DROP DATABASE IF EXISTS "+db) }
	return &ClickHouseCorpus{Store: s, DB: db, drop: drop}, nil
}

// Close drops the database and closes the store.
func (c *ClickHouseCorpus) Close() error { return errors.Join(c.drop(), c.Store.Close()) }

var _ queries.Store = (*ClickHouseCorpus)(nil)
