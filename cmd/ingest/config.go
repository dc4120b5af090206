package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/mcplens/mcplens/pipeline"
)

// config is everything ingest is told by flags or environment.
type config struct {
	From      string
	To        string
	Listen    string
	LogLevel  string
	LogFormat string
	Migrate   bool
	FaultFile string
	Pipeline  pipeline.Config
}

// RegisterFlags registers every flag with its default and help text.
func (c *config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.From, "from", "", "source: file:PATH (file:- for stdin, .gz ok) or kafka://HOST:PORT[,HOST:PORT]/TOPIC?group=G")
	fs.StringVar(&c.To, "to", "stdout", "sink: stdout, file:PATH (idempotent NDJSON), duckdb:PATH or clickhouse://HOST:PORT/DB")
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:9464", "address for /metrics, /healthz and /readyz (empty: no HTTP server)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", "json", "log format: json or console")
	fs.BoolVar(&c.Migrate, "migrate", false, "apply the store's schema migrations before ingesting (DuckDB always migrates)")
	fs.StringVar(&c.FaultFile, "fault-sink-down-while", "", "testing aid: while this file exists every sink write fails as if the store were down (exercises retries and the commit watermark)")
	c.Pipeline.RegisterFlags(fs)
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
	if c.LogFormat != "json" && c.LogFormat != "console" {
		errs = append(errs, fmt.Errorf("--log-format %q: want json or console", c.LogFormat))
	}
	if err := c.Pipeline.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
