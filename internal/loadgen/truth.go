package loadgen

import (
	"fmt"
	"slices"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// Expect is the exchange record one call must produce.
type Expect struct {
	// RequestEventID is the event_id of the gateway line that carried the
	// request: the key to find the call's record by (request_event_id).
	RequestEventID string
	// ExchangeID is the id the loggers gave; "" when they gave none and
	// the pipeline derives one.
	ExchangeID string
	Outcome    classify.Outcome
	// RetryOf is the RequestEventID of the earlier attempt this call
	// re-sends; "" for a first attempt.
	RetryOf string
	Attempt int
	Sources []string // sorted: ["gateway"] or ["client", "gateway"]
	TS      time.Time
	// ClientDisagrees: the client logged "success" for a tool error.
	ClientDisagrees bool
	Secret, BadUTF8 bool
}

// Truth is what a load must produce: one exchange per call, the lines
// that must be quarantined, and the secrets that must never be stored.
type Truth struct {
	Calls       []Expect // in start order; kept only with Config.KeepTruth
	Exchanges   int      // calls, re-sends included: the exchange records expected
	Outcomes    map[classify.Outcome]int
	Lines       int // lines yielded, poison and redeliveries included
	Events      int // distinct event lines
	Redelivered int // lines that repeat an earlier line byte for byte
	Poison      int // lines that must be quarantined
	Secrets     []string
	keep        bool
}

// ApartShare is the share of the calls whose records a benchmark lets
// stand apart (a client view not merged with its gateway view: an extra
// record) before it fails: the first misses that teach an untaught clock
// or the merges' extra wait on a shape with clocks or lines further off
// than --merge-window (the truth tests count them exactly).
const ApartShare = 0.01

// CheckRecords compares the exchange records a benchmark's run produced
// with the calls of the load. Fewer records than calls is a loss and an
// error; more are views left apart, returned for the benchmark to report,
// and an error only past ApartShare.
func (t *Truth) CheckRecords(records int) (apart int, err error) {
	switch apart = records - t.Exchanges; {
	case apart < 0:
		return apart, fmt.Errorf("%d exchange records for %d calls: %d lost", records, t.Exchanges, -apart)
	case float64(apart) > ApartShare*float64(t.Exchanges):
		return apart, fmt.Errorf("%d exchange records for %d calls: %d views apart, more than %.0f%% of the calls",
			records, t.Exchanges, apart, 100*ApartShare)
	}
	return apart, nil
}

func (t *Truth) add(c *call) {
	t.Exchanges++
	if t.Outcomes == nil {
		t.Outcomes = map[classify.Outcome]int{}
	}
	t.Outcomes[c.plan.outcome()]++
	if !t.keep {
		return
	}
	e := Expect{
		RequestEventID:  eventID(c, gatewayRequestPart(c)),
		Outcome:         c.plan.outcome(),
		Attempt:         c.attempt,
		Sources:         []string{"gateway"},
		TS:              time.Unix(0, c.tReq).UTC(),
		Secret:          c.secret != "",
		BadUTF8:         c.badUTF8,
		ClientDisagrees: c.disagree,
	}
	if !c.noID {
		e.ExchangeID = exchangeID(c)
	}
	if c.retryOf != nil {
		e.RetryOf = eventID(c.retryOf, gatewayRequestPart(c.retryOf))
	}
	if c.client {
		e.Sources = []string{"client", "gateway"}
	}
	t.Calls = append(t.Calls, e)
}

func gatewayRequestPart(c *call) part {
	if c.split {
		return partRequest
	}
	return partExchange
}

// Tally is how a run's records compare with the truth (Truth.Tally).
type Tally struct {
	Lost  int // calls without a record
	Wrong int // records with another outcome than their call's
	Extra int // records of no call (a client view apart, a stray half)
	// Apart are records seen by the client alone: a view that did not
	// merge with its gateway view. ApartBeforeEnd are those between the
	// first 10 s of the load and its last first attempt (past it the lines
	// thin out: only late responses and re-sends are left, so a fetch of
	// a hundred lines spans seconds).
	Apart, ApartBeforeEnd int
}

// Tally counts recs against the truth, kept with Config.KeepTruth; start
// is the load's Config.Start.
func (t *Truth) Tally(recs []schema.Exchange, start time.Time) Tally {
	var lastStart time.Time
	want := make(map[string]Expect, len(t.Calls))
	for _, e := range t.Calls {
		want[e.RequestEventID] = e
		if e.RetryOf == "" && e.TS.After(lastStart) {
			lastStart = e.TS
		}
	}
	got := make(map[string]int, len(recs))
	var c Tally
	for _, r := range recs {
		got[r.RequestEventID]++
		if slices.Equal(r.Sources, []string{"client"}) {
			c.Apart++
			if r.EndTS.Before(lastStart) && r.TS.After(start.Add(10*time.Second)) {
				c.ApartBeforeEnd++
			}
		}
		if e, ok := want[r.RequestEventID]; !ok {
			c.Extra++
		} else if r.Outcome != e.Outcome {
			c.Wrong++
		}
	}
	for id := range want {
		if got[id] == 0 {
			c.Lost++
		}
	}
	return c
}
