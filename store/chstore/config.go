package chstore

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/mcplens/mcplens/internal/secret"
)

// Config is the ClickHouse store's configuration. RegisterFlags sets the
// defaults; the DSN comes from the sink URL (--to), credentials from flags
// or the environment (CLICKHOUSE_USER, CLICKHOUSE_PASSWORD) so that they
// stay out of process listings.
type Config struct {
	// User and Password override the DSN's; when empty, CLICKHOUSE_USER and
	// CLICKHOUSE_PASSWORD do (read when the store opens, so that --help
	// never shows them). The password never prints (secret.String).
	User     string
	Password secret.String
	// CAFile is a PEM bundle to verify the server with (implies TLS);
	// otherwise the DSN's secure=true uses the system roots.
	CAFile string
	// MaxInsertRows bounds the rows of one INSERT (and so the memory a
	// batch takes to encode); a larger pipeline batch is sent as several
	// inserts. Default 100,000.
	MaxInsertRows int
	// RetryAttempts, RetryMin and RetryMax bound the retries of an insert
	// that failed with a transient error (network, timeouts, too many
	// parts, memory limit). Defaults 5, 100ms, 5s. After them Write returns
	// the error and the pipeline backs off and retries the batch.
	RetryAttempts      int
	RetryMin, RetryMax time.Duration
	// Cluster names the cluster of the cluster variant: inserts go to the
	// Distributed tables in the foreground (acknowledged once on the
	// shards). Default "" (one node).
	Cluster string
	// DialTimeout bounds connecting. Default 10s.
	DialTimeout time.Duration
	// InsertTimeout bounds one attempt of an INSERT, from preparing it
	// to the server's acknowledgement, and each write to a server
	// connection (deadline.go): a server that stops reading or answering
	// fails the attempt, which is retried, instead of stalling the
	// partition. Default 2m.
	InsertTimeout time.Duration
}

// DefaultConfig returns the configuration RegisterFlags would set.
func DefaultConfig() Config {
	var c Config
	c.RegisterFlags(flag.NewFlagSet("defaults", flag.ContinueOnError))
	return c
}

// RegisterFlags registers the store's flags with their defaults and help:
// the one set of ClickHouse flags that ingest, api and bundle share.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.User, "clickhouse-user", "", "ClickHouse user, overriding the DSN's (default: env CLICKHOUSE_USER)")
	fs.Var(&c.Password, "clickhouse-password", "ClickHouse password, overriding the DSN's (default: env CLICKHOUSE_PASSWORD, preferable to the flag, which process listings show)")
	fs.StringVar(&c.CAFile, "clickhouse-ca-file", "", "PEM file of CAs to verify the ClickHouse server with (implies TLS)")
	fs.IntVar(&c.MaxInsertRows, "clickhouse-max-insert-rows", 100_000, "most rows in one INSERT; larger batches are split")
	fs.IntVar(&c.RetryAttempts, "clickhouse-retry-attempts", 5, "attempts of an insert that fails with a transient error")
	fs.DurationVar(&c.RetryMin, "clickhouse-retry-min", 100*time.Millisecond, "first backoff between insert attempts")
	fs.DurationVar(&c.RetryMax, "clickhouse-retry-max", 5*time.Second, "longest backoff between insert attempts")
	fs.StringVar(&c.Cluster, "clickhouse-insert-cluster", "", "cluster of the cluster variant: insert into Distributed tables synchronously")
	fs.DurationVar(&c.DialTimeout, "clickhouse-dial-timeout", 10*time.Second, "timeout of connecting to ClickHouse")
	fs.DurationVar(&c.InsertTimeout, "clickhouse-insert-timeout", 2*time.Minute, "longest one INSERT attempt may take, sending to acknowledgement: a server that stops reading or answering fails the attempt (retried) instead of stalling the partition")
}

// Validate reports every invalid setting.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxInsertRows <= 0 {
		errs = append(errs, errors.New("clickhouse-max-insert-rows must be positive"))
	}
	if c.RetryAttempts <= 0 {
		errs = append(errs, errors.New("clickhouse-retry-attempts must be positive"))
	}
	if c.RetryMin <= 0 || c.RetryMax < c.RetryMin {
		errs = append(errs, fmt.Errorf("clickhouse retry backoff %s..%s: want 0 < min <= max", c.RetryMin, c.RetryMax))
	}
	if c.DialTimeout <= 0 {
		errs = append(errs, errors.New("clickhouse-dial-timeout must be positive"))
	}
	if c.InsertTimeout <= 0 {
		errs = append(errs, errors.New("clickhouse-insert-timeout must be positive"))
	}
	if c.CAFile != "" {
		if _, err := os.Stat(c.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("clickhouse-ca-file: %w", err))
		}
	}
	return errors.Join(errs...)
}
