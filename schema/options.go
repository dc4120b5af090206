package schema

import (
	"errors"
	"flag"
	"fmt"
	"time"
)

// Options are the identifiers and settings a schema is rendered with. Only
// these are templated into DDL; nothing else is.
type Options struct {
	// DB is the ClickHouse database. Default "": the DSN's database when
	// the store applies the schema (chstore.Store.Migrate), else "mcplens".
	DB string
	// Cluster, when set, renders the cluster variant: ON CLUSTER,
	// Replicated* engines and a Distributed table in front of each
	// NAME_local table. Default "" (one node).
	Cluster string
	// ReplicaPath is the Keeper path of a replicated table, per shard.
	// Default "/clickhouse/tables/{shard}/{database}/{table}".
	ReplicaPath string
	// GlobalReplicaPath is the Keeper path of a table replicated to every
	// node (schema_migrations). Default "/clickhouse/tables/all/{database}/{table}".
	GlobalReplicaPath string
	// TTL is how long exchanges and quarantined lines are kept; 0 keeps
	// them forever. Default 30 days.
	TTL time.Duration
	// BodyTTL is how long bodies are kept; 0 keeps them forever. Default
	// 7 days.
	BodyTTL time.Duration
	// CreateDatabase makes Apply create DB if it does not exist.
	CreateDatabase bool
}

// DefaultOptions returns the options RegisterFlags would set.
func DefaultOptions() Options {
	var o Options
	o.RegisterFlags(flag.NewFlagSet("defaults", flag.ContinueOnError))
	return o
}

// RegisterFlags registers the schema flags with their defaults and help.
func (o *Options) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.DB, "clickhouse-database", "", "ClickHouse database of the mcplens tables (default: the DSN's, else mcplens)")
	fs.StringVar(&o.Cluster, "clickhouse-cluster", "", "ClickHouse cluster name: when set, --migrate creates replicated tables ON CLUSTER with Distributed tables in front")
	fs.StringVar(&o.ReplicaPath, "clickhouse-replica-path", "/clickhouse/tables/{shard}/{database}/{table}", "Keeper path of replicated tables (cluster variant)")
	fs.StringVar(&o.GlobalReplicaPath, "clickhouse-global-replica-path", "/clickhouse/tables/all/{database}/{table}", "Keeper path of tables replicated to every node (cluster variant)")
	fs.DurationVar(&o.TTL, "clickhouse-ttl", 30*24*time.Hour, "how long ClickHouse keeps exchange records, by their ts (0: forever); set when --migrate creates the tables")
	fs.DurationVar(&o.BodyTTL, "clickhouse-body-ttl", 7*24*time.Hour, "how long ClickHouse keeps exchange bodies (0: forever); set when --migrate creates the tables")
	fs.BoolVar(&o.CreateDatabase, "clickhouse-create-database", true, "--migrate creates the database when it does not exist")
}

func (o *Options) defaults() {
	if o.DB == "" {
		o.DB = "mcplens"
	}
	if o.ReplicaPath == "" {
		o.ReplicaPath = "/clickhouse/tables/{shard}/{database}/{table}"
	}
	if o.GlobalReplicaPath == "" {
		o.GlobalReplicaPath = "/clickhouse/tables/all/{database}/{table}"
	}
}

// Validate reports every invalid setting. Identifiers must be plain
// (letters, digits, underscore), since they are templated into DDL.
func (o *Options) Validate() error {
	var errs []error
	if o.DB != "" && !identifier.MatchString(o.DB) {
		errs = append(errs, fmt.Errorf("database %q: want letters, digits and underscores", o.DB))
	}
	if o.Cluster != "" && !identifier.MatchString(o.Cluster) {
		errs = append(errs, fmt.Errorf("cluster %q: want letters, digits and underscores", o.Cluster))
	}
	for _, p := range []string{o.ReplicaPath, o.GlobalReplicaPath} {
		if !replicaPath.MatchString(p) {
			errs = append(errs, fmt.Errorf("replica path %q: want a Keeper path of letters, digits, _-./ and {macros}", p))
		}
	}
	if o.TTL < 0 || o.BodyTTL < 0 {
		errs = append(errs, errors.New("retention must not be negative"))
	}
	if o.TTL%time.Second != 0 || o.BodyTTL%time.Second != 0 {
		errs = append(errs, errors.New("retention must be whole seconds"))
	}
	return errors.Join(errs...)
}
