package tap

import (
	"errors"
	"flag"
	"fmt"

	"github.com/mcplens/mcplens/schema"
)

// DefaultMaxBodyBytes is the default cap on each captured body (request and
// response separately): 256 KiB, the pipeline's own cap, so that an event
// with both bodies stays under Kafka's default 1 MB message size.
const DefaultMaxBodyBytes = 256 << 10

// Config configures a [Recorder]. The zero value is usable: every field has a
// documented default.
type Config struct {
	// Observer names this recorder instance in each event ("observer"), for
	// example the proxy's pod name. Default: empty (the field is omitted).
	Observer string
	// Server is the logical MCP server name put in each event ("server").
	// Default: empty, and the pipeline falls back to the host of the URL.
	Server string
	// MaxBodyBytes caps how much of each request and response body is kept.
	// A longer body is cut to this prefix and the event is marked
	// body_truncated; the traffic itself always passes through in full.
	// Zero means DefaultMaxBodyBytes; negative values are invalid.
	MaxBodyBytes int
	// Redact, when set, is applied to every event right before it is written,
	// for example to drop credentials from the header maps. It is called from
	// request goroutines and must be safe for concurrent use. Default: nil,
	// events are written as recorded (including Authorization headers).
	Redact func(*schema.Event)
}

// RegisterFlags registers the configuration's flags on fs, with the current
// field values as defaults.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Observer, "tap.observer", c.Observer, "name of this recorder instance, written as the event's observer")
	fs.StringVar(&c.Server, "tap.server", c.Server, "logical MCP server name written in each event (default: the pipeline uses the URL host)")
	fs.IntVar(&c.MaxBodyBytes, "tap.max-body-bytes", c.MaxBodyBytes, fmt.Sprintf("cap on each captured body in bytes; 0 means %d", DefaultMaxBodyBytes))
}

// Validate reports every invalid field at once.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("tap.max-body-bytes %d: must not be negative", c.MaxBodyBytes))
	}
	return errors.Join(errs...)
}

// withDefaults returns c with zero fields replaced by their defaults.
func (c Config) withDefaults() Config {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	return c
}
