package kafkasource

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults applied by ParseURL and by New to zero fields.
const (
	DefaultGroup            = "mcplens-ingest"
	DefaultStart            = StartFirst
	DefaultMinBytes         = 1
	DefaultMaxBytes         = 16 << 20
	DefaultMaxWait          = 1500 * time.Millisecond
	DefaultQueueCapacity    = 1000
	DefaultAlignWait        = time.Second
	DefaultSessionTimeout   = 6 * time.Second
	DefaultHeartbeat        = time.Second
	DefaultRebalanceTimeout = 10 * time.Second
)

// Where a consumer group with no committed offset for a partition starts.
const (
	StartFirst = "first" // the oldest retained message
	StartLast  = "last"  // only messages produced after the group joined
)

// Config says what a Source reads and how it fetches. Brokers and Topic are
// required; New fills every other zero field with its default.
type Config struct {
	// Brokers are bootstrap addresses, "host:port".
	Brokers []string
	// Topic is the one topic read.
	Topic string
	// Group is the consumer group id [DefaultGroup]. Members of one group
	// share the topic's partitions and its committed offsets.
	Group string
	// Start is StartFirst or StartLast [StartFirst]; it only matters for a
	// partition the group has never committed.
	Start string
	// MinBytes is the least data the broker waits for before answering a
	// fetch (or until MaxWait) [1: answer as soon as anything is there].
	MinBytes int
	// MaxBytes caps one fetch response [16 MiB]; keep it above the largest
	// message the topic accepts.
	MaxBytes int
	// MaxWait bounds one fetch round trip when fewer than MinBytes are
	// there [1.5s]. kafka-go asks the broker to hold the fetch for MaxWait
	// less a round-trip allowance (1s, or a quarter of MaxWait below 1s),
	// so values under 1s leave little slack and log spurious i/o timeouts.
	// It does not delay data: the broker answers as soon as MinBytes arrive.
	// Close may take up to MaxWait while a fetch is in flight.
	MaxWait time.Duration
	// QueueCapacity is how many fetched messages are buffered ahead of
	// Fetch [1000].
	QueueCapacity int
	// AlignWait is how long Fetch waits for a partition that is behind and
	// has nothing buffered before it hands out a later message of another
	// partition [1s]; see the package comment. A partition waited for that
	// long is not waited for again until its next message.
	AlignWait time.Duration
	// SessionTimeout is how long the coordinator keeps a member that stopped
	// heartbeating [6s, the broker's least by default]: a SIGKILLed
	// ingester's partitions move on (or to its restarted self) after it.
	// kafka-go has no static membership (group.instance.id), so a short
	// session is what makes a restarted member resume in seconds.
	SessionTimeout time.Duration
	// Heartbeat is how often a member tells the coordinator it lives [1s];
	// at most a third of SessionTimeout.
	Heartbeat time.Duration
	// RebalanceTimeout is how long a rebalance waits for members to rejoin
	// [10s]. It bounds how long a group stalls after a broker restart, when
	// the coordinator waits for members it remembers. kafka-go rejoins in
	// the background, whether or not Fetch is being called.
	RebalanceTimeout time.Duration
}

// ParseURL reads kafka://HOST:PORT[,HOST:PORT...]/TOPIC[?PARAMS] with the
// optional parameters group (default mcplens-ingest), start (first|last),
// min_bytes, max_bytes, max_wait, session_timeout, heartbeat, align_wait
// (Go durations) and queue. Unknown
// parameters are errors, so a typo is never silently ignored.
func ParseURL(raw string) (Config, error) {
	cfg, err := parseURL(raw)
	if err != nil {
		return Config{}, fmt.Errorf("parse kafka URL %q: %w", raw, err)
	}
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("parse kafka URL %q: %w", raw, err)
	}
	return cfg, nil
}

func parseURL(raw string) (Config, error) {
	var cfg Config
	rest, ok := strings.CutPrefix(raw, "kafka://")
	if !ok {
		return cfg, errors.New("want kafka://HOST:PORT[,HOST:PORT]/TOPIC?group=GROUP")
	}
	if strings.Contains(rest, "#") {
		return cfg, errors.New("fragment (#) not allowed")
	}
	rest, rawQuery, _ := strings.Cut(rest, "?")
	hosts, path, _ := strings.Cut(rest, "/")
	if hosts == "" {
		return cfg, errors.New("no broker address")
	}
	if strings.Contains(hosts, "@") {
		return cfg, errors.New("credentials in the URL are not supported")
	}
	cfg.Brokers = strings.Split(hosts, ",")
	topic, err := url.PathUnescape(path)
	if err != nil {
		return cfg, fmt.Errorf("topic: %w", err)
	}
	cfg.Topic = topic

	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return cfg, fmt.Errorf("query: %w", err)
	}
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(q)) {
		vals := q[key]
		if len(vals) != 1 {
			errs = append(errs, fmt.Errorf("parameter %q given %d times", key, len(vals)))
			continue
		}
		if err := cfg.set(key, vals[0]); err != nil {
			errs = append(errs, err)
		}
	}
	return cfg, errors.Join(errs...)
}

func (c *Config) set(key, val string) error {
	positive := func(dst *int) error {
		n, err := strconv.Atoi(val)
		if err != nil || n <= 0 {
			return fmt.Errorf("%s=%q: want a positive integer", key, val)
		}
		*dst = n
		return nil
	}
	duration := func(dst *time.Duration, example string) error {
		d, err := time.ParseDuration(val)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s=%q: want a positive duration such as %s", key, val, example)
		}
		*dst = d
		return nil
	}
	switch key {
	case "group":
		if val == "" {
			return errors.New("group is empty: drop the parameter for the default " + DefaultGroup)
		}
		c.Group = val
	case "start":
		c.Start = val
	case "min_bytes":
		return positive(&c.MinBytes)
	case "max_bytes":
		return positive(&c.MaxBytes)
	case "queue":
		return positive(&c.QueueCapacity)
	case "max_wait":
		return duration(&c.MaxWait, "1500ms")
	case "session_timeout":
		return duration(&c.SessionTimeout, "6s")
	case "heartbeat":
		return duration(&c.Heartbeat, "1s")
	case "align_wait":
		return duration(&c.AlignWait, "1s")
	default:
		return fmt.Errorf("unknown parameter %q (known: group, start, min_bytes, max_bytes, max_wait, session_timeout, heartbeat, queue, align_wait)", key)
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.Start == "" {
		c.Start = DefaultStart
	}
	if c.MinBytes == 0 {
		c.MinBytes = DefaultMinBytes
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxWait == 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.QueueCapacity == 0 {
		c.QueueCapacity = DefaultQueueCapacity
	}
	if c.AlignWait == 0 {
		c.AlignWait = DefaultAlignWait
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.RebalanceTimeout == 0 {
		c.RebalanceTimeout = DefaultRebalanceTimeout
	}
}

// Validate reports every problem of a Config with defaults applied.
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("no broker address"))
	}
	for _, b := range c.Brokers {
		if err := validAddr(b); err != nil {
			errs = append(errs, fmt.Errorf("broker %q: %w", b, err))
		}
	}
	if err := validTopic(c.Topic); err != nil {
		errs = append(errs, fmt.Errorf("topic %q: %w", c.Topic, err))
	}
	if c.Group == "" {
		errs = append(errs, errors.New("group is empty"))
	}
	if c.Start != StartFirst && c.Start != StartLast {
		errs = append(errs, fmt.Errorf("start %q: want %s or %s", c.Start, StartFirst, StartLast))
	}
	if c.MinBytes <= 0 || c.MaxBytes < c.MinBytes {
		errs = append(errs, fmt.Errorf("min_bytes %d, max_bytes %d: want 0 < min <= max", c.MinBytes, c.MaxBytes))
	}
	if c.MaxWait <= 0 {
		errs = append(errs, fmt.Errorf("max_wait %v: want > 0", c.MaxWait))
	}
	if c.QueueCapacity <= 0 {
		errs = append(errs, fmt.Errorf("queue %d: want > 0", c.QueueCapacity))
	}
	if c.AlignWait <= 0 {
		errs = append(errs, fmt.Errorf("align_wait %v: want > 0", c.AlignWait))
	}
	// The broker refuses sessions under group.min.session.timeout.ms (6s).
	if c.SessionTimeout < 6*time.Second || c.RebalanceTimeout <= 0 {
		errs = append(errs, fmt.Errorf("session timeout %v, rebalance timeout %v: want >= 6s and > 0", c.SessionTimeout, c.RebalanceTimeout))
	}
	if c.Heartbeat <= 0 || 3*c.Heartbeat > c.SessionTimeout {
		errs = append(errs, fmt.Errorf("heartbeat %v: want > 0 and at most a third of the session timeout %v", c.Heartbeat, c.SessionTimeout))
	}
	return errors.Join(errs...)
}

func validAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("want HOST:PORT")
	}
	if host == "" {
		return errors.New("empty host")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q: want 1-65535", port)
	}
	return nil
}

// validTopic applies Kafka's topic name rules.
func validTopic(topic string) error {
	switch {
	case topic == "":
		return errors.New("missing: put it in the URL path, kafka://HOST:PORT/TOPIC")
	case topic == "." || topic == "..":
		return errors.New(`"." and ".." are not topic names`)
	case len(topic) > 249:
		return errors.New("longer than 249 characters")
	}
	for _, r := range topic {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '.' && r != '_' && r != '-' {
			return fmt.Errorf("character %q not allowed (only ASCII letters, digits, '.', '_', '-')", r)
		}
	}
	return nil
}
