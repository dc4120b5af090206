package loadgen

import (
	"time"

	"github.com/mcplens/mcplens/classify"
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
