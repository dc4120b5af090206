package pipeline

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/mcplens/mcplens/redact"
)

// Config is the pipeline's configuration. RegisterFlags sets the defaults.
type Config struct {
	Correlator CorrelatorConfig
	Chains     ChainConfig
	Clients    ClientConfig
	Dedupe     DedupeConfig
	Redact     redact.Config

	// BatchSize is how many rows trigger a sink write. Default 10,000.
	BatchSize int
	// BatchMaxSize and BatchMaxBytes bound how far a batch grows past
	// BatchSize while the write before it is still in flight: the loop
	// reads and classifies on instead of waiting for the store, and the
	// batch goes out as soon as that write lands; only at either bound
	// (rows, or the estimated bytes of its bodies and rows) does the loop
	// wait for it. A store slower than the input so gets fewer, larger
	// writes, each of which costs it a fixed price (a ClickHouse part per
	// table, a DuckDB commit). Memory: about twice BatchMaxBytes more
	// than batches of BatchSize when the store is the bottleneck.
	// A BatchMaxSize of at most BatchSize, or a BatchMaxBytes of 0, turns
	// the growth off. Defaults 40,000 rows and 48 MiB.
	BatchMaxSize  int
	BatchMaxBytes int64
	// FlushInterval is the longest a complete exchange waits in memory
	// before it is written (wall clock). Default 1s.
	FlushInterval time.Duration
	// RetryMin and RetryMax bound the backoff between failed sink writes.
	// Defaults 200ms and 30s.
	RetryMin, RetryMax time.Duration
	// GiveUp is how long writes may keep failing with errors the sink
	// calls permanent ([Permanenter]: a missing database or table, a user
	// without the right) before the engine stops with the error; outages
	// are retried for as long as they last. Default 2m.
	GiveUp time.Duration
	// ShutdownTimeout bounds the final flush on stop. Default 30s.
	ShutdownTimeout time.Duration
	// IdleAdvance: after this long (wall clock) without input, event time
	// advances with the wall clock so that the last exchanges of a burst
	// are released. Default 5s.
	IdleAdvance time.Duration
	// StateHold is how many flushes an event may wait before it is saved
	// in a StateSink's state. Until then the committed offset waits at it
	// and the stream's mark lists it as held, so a restart re-reads it
	// instead of loading it: most requests are answered within a flush or
	// two, and then never cost a saved row and its release. 0 saves every
	// waiting event at the first flush. A final flush (stop, rebalance)
	// saves all. Default 4.
	StateHold int
	// MetricsMaxServers caps the distinct server label values of the
	// per-server metrics; exchanges of servers seen after the cap is
	// reached are counted as server="_other". Default 100.
	MetricsMaxServers int
}

// DefaultConfig returns the configuration RegisterFlags would set.
func DefaultConfig() Config {
	var c Config
	fs := flag.NewFlagSet("defaults", flag.ContinueOnError)
	c.RegisterFlags(fs)
	return c
}

// RegisterFlags registers the pipeline's flags with their defaults and help.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Correlator.PairWindow, "pair-window", 60*time.Second, "how long (event time) a request waits for its response before it is emitted as NO_RESPONSE")
	fs.DurationVar(&c.Correlator.MergeWindow, "merge-window", 2*time.Second, "how long a complete exchange waits for another observer's record of it (gateway and client views are merged)")
	fs.DurationVar(&c.Correlator.Lateness, "lateness", 5*time.Second, "how far event time may go backwards between log lines (the watermark trails the newest event by this much)")
	fs.IntVar(&c.Correlator.MaxPending, "max-pending", 200_000, "most request/response halves waiting for their other half; beyond it the oldest is emitted alone and counted as evicted")
	fs.Int64Var(&c.Correlator.MaxPendingBytes, "max-pending-bytes", 512<<20, "most estimated bytes held by waiting halves")
	fs.DurationVar(&c.Chains.Window, "chain-window", 10*time.Minute, "how far back (event time) an earlier attempt of a retry is looked for")
	fs.IntVar(&c.Chains.MaxKeys, "chain-max-keys", 1_000_000, "most distinct calls remembered for retry linking")
	fs.IntVar(&c.Clients.MaxSessions, "client-max-sessions", 100_000, "most sessions whose client identity (initialize clientInfo) is remembered")
	fs.DurationVar(&c.Clients.Idle, "client-idle", 24*time.Hour, "how long (event time) an idle session's client identity is remembered")
	fs.IntVar(&c.Dedupe.MaxIDs, "dedupe-max-ids", 1_000_000, "most event ids remembered for deduplication")
	fs.DurationVar(&c.Dedupe.Window, "dedupe-window", 10*time.Minute, "how long (event time) an event id is remembered for deduplication")
	fs.IntVar(&c.Redact.MaxBodyBytes, "max-body-bytes", 256<<10, "bodies longer than this are cut (body_truncated is set)")
	fs.Func("redact-pattern", "extra regular expression whose matches in bodies are redacted (repeatable)", func(s string) error {
		c.Redact.Patterns = append(c.Redact.Patterns, s)
		return nil
	})
	fs.Func("redact-header", "extra header name whose value is redacted (repeatable)", func(s string) error {
		c.Redact.Headers = append(c.Redact.Headers, strings.ToLower(s))
		return nil
	})
	fs.IntVar(&c.BatchSize, "batch-size", 10_000, "rows per sink write")
	fs.IntVar(&c.BatchMaxSize, "batch-max-size", 40_000, "most rows a batch grows to while the write before it is in flight (instead of the reading waiting for the store at --batch-size); at most --batch-size: no growth")
	fs.Int64Var(&c.BatchMaxBytes, "batch-max-bytes", 48<<20, "most estimated bytes (bodies and rows) a batch grows to while the write before it is in flight (0: no growth)")
	fs.DurationVar(&c.FlushInterval, "flush-interval", time.Second, "longest time a finished exchange waits before it is written")
	fs.IntVar(&c.StateHold, "state-hold", 4, "flushes an event waiting for its other half stays out of the stored state: the commit waits for it instead, and a restart re-reads it (0: save it at the first flush)")
	fs.DurationVar(&c.RetryMin, "retry-min", 200*time.Millisecond, "first backoff after a failed sink write")
	fs.DurationVar(&c.RetryMax, "retry-max", 30*time.Second, "longest backoff between failed sink writes")
	fs.DurationVar(&c.GiveUp, "give-up-after", 2*time.Minute, "how long sink writes may keep failing with an error the store says no retry can pass (a missing database or table, a user without the right) before ingest stops with it, uncommitted; outages are retried for as long as they last")
	fs.DurationVar(&c.IdleAdvance, "idle-advance", 5*time.Second, "after this long without input, event time advances with the wall clock so the last exchanges are released")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long the final flush and commit may take on stop")
	fs.IntVar(&c.MetricsMaxServers, "metrics-max-servers", 100, "most distinct server label values in the per-server metrics; servers seen after that are counted as server=\"_other\"")
}

// Validate reports every invalid setting.
func (c *Config) Validate() error {
	var errs []error
	pos := func(name string, ok bool) {
		if !ok {
			errs = append(errs, fmt.Errorf("%s must be positive", name))
		}
	}
	pos("pair-window", c.Correlator.PairWindow > 0)
	pos("merge-window", c.Correlator.MergeWindow > 0)
	pos("lateness", c.Correlator.Lateness > 0)
	pos("max-pending", c.Correlator.MaxPending > 0)
	pos("max-pending-bytes", c.Correlator.MaxPendingBytes > 0)
	pos("chain-window", c.Chains.Window > 0)
	pos("batch-size", c.BatchSize > 0)
	pos("flush-interval", c.FlushInterval > 0)
	if c.BatchMaxBytes < 0 {
		errs = append(errs, errors.New("batch-max-bytes must not be negative"))
	}
	pos("retry-min", c.RetryMin > 0)
	pos("give-up-after", c.GiveUp > 0)
	pos("shutdown-timeout", c.ShutdownTimeout > 0)
	pos("idle-advance", c.IdleAdvance > 0)
	pos("metrics-max-servers", c.MetricsMaxServers > 0)
	if c.StateHold < 0 {
		errs = append(errs, errors.New("state-hold must not be negative"))
	}
	if c.RetryMax < c.RetryMin {
		errs = append(errs, errors.New("retry-max must be at least retry-min"))
	}
	return errors.Join(errs...)
}
