package tap

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/mcplens/mcplens/schema"
)

// Writer receives the recorded events. The Recorder calls WriteEvent from
// every request goroutine, so implementations must be safe for concurrent
// use. The context carries the request's values but is never cancelled by
// the client going away: an exchange the client abandoned is still written.
type Writer interface {
	WriteEvent(ctx context.Context, ev schema.Event) error
}

// NDJSON writes each event as one JSON line to an io.Writer. It is safe for
// concurrent use: each line reaches the underlying writer in a single Write
// call under a mutex, so lines never interleave.
type NDJSON struct {
	mu sync.Mutex
	w  io.Writer
}

// NewNDJSON returns a Writer that appends NDJSON lines to w.
func NewNDJSON(w io.Writer) *NDJSON { return &NDJSON{w: w} }

// WriteEvent encodes ev as one line. HTML characters in bodies are kept as
// they are (no \u003c escapes) so that the log stays readable.
func (n *NDJSON) WriteEvent(_ context.Context, ev schema.Event) error {
	line, err := MarshalLine(ev)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.w.Write(line); err != nil {
		return fmt.Errorf("write event %s: %w", ev.EventID, err)
	}
	return nil
}

// MarshalLine encodes ev as one NDJSON line, newline included, without HTML
// escaping.
func MarshalLine(ev schema.Event) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return nil, fmt.Errorf("encode event %s: %w", ev.EventID, err)
	}
	return buf.Bytes(), nil
}

// Collector keeps events in memory, for tests. The zero value is ready to
// use and it is safe for concurrent use.
type Collector struct {
	mu     sync.Mutex
	events []schema.Event
}

// WriteEvent appends ev.
func (c *Collector) WriteEvent(_ context.Context, ev schema.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, ev)
	return nil
}

// Events returns a copy of the events written so far, in write order (the
// order in which exchanges ended).
func (c *Collector) Events() []schema.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.events)
}

// Len is the number of events written so far.
func (c *Collector) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.events)
}
