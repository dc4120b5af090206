// Package progress reports a long ingest's progress on stderr in human
// form: input done (bytes of a file of known size with an ETA, or Kafka
// lag), events and events/s, exchanges by outcome so far, at a steady
// interval; and one summary line at the end.
//
// By default (mode auto) the periodic lines are written only when the
// output is a terminal, so logs collected from a pipe or a container stay
// JSON; the summary is always written.
package progress

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/mcplens/mcplens/internal/cli"
	"github.com/mcplens/mcplens/pipeline"
)

// Modes of Config.Mode.
const (
	Auto   = "auto"   // periodic lines only when the output is a terminal
	Always = "always" // periodic lines whatever the output is
	Never  = "never"  // no periodic lines; the summary is still written
)

// Config says whether and how often progress is reported.
type Config struct {
	// Mode is Auto, Always or Never [Auto].
	Mode string
	// Interval between two progress lines [5s].
	Interval time.Duration
}

// RegisterFlags registers --progress and --progress-interval.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Mode, "progress", Auto, "progress lines on stderr: auto (only when stderr is a terminal), always or never; a summary line is written at the end in every mode")
	fs.DurationVar(&c.Interval, "progress-interval", 5*time.Second, "time between two progress lines, a duration such as 5s or 1m")
}

// Validate reports an unknown mode or a non-positive interval.
func (c *Config) Validate() error {
	var errs []error
	switch c.Mode {
	case Auto, Always, Never:
	default:
		errs = append(errs, fmt.Errorf("--progress %q: want auto, always or never", c.Mode))
	}
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("--progress-interval %s: want a positive duration such as 5s", c.Interval))
	}
	return errors.Join(errs...)
}

// Bytes is implemented by a source that knows how much of its input it has
// read ([pipeline.FileSource]); size is 0 when unknown.
type Bytes interface {
	BytesRead() (read, size int64)
}

// Lag is implemented by a source that knows how far behind it is
// (kafkasource.Source).
type Lag interface {
	Lag() (messages int64, partitions int)
}

// Deps are a Reporter's inputs.
type Deps struct {
	// Out receives the lines (os.Stderr in ingest).
	Out io.Writer
	// Stats returns the engine's totals so far ([pipeline.Engine.Stats]).
	Stats func() pipeline.Stats
	// Source is asked for Bytes or Lag when it implements them.
	Source any
	// Now is the clock [time.Now].
	Now func() time.Time
}

// Reporter writes progress lines and the summary. Run and Summary are
// called by one goroutine at a time.
type Reporter struct {
	cfg      Config
	d        Deps
	periodic bool
	start    time.Time
	last     sample
}

type sample struct {
	at     time.Time
	events int64
	read   int64
}

// New returns a Reporter that counts time from now.
func New(cfg Config, d Deps) *Reporter {
	if d.Now == nil {
		d.Now = time.Now
	}
	periodic := cfg.Mode == Always || (cfg.Mode == Auto && cli.IsTerminal(d.Out))
	r := &Reporter{cfg: cfg, d: d, periodic: periodic, start: d.Now()}
	r.last = sample{at: r.start}
	return r
}

// Periodic says whether Run writes progress lines.
func (r *Reporter) Periodic() bool { return r.periodic }

// Run writes a progress line every interval until ctx ends; it returns at
// once when periodic lines are off.
func (r *Reporter) Run(ctx context.Context) {
	if !r.periodic {
		return
	}
	tick := time.NewTicker(r.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			fmt.Fprintln(r.d.Out, r.Line())
		}
	}
}

// Line is the progress line for now, with rates since the previous Line.
func (r *Reporter) Line() string {
	now, st := r.d.Now(), r.d.Stats()
	cur := sample{at: now, events: st.Events}
	elapsed := now.Sub(r.last.at).Seconds()
	var b line
	b.add("progress:")
	if src, ok := r.d.Source.(Bytes); ok {
		read, size := src.BytesRead()
		cur.read = read
		if size > 0 {
			b.addf("%s of %s (%.0f%%),", bytesHuman(read), bytesHuman(size), 100*float64(read)/float64(size))
		} else {
			b.addf("%s read,", bytesHuman(read))
		}
	}
	rate := 0.0
	if elapsed > 0 {
		rate = float64(cur.events-r.last.events) / elapsed
	}
	b.addf("%s events, %s events/s,", count(st.Events), count(int64(rate+0.5)))
	if src, ok := r.d.Source.(Lag); ok {
		lag, parts := src.Lag()
		b.addf("lag %s messages (%d partitions),", count(lag), parts)
	}
	b.addf("%s exchanges%s", count(st.TotalExchanges()), outcomes(st.Exchanges, 4))
	if src, ok := r.d.Source.(Bytes); ok {
		if read, size := src.BytesRead(); size > 0 && elapsed > 0 && cur.read > r.last.read {
			bps := float64(cur.read-r.last.read) / elapsed
			b.addf(", ETA %s", roundDuration(time.Duration(float64(size-read)/bps*float64(time.Second))))
		}
	}
	r.last = cur
	return b.String()
}

// Summary is the one line written at the end of a run.
func (r *Reporter) Summary() string {
	st, took := r.d.Stats(), r.d.Now().Sub(r.start)
	var b line
	b.addf("ingest done: %s events (%s accepted, %s duplicates, %s quarantined),",
		count(st.Events), count(st.Accepted), count(st.Duplicates), count(st.Quarantined))
	b.addf("%s exchanges%s, %s stored, %s evicted,", count(st.TotalExchanges()), outcomes(st.Exchanges, 0), count(st.Stored), count(st.Evicted))
	rate := 0.0
	if took > 0 {
		rate = float64(st.Events) / took.Seconds()
	}
	b.addf("in %s (%s events/s)", roundDuration(took), count(int64(rate+0.5)))
	return b.String()
}
