package mcptest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/tap"
)

// ViewOptions shapes [TwoViews]. Zero fields mean defaults.
type ViewOptions struct {
	// Seed picks the client clock offset, the shipping delays, the
	// redelivered lines and the poison line's place.
	Seed uint64
	// MaxSkew bounds the client clock's offset from the gateway's, either
	// way. Default 1s.
	MaxSkew time.Duration
	// Redeliver is the share of lines shipped twice. Default 0.03.
	Redeliver float64
	// MaxShipDelay bounds how late the client's shipper sends a line.
	// Default 800ms; the gateway's shipper is at most 50ms late.
	MaxShipDelay time.Duration
}

func (o *ViewOptions) defaults() {
	if o.MaxSkew == 0 {
		o.MaxSkew = time.Second
	}
	if o.Redeliver == 0 {
		o.Redeliver = 0.03
	}
	if o.MaxShipDelay == 0 {
		o.MaxShipDelay = 800 * time.Millisecond
	}
}

// ClientObserver names the client view's observer in [TwoViews].
const ClientObserver = "client-app"

// View is what [TwoViews] made of one recorded exchange.
type View struct {
	// GatewayID is the recorded exchange's id, which the merged record
	// keeps.
	GatewayID string
	// Client says whether the client logged the exchange too (the POSTs
	// of its calls and notifications; GET streams, DELETEs and a body it
	// could not have formed are the gateway's alone).
	Client bool
	// ClientOutcome and Attempt are what the client's record says (empty
	// and 0 when it says nothing).
	ClientOutcome string
	Attempt       int
}

// TwoViews turns a gateway recording (one exchange event per HTTP
// exchange, labelled by sdkrec with attrs.step and attrs.client_got) into
// what two observers ship in production: the gateway's split request and
// response records, and the client application's own records of its POSTs
// (no shared exchange_id: half carry an id of the client's own, split in
// halves, the rest are whole exchange records), written by a clock
// MaxSkew off, with what the SDK call returned (client_outcome: "success"
// when it returned a result, isError or not; "error" when it raised) and,
// on the split ones, the application's attempt. Lines come in shipping
// order (each shipper late by its own random delay), a share of them
// twice, and one poison line of bad bytes somewhere. It returns the lines
// and, per recorded exchange in order, what was made of it.
func TwoViews(evs []schema.Event, opts ViewOptions) ([][]byte, []View) {
	opts.defaults()
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5851f42d4c957f2d))
	skew := time.Duration(rng.Int64N(int64(2*opts.MaxSkew+1))) - opts.MaxSkew
	type shipped struct {
		at   time.Time
		line []byte
	}
	var out []shipped
	ship := func(ev schema.Event, clock time.Duration, delay time.Duration) {
		if ev.Kind == "" {
			return // the response half of an event shipped whole
		}
		ev.TS = ev.TS.Add(clock)
		line, err := tap.MarshalLine(ev)
		if err != nil {
			panic(err) // a recorded event always marshals
		}
		out = append(out, shipped{ev.TS.Add(time.Duration(rng.Int64N(int64(delay) + 1))), line})
	}
	views := make([]View, len(evs))
	attempts := clientAttempts(evs)
	for i, ev := range evs {
		views[i].GatewayID = ev.ExchangeID
		req, resp := split(ev)
		ship(req, 0, 50*time.Millisecond)
		ship(resp, 0, 50*time.Millisecond)
		if ev.HTTPMethod != "POST" || rpcMethod(ev.RequestBody) == "" {
			continue // the client logs its calls and notifications, not a body it could not form
		}
		c := ev
		c.Source, c.Observer, c.ExchangeID, c.EventID = schema.SourceClient, ClientObserver, "", "c-"+ev.EventID
		c.ClientName, c.ClientVersion = clientOf(evs, i)
		c.TS = c.TS.Add(-time.Duration(rng.Int64N(int64(3*time.Millisecond)) + 1))
		if d := c.DurationMS; d != nil {
			dd := *d + 2*float64(ev.TS.Sub(c.TS))/float64(time.Millisecond)
			c.DurationMS = &dd
		}
		c.Attrs = nil
		views[i].Client = true
		views[i].ClientOutcome = attempts[i].outcome
		c.ClientOutcome = attempts[i].outcome
		if rng.IntN(2) == 0 {
			ship(c, skew, opts.MaxShipDelay)
			continue
		}
		c.ExchangeID = "c-" + shortHash(ev.ExchangeID)
		if attempts[i].n > 0 {
			c.Attempt = attempts[i].n
			views[i].Attempt = attempts[i].n
			if c.Attempt > 1 {
				c.RetryOrigin = "app"
			}
		}
		creq, cresp := split(c)
		ship(creq, skew, opts.MaxShipDelay)
		ship(cresp, skew, opts.MaxShipDelay)
	}
	n := len(out)
	for i := 0; i < n; i++ {
		if rng.Float64() < opts.Redeliver {
			again := out[i]
			again.at = again.at.Add(time.Duration(rng.Int64N(int64(2 * time.Second))))
			out = append(out, again)
		}
	}
	slices.SortStableFunc(out, func(a, b shipped) int { return a.at.Compare(b.at) })
	lines := make([][]byte, 0, len(out)+1)
	for _, s := range out {
		lines = append(lines, s.line)
	}
	poison := []byte("{\"v\":1,\"ts\":\"2026-12-01T00:00:00Z\",\"kind\":\"request\",\"source\":\"gateway\",\"request_body\":\"\xff\xfe\x00\"\n")
	at := rng.IntN(len(lines) + 1)
	lines = slices.Insert(lines, at, poison)
	return lines, views
}

// split makes the request and response records of one exchange event.
func split(ev schema.Event) (req, resp schema.Event) {
	req, resp = ev, ev
	req.Kind, resp.Kind = schema.KindRequest, schema.KindResponse
	req.EventID, resp.EventID = ev.EventID+"-q", ev.EventID+"-r"
	req.HTTPStatus, req.ResponseHeaders, req.ResponseBody = 0, nil, ""
	req.StreamComplete, req.CloseReason, req.TransportError, req.DurationMS = nil, "", "", nil
	req.ClientOutcome = ""
	resp.RequestHeaders, resp.RequestBody = nil, ""
	if ev.DurationMS != nil {
		resp.TS = ev.TS.Add(time.Duration(*ev.DurationMS * float64(time.Millisecond)))
	}
	if ev.ExchangeID == "" {
		// Without an id the halves could not be paired: ship it whole.
		return ev, schema.Event{}
	}
	return req, resp
}

type attempt struct {
	n       int
	outcome string
}

// clientAttempts says, per recorded exchange, which attempt of its call
// the application made and what the SDK call returned: the last tools/call
// of a step got the step's result, the ones before it raised. A step
// re-sent in a new session continues the attempts of the step before it.
func clientAttempts(evs []schema.Event) []attempt {
	out := make([]attempt, len(evs))
	last := map[string]int{} // step -> index of its last tools/call
	n, prevStep := 0, ""
	for i, ev := range evs {
		if !isToolCall(ev.RequestBody) || strings.Contains(ev.RequestBody, `"inputResponses"`) || strings.Contains(ev.RequestBody, `"requestState"`) {
			continue // an MRTR follow-up continues its call: no new attempt
		}
		step := attr(ev, "step")
		switch {
		case step == prevStep:
			n++
		case strings.HasPrefix(step, "resent in new session"):
			n++
		default:
			n = 1
		}
		prevStep = step
		out[i].n = n
		out[i].outcome = "error"
		last[step] = i
	}
	for _, i := range last {
		switch attr(evs[i], "client_got") {
		case "result", "tool_error":
			out[i].outcome = "success"
		case "":
			// The recording does not say what the client concluded (the Go
			// SDK corpus): its client logs no conclusion.
			for j := range out {
				out[j].outcome = ""
			}
			return out
		}
	}
	return out
}

// clientOf is the client's own name for exchange i: the clientInfo of its
// session's initialize, or of its own 2026 _meta.
func clientOf(evs []schema.Event, i int) (string, string) {
	ev := evs[i]
	if strings.Contains(ev.RequestBody, "clientInfo") {
		return ev.ClientName, ev.ClientVersion
	}
	for j := i - 1; j >= 0; j-- {
		if evs[j].SessionID == ev.SessionID && ev.SessionID != "" && strings.Contains(evs[j].RequestBody, `"initialize"`) {
			return evs[j].ClientName, evs[j].ClientVersion
		}
	}
	return ev.ClientName, ev.ClientVersion
}

func isToolCall(body string) bool { return rpcMethod(body) == "tools/call" }

func rpcMethod(body string) string {
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal([]byte(body), &m)
	return m.Method
}

func attr(ev schema.Event, k string) string {
	var s string
	_ = json.Unmarshal(ev.Attrs[k], &s)
	return s
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
