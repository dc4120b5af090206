package mcptest

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"time"

	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/tap"
)

// ProxyOptions configures [NewProxy].
type ProxyOptions struct {
	// Upstream is the MCP endpoint of the SDK server under test. Required.
	Upstream *url.URL
	// Faults are injected around the recorder: the kinds that change what
	// the client sent ([FaultBadVersion], [FaultGarbleBody]) before it, so
	// the recording shows the request the server got; the others between
	// the recorder and the upstream, like [NewServer]'s.
	Faults []Fault
	// Tap configures the recorder.
	Tap tap.Config
	// Writer receives one event per HTTP exchange. Required.
	Writer tap.Writer
}

// NewProxy returns a recording reverse proxy in front of an MCP server
// written with any SDK, for recording its traffic with a real client of
// the same SDK:
//
//	rewrite faults -> tap.Recorder -> faults -> httputil.ReverseProxy
//
// The reverse proxy flushes every write at once, so event streams stay
// live; a stream the upstream breaks makes it abort the client connection
// (http.ErrAbortHandler), which the recorder records as a server abort.
func NewProxy(opts ProxyOptions) (http.Handler, error) {
	if opts.Upstream == nil || opts.Writer == nil {
		return nil, errors.New("mcptest: ProxyOptions.Upstream and Writer are required")
	}
	rp := httputil.NewSingleHostReverseProxy(opts.Upstream)
	rp.FlushInterval = -1
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if r.Context().Err() != nil {
			return // the client went away: nobody gets an answer
		}
		http.Error(w, "upstream: "+err.Error(), http.StatusBadGateway)
	}
	rewriting := func(f Fault) bool { return f.Kind.rewrites() }
	inner := newFaults(rp, slices.DeleteFunc(slices.Clone(opts.Faults), rewriting))
	rec, err := tap.New(opts.Tap, tap.Deps{Next: inner, Writer: opts.Writer})
	if err != nil {
		return nil, fmt.Errorf("mcptest proxy: %w", err)
	}
	outer := slices.DeleteFunc(slices.Clone(opts.Faults), func(f Fault) bool { return !rewriting(f) })
	return newFaults(rec, outer), nil
}

// Mark is when a client started a step, by the client's clock.
type Mark struct {
	Step  string    `json:"step"`
	Start time.Time `json:"start"`
}

// Label sorts events by request start and labels each with the scenario
// (attrs.scenario) and the step that was running when its request started
// (attrs.step), given the steps' marks in order.
func Label(evs []schema.Event, scenario string, marks []Mark) []schema.Event {
	sm := make([]stepMark, len(marks))
	for i, m := range marks {
		sm[i] = stepMark{name: m.Step, start: m.Start}
	}
	return label(evs, scenario, sm)
}
