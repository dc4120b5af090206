package main

import (
	"context"
	"flag"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore"
)

// registerClickHouseFlags registers the ClickHouse settings a reader
// needs (credentials, TLS, dial timeout); the insert settings of
// chstore.Config keep their defaults.
func registerClickHouseFlags(c *chstore.Config, fs *flag.FlagSet) {
	*c = chstore.DefaultConfig()
	// Defaults "" so that --help never prints a password; openClickHouse
	// falls back to the environment.
	fs.StringVar(&c.User, "clickhouse-user", "", "ClickHouse user, overriding the DSN's (default: env CLICKHOUSE_USER)")
	fs.StringVar(&c.Password, "clickhouse-password", "", "ClickHouse password, overriding the DSN's (default: env CLICKHOUSE_PASSWORD, preferable to the flag)")
	fs.StringVar(&c.CAFile, "clickhouse-ca-file", "", "PEM file of CAs to verify the ClickHouse server with (implies TLS)")
	fs.DurationVar(&c.DialTimeout, "clickhouse-dial-timeout", c.DialTimeout, "timeout of connecting to ClickHouse")
}

// openClickHouse connects to the ClickHouse store of --store; --migrate
// applies the schema with its default options (one node, default TTLs;
// migrate a cluster with ingest --migrate and its schema flags).
func openClickHouse(ctx context.Context, cfg config, logger zerolog.Logger, reg prometheus.Registerer) (queries.Store, func() error, error) {
	ch := cfg.ClickHouse
	if ch.User == "" {
		ch.User = os.Getenv("CLICKHOUSE_USER")
	}
	if ch.Password == "" {
		ch.Password = os.Getenv("CLICKHOUSE_PASSWORD")
	}
	s, err := chstore.Open(ctx, cfg.Store, ch, logger, reg)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Migrate {
		opts := schema.DefaultOptions()
		opts.DB = "" // the DSN's database
		if err := s.Migrate(ctx, opts); err != nil {
			s.Close()
			return nil, nil, err
		}
	}
	return s, s.Close, nil
}
