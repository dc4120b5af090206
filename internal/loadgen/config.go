// Package loadgen generates production-shaped MCP traffic logs: contract-v1
// NDJSON lines in the order a log pipeline delivers them, with the ground
// truth a test needs to count lost, doubled and misclassified exchanges.
//
// The shape (every share is configurable): calls start at Rate calls per
// second of event time; responses come 10 ms to 30 s after their requests
// (log-uniform, so most are fast and a long tail is slow); 35% of calls are
// logged as one exchange record (written when the call completes, so its
// line arrives up to 30 s after its own ts), 65% as a request and a response
// record; 10% are also logged by the client (a second observer whose clock is
// skewed up to 1 s); 15% are answered with an SSE stream; response bodies are
// 0.2 to 16 KiB (log-uniform); 2% of lines are delivered twice; and the
// outcomes mix tool errors, JSON-RPC errors, HTTP 429/503 answers followed by
// a re-send of the same call, cut streams, timeouts and requests that never
// get a response. Options add poison lines, invalid UTF-8 inside bodies and
// secrets in headers and bodies.
//
// A Generator is deterministic: the same Config (Seed included) gives the
// same lines, byte for byte. It holds only the calls still in flight
// (about Rate x 30 s), so it streams millions of lines in little memory.
package loadgen

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config describes the load. The zero value of a field means its default
// (see [DefaultConfig]); shares are fractions in [0, 1].
type Config struct {
	Seed  uint64
	Calls int       // first attempts to generate; re-sends of 429/503 come on top. Default 10,000.
	Rate  float64   // calls per second of event time. Default 1,000.
	Start time.Time // event time of the first call. Default 2026-11-02T10:00:00Z.
	// EndNow dates the traffic so that its last call is sent about now
	// (Calls/Rate before New), instead of from Start: a store's TTL keeps
	// it, where the default date may be past it. The same seed gives the
	// same lines, moved in time.
	EndNow bool

	Sessions  int // sessions open at once, spread over the calls. Default 2,000.
	Gateways  int // gateway observers (pods). Default 3.
	Clients   int // client hosts that also log. Default 50.
	ServerSet int // logical MCP servers. Default 8.

	MinDelay, MaxDelay time.Duration // request to response. Defaults 10ms, 30s.
	MinBody, MaxBody   int           // response body bytes. Defaults 200, 16,384.
	Jitter             time.Duration // observation-order jitter of lines. Default 50ms.
	ClientSkew         time.Duration // most a client's clock is off. Default 1s.
	// ClientShipped places a client's line where it is shipped, at the
	// real time of the response (plus jitter), instead of where its own
	// clock puts it: a client whose clock runs behind is then read after
	// the gateway's line, not before it. Its ts is skewed either way.
	ClientShipped bool

	ExchangeShare  float64 // calls logged as one exchange record. Default 0.35.
	ClientShare    float64 // calls the client logs too. Default 0.10.
	NoIDShare      float64 // calls whose loggers share no exchange_id. Default 0.20.
	SSEShare       float64 // calls answered with an SSE stream. Default 0.15.
	RedeliverShare float64 // lines delivered twice. Default 0.02.
	NestedShare    float64 // lines with the nested {"http":{...}} spelling. Default 0.10.

	// Outcome shares of first attempts; the rest are successes.
	ToolErrorShare     float64 // isError results. Default 0.06.
	RPCErrorShare      float64 // JSON-RPC errors. Default 0.03.
	RateLimitShare     float64 // HTTP 429, then a re-send. Default 0.02.
	UnavailableShare   float64 // HTTP 503, then a re-send. Default 0.015.
	CutStreamShare     float64 // SSE streams cut before the answer. Default 0.01 (of all calls).
	TimeoutShare       float64 // transport timeouts. Default 0.005.
	NoResponseShare    float64 // requests never answered. Default 0.003.
	NonToolShare       float64 // tools/list and resources/read calls. Default 0.05.
	ClientDisagreeRate float64 // client logs "success" for a tool error. Default 0.5.

	// Optional bad input; all default to 0 (off).
	PoisonShare  float64 // lines that are not valid events (quarantined).
	BadUTF8Share float64 // bodies with invalid UTF-8 bytes (still valid events).
	SecretShare  float64 // calls with secrets in headers and bodies.
	// GiveUpShare is the share of first attempts (logged as request and
	// response, taking more than 2 s, answered with a result or a
	// JSON-RPC error) that the client gives up on after 20-80% of their
	// time and sends again while they still run: the re-send is their
	// retry, and both may run. Default 0 (off).
	GiveUpShare float64

	// KeepTruth keeps the expected record of every call ([Truth.Calls]);
	// off, only the counts are kept (for runs of millions of calls).
	KeepTruth bool
}

// PairWindow returns the pair window an ingester needs for this shape:
// def, or longer when a response may come later than def after its
// request (the longest delay, a client's clock skew both ways and the
// shuffle jitter, with five seconds to spare). Shorter, a late response
// makes two records of one call, a NO_RESPONSE and an orphan, as it should.
func (c Config) PairWindow(def time.Duration) time.Duration {
	c.defaults()
	return max(def, c.MaxDelay+2*c.ClientSkew+c.Jitter+5*time.Second)
}

// Defaults.
var (
	DefaultStart = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
)

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	var c Config
	c.defaults()
	return c
}

func (c *Config) defaults() {
	setI := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	setF := func(p *float64, v float64) {
		if *p <= 0 {
			*p = v
		}
	}
	setD := func(p *time.Duration, v time.Duration) {
		if *p <= 0 {
			*p = v
		}
	}
	setI(&c.Calls, 10_000)
	setF(&c.Rate, 1000)
	if c.Start.IsZero() {
		c.Start = DefaultStart
	}
	setI(&c.Sessions, 2000)
	setI(&c.Gateways, 3)
	setI(&c.Clients, 50)
	setI(&c.ServerSet, 8)
	setD(&c.MinDelay, 10*time.Millisecond)
	setD(&c.MaxDelay, 30*time.Second)
	setI(&c.MinBody, 200)
	setI(&c.MaxBody, 16<<10)
	setD(&c.Jitter, 50*time.Millisecond)
	setD(&c.ClientSkew, time.Second)
	setF(&c.ExchangeShare, 0.35)
	setF(&c.ClientShare, 0.10)
	setF(&c.NoIDShare, 0.20)
	setF(&c.SSEShare, 0.15)
	setF(&c.RedeliverShare, 0.02)
	setF(&c.NestedShare, 0.10)
	setF(&c.ToolErrorShare, 0.06)
	setF(&c.RPCErrorShare, 0.03)
	setF(&c.RateLimitShare, 0.02)
	setF(&c.UnavailableShare, 0.015)
	setF(&c.CutStreamShare, 0.01)
	setF(&c.TimeoutShare, 0.005)
	setF(&c.NoResponseShare, 0.003)
	setF(&c.NonToolShare, 0.05)
	setF(&c.ClientDisagreeRate, 0.5)
}

// RegisterFlags registers the most used knobs, for cmd/loadgen.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed; the same seed gives the same lines")
	fs.IntVar(&c.Calls, "calls", 10_000, "first attempts to generate (re-sends of 429/503 answers come on top)")
	fs.Float64Var(&c.Rate, "rate", 1000, "calls per second of event time")
	fs.Float64Var(&c.PoisonShare, "poison", 0, "share of lines that are not valid events")
	fs.Float64Var(&c.BadUTF8Share, "bad-utf8", 0, "share of bodies with invalid UTF-8 bytes")
	fs.Float64Var(&c.SecretShare, "secrets", 0, "share of calls with secrets in headers and bodies")
	fs.Float64Var(&c.GiveUpShare, "give-up", 0, "share of slow calls the client sends again while they still run")
	fs.Float64Var(&c.RedeliverShare, "redeliver", 0.02, "share of lines delivered twice")
	fs.Func("start", "event time of the first call, RFC 3339 (default "+DefaultStart.Format(time.RFC3339)+")", func(v string) error {
		t, err := time.Parse(time.RFC3339Nano, v)
		c.Start = t.UTC()
		return err
	})
	fs.BoolVar(&c.EndNow, "end-now", false, "date the traffic so that its last call is sent about now, instead of from -start: a store's TTL (30 days for ClickHouse's exchanges, 7 for bodies) keeps what the default date may be past")

	// The traffic's shape, for loads other than the default one (a zero
	// keeps the default, as in Config).
	d := DefaultConfig()
	fs.IntVar(&c.Sessions, "sessions", d.Sessions, "sessions open at once")
	fs.IntVar(&c.Gateways, "gateways", d.Gateways, "gateway observers (pods)")
	fs.IntVar(&c.Clients, "clients", d.Clients, "client hosts that also log")
	fs.IntVar(&c.ServerSet, "servers", d.ServerSet, "logical MCP servers")
	fs.DurationVar(&c.MinDelay, "min-delay", d.MinDelay, "shortest time from a request to its response")
	fs.DurationVar(&c.MaxDelay, "max-delay", d.MaxDelay, "longest time from a request to its response")
	fs.IntVar(&c.MinBody, "min-body", d.MinBody, "smallest response body, bytes")
	fs.IntVar(&c.MaxBody, "max-body", d.MaxBody, "largest response body, bytes")
	fs.DurationVar(&c.Jitter, "jitter", d.Jitter, "how far lines are shuffled out of observation order")
	fs.DurationVar(&c.ClientSkew, "client-skew", d.ClientSkew, "most a client's clock is off")
	fs.BoolVar(&c.ClientShipped, "client-shipped", d.ClientShipped, "place a client's line at the real time its response came (plus jitter), not where its skewed clock puts it")
	fs.Float64Var(&c.ExchangeShare, "exchange-share", d.ExchangeShare, "share of calls logged as one exchange record (the rest as two halves)")
	fs.Float64Var(&c.ClientShare, "client-share", d.ClientShare, "share of calls the client logs too")
	fs.Float64Var(&c.NoIDShare, "no-id-share", d.NoIDShare, "share of calls whose loggers share no exchange_id")
	fs.Float64Var(&c.SSEShare, "sse-share", d.SSEShare, "share of calls answered with an SSE stream")
	fs.Float64Var(&c.NestedShare, "nested-share", d.NestedShare, `share of lines with the nested {"http":{...}} spelling`)
	fs.Float64Var(&c.NoResponseShare, "no-response", d.NoResponseShare, "share of requests never answered")
	fs.Float64Var(&c.ToolErrorShare, "tool-errors", d.ToolErrorShare, "share of calls whose result has isError")
}

// BenchMinutes is the event time of the long benchmarks, in minutes:
// MCPLENS_BENCH_MINUTES if set, else 31, three times the 10-minute chain
// and dedupe windows.
func BenchMinutes() (float64, error) {
	s := os.Getenv("MCPLENS_BENCH_MINUTES")
	if s == "" {
		return 31, nil
	}
	m, err := strconv.ParseFloat(s, 64)
	if err != nil || m <= 0 {
		return 0, fmt.Errorf("MCPLENS_BENCH_MINUTES=%q: want a positive number of minutes", s)
	}
	return m, nil
}

// BenchConfig is the load of the long benchmarks: seed, minutes of event
// time at the load's rate, and the shape the environment variable
// MCPLENS_BENCH_LOAD gives in cmd/loadgen's flags (such as "-rate 3000
// -sessions 50000 -max-delay 2m"), so that they can be run on traffic
// other than the default shape. -calls, when given, wins over minutes.
func BenchConfig(seed uint64, minutes float64) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("MCPLENS_BENCH_LOAD", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	c.Seed = seed
	env := os.Getenv("MCPLENS_BENCH_LOAD")
	if err := fs.Parse(strings.Fields(env)); err != nil {
		return c, fmt.Errorf("MCPLENS_BENCH_LOAD=%q: %w", env, err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("MCPLENS_BENCH_LOAD=%q: %q is not a flag", env, fs.Arg(0))
	}
	calls := false
	fs.Visit(func(f *flag.Flag) { calls = calls || f.Name == "calls" })
	if !calls {
		c.Calls = int(minutes * 60 * c.Rate)
	}
	return c, c.Validate()
}

// Validate reports impossible settings.
func (c *Config) Validate() error {
	var errs []error
	if c.MinDelay > c.MaxDelay {
		errs = append(errs, errors.New("loadgen: MinDelay above MaxDelay"))
	}
	if c.MinBody > c.MaxBody {
		errs = append(errs, errors.New("loadgen: MinBody above MaxBody"))
	}
	if c.MaxBody > 16<<20 {
		errs = append(errs, errors.New("loadgen: MaxBody above 16 MiB"))
	}
	for _, s := range []float64{c.ExchangeShare, c.ClientShare, c.NoIDShare, c.SSEShare, c.RedeliverShare,
		c.PoisonShare, c.BadUTF8Share, c.SecretShare, c.NestedShare, c.GiveUpShare} {
		if s > 1 {
			errs = append(errs, errors.New("loadgen: a share above 1"))
			break
		}
	}
	first := c.ToolErrorShare + c.RPCErrorShare + c.RateLimitShare + c.UnavailableShare + c.CutStreamShare +
		c.TimeoutShare + c.NoResponseShare + c.NonToolShare
	if first > 1 {
		errs = append(errs, errors.New("loadgen: outcome shares add up to more than 1"))
	}
	return errors.Join(errs...)
}
