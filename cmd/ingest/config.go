package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/internal/memlimit"
	"github.com/mcplens/mcplens/internal/progress"
	"github.com/mcplens/mcplens/internal/secret"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/agentgateway"
	"github.com/mcplens/mcplens/pipeline/otlpsource"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore"
	"github.com/mcplens/mcplens/store/duckstore"
)

// config is everything ingest is told by flags or environment.
type config struct {
	From      secret.URL
	Format    string
	To        secret.URL
	Listen    string
	LogLevel  string
	LogFormat string
	Migrate   bool
	FaultFile string
	Pipeline  pipeline.Config
	CH        chstore.Config
	Schema    schema.Options
	// APIListen serves the REST API from the ingester's own store (the
	// way to read a DuckDB file while it is written).
	APIListen  string
	TokensFile string
	API        api.Config
	Progress   progress.Config
	// MemoryLimit is the runtime's soft memory limit (memlimit.Parse).
	MemoryLimit string
	// GCPercent is the runtime's GOGC (memlimit.ParseGCPercent).
	GCPercent string
	// CPUProfile is where the run's CPU profile goes ("": none).
	CPUProfile string
	// DuckDBThreads bounds the worker threads of a duckdb: sink; 0 picks
	// them (duckDBOptions).
	DuckDBThreads int
	// DuckDBMemoryLimit is DuckDB's memory_limit for a duckdb: sink;
	// "" picks it (duckDBOptions).
	DuckDBMemoryLimit string
}

// listenAuto is --listen's default: the ops server on defaultListen for a
// Kafka source (a long-running ingester is scraped and probed), none for a
// file, so one-shot runs never clash over a port.
const (
	listenAuto    = "auto"
	defaultListen = "127.0.0.1:9464"
)

// listenAddr is the ops server's address for this run, "" for none.
func (c *config) listenAddr() string {
	if c.Listen != listenAuto {
		return c.Listen
	}
	if strings.HasPrefix(c.From.Reveal(), "kafka://") {
		return defaultListen
	}
	return ""
}

// duckDBOptions are the DuckDB settings of a duckdb: sink: the flags'
// where set, else duckstore.WriterOptions when ingest only writes. With
// --api-listen the same database also answers queries, which use
// DuckDB's threads (its default, one per core) and more of its cache
// (duckstore.ServingMemoryLimit).
func (c *config) duckDBOptions() duckstore.Options {
	o := duckstore.Options{Threads: c.DuckDBThreads, MemoryLimit: c.DuckDBMemoryLimit}
	d := duckstore.WriterOptions()
	if c.APIListen != "" {
		d = duckstore.Options{MemoryLimit: duckstore.ServingMemoryLimit}
	}
	if o.Threads == 0 {
		o.Threads = d.Threads
	}
	if o.MemoryLimit == "" {
		o.MemoryLimit = d.MemoryLimit
	}
	return o
}

// RegisterFlags registers every flag with its default and help text.
func (c *config) RegisterFlags(fs *flag.FlagSet) {
	fs.Var(&c.From, "from", "source: file:PATH (file:- for stdin, .gz ok) or kafka://HOST:PORT[,HOST:PORT]/TOPIC?group=G")
	fs.StringVar(&c.Format, "format", "contract", "what the source holds: contract (contract-v1 events), agentgateway (agentgateway's JSON access log) or otlp (OTLP trace export requests, protobuf or JSON: the Collector's Kafka exporter, one per message, or its file exporter, one JSON request per line)")
	c.To = "stdout"
	fs.Var(&c.To, "to", "sink: stdout, file:PATH (idempotent NDJSON), duckdb:PATH or clickhouse://[USER@]HOST:PORT/DB (the password from --clickhouse-password or CLICKHOUSE_PASSWORD; one in the URL is never logged)")
	fs.StringVar(&c.Listen, "listen", listenAuto, "address for /metrics, /healthz and /readyz, HOST:PORT (port 0: a free one, logged); auto: "+defaultListen+" for a kafka:// source, none for a file; empty: none")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", "json", "log format: json or console")
	fs.BoolVar(&c.Migrate, "migrate", false, "apply the store's schema migrations before ingesting (DuckDB always migrates)")
	fs.StringVar(&c.FaultFile, "fault-sink-down-while", "", "testing aid: while this file exists every sink write fails as if the store were down (exercises retries and the commit watermark)")
	c.Pipeline.RegisterFlags(fs)
	c.CH.RegisterFlags(fs)
	c.Schema.RegisterFlags(fs)
	fs.StringVar(&c.APIListen, "api-listen", "", "also serve the REST API on this address from the same store: the single-process mode for a DuckDB file, which only one process may write (empty: off)")
	fs.StringVar(&c.TokensFile, "tokens-file", "", "with --api-listen: file of API bearer tokens, one per line ('TOKEN scopes=read[,bodies] name=NAME'); MCPLENS_TOKENS adds ';'-separated entries")
	c.API.RegisterFlags(fs)
	c.Progress.RegisterFlags(fs)
	fs.StringVar(&c.MemoryLimit, "memory-limit", "", "soft memory limit of the process (e.g. 256MiB, 1GiB): the garbage collector works harder near it instead of letting the heap grow to twice what the windows hold; empty: GOMEMLIMIT's, if set, else none")
	fs.StringVar(&c.GCPercent, "gogc", "", "the garbage collector's GOGC: how far, in percent of the live heap, the heap grows before a collection (at least 10, or off); empty: the GOGC environment variable's, if set, else 50, since the windows' tables hold no pointers and collections are cheap")
	fs.IntVar(&c.DuckDBThreads, "duckdb-threads", 0, "DuckDB worker threads of a duckdb: sink; 0: one (DuckDB's default of one per core spent 10-40% more CPU on the same writes, for the same wall time on two cores), or DuckDB's default with --api-listen, whose queries use them")
	fs.StringVar(&c.DuckDBMemoryLimit, "duckdb-memory-limit", "", "DuckDB's memory limit of a duckdb: sink (e.g. 512MB, 2GiB): past it DuckDB drops cached blocks of the file, and a write larger than it still succeeds; empty: "+duckstore.WriterOptions().MemoryLimit+", or "+duckstore.ServingMemoryLimit+" with --api-listen, whose queries use it too (DuckDB's own default, 80% of the memory, let the RSS grow with the file)")
	fs.StringVar(&c.CPUProfile, "cpu-profile", "", "write a CPU profile of the whole run to this file (pprof format), finished at shutdown: to see where an ingester's time goes on your traffic, or to build cmd/ingest/default.pgo from it (make pgo)")
}

// Validate reports every invalid setting.
func (c *config) Validate() error {
	var errs []error
	if c.From == "" {
		errs = append(errs, errors.New("--from is required"))
	}
	if c.To == "" {
		errs = append(errs, errors.New("--to is required"))
	}
	if _, err := formatOf(c.Format); err != nil {
		errs = append(errs, err)
	}
	if c.LogFormat != "json" && c.LogFormat != "console" {
		errs = append(errs, fmt.Errorf("--log-format %q: want json or console", c.LogFormat))
	}
	if err := c.Progress.Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := memlimit.Parse(c.MemoryLimit); err != nil {
		errs = append(errs, fmt.Errorf("--memory-limit: %w", err))
	}
	if _, _, err := memlimit.ParseGCPercent(c.GCPercent, ""); err != nil {
		errs = append(errs, fmt.Errorf("--gogc: %w", err))
	}
	if c.DuckDBThreads < 0 {
		errs = append(errs, fmt.Errorf("--duckdb-threads %d: want 0 (automatic) or more", c.DuckDBThreads))
	}
	if err := duckstore.CheckMemoryLimit(c.DuckDBMemoryLimit); err != nil {
		errs = append(errs, fmt.Errorf("--duckdb-memory-limit: %w", err))
	}
	if err := c.Pipeline.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.CH.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Schema.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.APIListen != "" {
		if err := c.API.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// formatOf is the pipeline.Format for --format (nil: contract-v1).
func formatOf(name string) (pipeline.Format, error) {
	switch name {
	case "", "contract":
		return nil, nil
	case "agentgateway":
		return agentgateway.Format{}, nil
	case "otlp":
		return otlpsource.Format{}, nil
	}
	return nil, fmt.Errorf("--format %q: want contract, agentgateway or otlp", name)
}
