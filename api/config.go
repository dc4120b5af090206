package api

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mcplens/mcplens/queries"
)

// Config is what the operator tells the API. The zero value is not
// usable; start from DefaultConfig or RegisterFlags.
type Config struct {
	// Dev disables authentication (every request may read bodies); for
	// local demos only. The API logs a warning at start and marks every
	// response with the X-Mcplens-Dev-Mode header.
	Dev bool
	// CORSOrigins are the browser origins allowed to call the API
	// ("https://ui.example.com", or "*"); empty disables CORS.
	CORSOrigins []string
	// MaxSpan is the longest from..to range a request may ask for.
	MaxSpan time.Duration
	// DefaultWindow is the range when a request gives no from: the
	// window before to (default now).
	DefaultWindow time.Duration
	// MaxLimit is the largest limit a request may ask for.
	MaxLimit int
	// QueryTimeout is the deadline of every request's store queries.
	QueryTimeout time.Duration
	// RateLimit is the sustained requests per second allowed per token
	// (token bucket of RateBurst); 0 disables rate limiting.
	RateLimit float64
	RateBurst int
}

// DefaultConfig returns the defaults of RegisterFlags.
func DefaultConfig() Config {
	return Config{
		MaxSpan:       31 * 24 * time.Hour,
		DefaultWindow: 24 * time.Hour,
		MaxLimit:      1000,
		QueryTimeout:  10 * time.Second,
		RateLimit:     20,
		RateBurst:     40,
	}
}

// RegisterFlags registers the API's flags with their defaults and help.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	d := DefaultConfig()
	fs.BoolVar(&c.Dev, "dev", false, "disable authentication for a local demo (logged loudly; every response says so in X-Mcplens-Dev-Mode)")
	fs.Func("cors-origin", "allow browser calls from this origin (https://host[:port] or *); repeatable or comma-separated; default: CORS off", func(v string) error {
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o != "" {
				c.CORSOrigins = append(c.CORSOrigins, o)
			}
		}
		return nil
	})
	c.MaxSpan, c.DefaultWindow = d.MaxSpan, d.DefaultWindow
	fs.Var((*spanValue)(&c.MaxSpan), "max-span", "longest from..to range a request may ask for (Go duration, or Nd / Nw)")
	fs.Var((*spanValue)(&c.DefaultWindow), "default-window", "range before 'to' when a request gives no 'from' (Go duration, or Nd / Nw)")
	fs.IntVar(&c.MaxLimit, "max-limit", d.MaxLimit, fmt.Sprintf("largest 'limit' a request may ask for (at most %d)", queries.MaxLimit))
	fs.DurationVar(&c.QueryTimeout, "query-timeout", d.QueryTimeout, "deadline of each request's store queries; past it the request fails with 503")
	fs.Float64Var(&c.RateLimit, "rate-limit", d.RateLimit, "requests per second allowed per token, sustained (0: no limit); over it: 429 with Retry-After")
	fs.IntVar(&c.RateBurst, "rate-burst", d.RateBurst, "requests a token may send at once before --rate-limit applies")
}

// Validate reports every invalid setting.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxSpan <= 0 {
		errs = append(errs, fmt.Errorf("--max-span %s: want > 0", queries.FormatSpan(c.MaxSpan)))
	}
	if c.DefaultWindow <= 0 || c.DefaultWindow > c.MaxSpan {
		errs = append(errs, fmt.Errorf("--default-window %s: want > 0 and at most --max-span %s", queries.FormatSpan(c.DefaultWindow), queries.FormatSpan(c.MaxSpan)))
	}
	if c.MaxLimit < 1 || c.MaxLimit > queries.MaxLimit {
		errs = append(errs, fmt.Errorf("--max-limit %d: want 1..%d", c.MaxLimit, queries.MaxLimit))
	}
	if c.QueryTimeout <= 0 || c.QueryTimeout > 5*time.Minute {
		errs = append(errs, fmt.Errorf("--query-timeout %s: want > 0 and at most 5m", c.QueryTimeout))
	}
	if c.RateLimit < 0 {
		errs = append(errs, fmt.Errorf("--rate-limit %g: want >= 0", c.RateLimit))
	}
	if c.RateLimit > 0 && c.RateBurst < 1 {
		errs = append(errs, fmt.Errorf("--rate-burst %d: want >= 1", c.RateBurst))
	}
	for _, o := range c.CORSOrigins {
		if err := checkOrigin(o); err != nil {
			errs = append(errs, fmt.Errorf("--cors-origin %q: %w", o, err))
		}
	}
	return errors.Join(errs...)
}

// defaultLimit is the limit of a request that gives none.
func (c *Config) defaultLimit() int { return min(queries.DefaultLimit, c.MaxLimit) }

func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return errors.New("want scheme://host[:port] without path, or *")
	}
	return nil
}

// spanValue is a flag.Value for durations that also takes days and weeks
// ("31d", "2w").
type spanValue time.Duration

func (v *spanValue) String() string { return queries.FormatSpan(time.Duration(*v)) }

func (v *spanValue) Set(s string) error {
	d, err := queries.ParseSpan(s)
	if err != nil {
		return err
	}
	*v = spanValue(d)
	return nil
}
