package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"time"
	"unsafe"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// observation is one observer's complete view of one HTTP exchange: an
// exchange event, or a request event paired with its response event (or
// with nothing, when the response never came).
type observation struct {
	req, resp *schema.Event   // either may be nil, not both
	positions []Position      // source positions of the events it holds
	saved     []bool          // per position: held in the sink's state
	evs       []*schema.Event // per position: the event read there
	emitted   bool            // released in a batch
	holds     uint8           // flushes it waited unsaved (see Config.StateHold)
	ts        time.Time       // request time (response time for an orphan)
	result    classify.Result
	evicted   bool   // NO_RESPONSE because pending state was full
	reason    string // why a NO_RESPONSE or orphan was emitted
	// The storage of positions, saved and evs: an observation holds one
	// event or two, so one allocation carries it and them.
	pos2   [2]Position
	saved2 [2]bool
	evs2   [2]*schema.Event
}

// hold adds the event read at p (saved: held in the sink's state).
func (o *observation) hold(p Position, saved bool, ev *schema.Event) {
	if o.positions == nil {
		o.positions, o.saved, o.evs = o.pos2[:0], o.saved2[:0], o.evs2[:0]
	}
	o.positions, o.saved, o.evs = append(o.positions, p), append(o.saved, saved), append(o.evs, ev)
}

// eventAt returns the event read at o.positions[i].
func (o *observation) eventAt(i int) *schema.Event { return o.evs[i] }

// first returns the event that carries the request half, else the response.
func (o *observation) first() *schema.Event {
	if o.req != nil {
		return o.req
	}
	return o.resp
}

func (o *observation) source() string { return o.first().Source }

// bytesOf views a string as bytes without copying; the classifier only
// reads.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// exchange builds the classifier's input from the observation.
func (o *observation) exchange() classify.Exchange {
	var ex classify.Exchange
	ex.Evidence, ex.Envelope = evidenceOf(o.req, o.resp)
	if o.req != nil {
		ex.HTTPMethod = o.req.HTTPMethod
		ex.RequestHeaders = o.req.RequestHeaders
		ex.RequestBody = bytesOf(o.req.RequestBody)
		ex.BodyTruncated = o.req.BodyTruncated
	}
	r := o.resp
	if r == nil {
		ex.NoResponse, ex.Evicted = true, o.evicted
		return ex
	}
	if o.req == nil {
		ex.HTTPMethod, ex.RequestUnseen = r.HTTPMethod, true
	}
	ex.Status = r.HTTPStatus
	ex.ResponseHeaders = r.ResponseHeaders
	ex.ResponseBody = bytesOf(r.ResponseBody)
	ex.BodyTruncated = ex.BodyTruncated || r.BodyTruncated
	ex.TransportError = clientGaveUp(r)
	ex.CloseReason = r.CloseReason
	ex.ResponseTime = r.TS
	if r.StreamComplete != nil {
		ex.Stream = classify.StreamCut
		if *r.StreamComplete {
			ex.Stream = classify.StreamComplete
		}
	}
	return ex
}

// clientGaveUp returns r's transport_error, with the timeout that a
// gateway logs for a client that went away before any status (attrs
// aborted_by "client": Envoy's DC, nginx's 499, older cmd/tap records)
// read as the client_abort it was, so that it classifies CLIENT_ABORT like
// the same client leaving after the status, not TIMEOUT.
func clientGaveUp(r *schema.Event) string {
	if r.TransportError == "timeout" && attrString(r, "aborted_by") == "client" {
		return "client_abort"
	}
	return r.TransportError
}

// classify fills o.result.
func (o *observation) classify() {
	ex := o.exchange()
	o.result = classify.Classify(&ex)
}

// serverName is the logical server name, falling back to the URL's host.
func serverName(ev *schema.Event) string {
	if ev.Server != "" {
		return ev.Server
	}
	if ev.URL == "" {
		return ""
	}
	u, err := url.Parse(ev.URL)
	if err != nil {
		return ""
	}
	return u.Host
}

// exchangeID is the exchange's id: the one the logger gave, else one
// derived from the event that carried the request (so that a replay derives
// the same id and stores collapse the duplicate).
func exchangeID(ev *schema.Event) string {
	if ev.ExchangeID != "" {
		return ev.ExchangeID
	}
	sum := eventSum(ev)
	return "x-" + hex.EncodeToString(sum[:12])
}

// apartExchangeID is the id of a record whose view missed its merge: the
// logger's exchange_id was already given to another observer's view of
// the exchange, released before this one was read. Under the same id one
// of the two would be lost, since a store keeps an exchange id once (a
// replay's copy); the suffix, derived from the view's own event, keeps
// both, and a replay derives the same id again.
func apartExchangeID(ev *schema.Event) string {
	sum := eventSum(ev)
	return ev.ExchangeID + "~" + hex.EncodeToString(sum[:6])
}

// apartSuffixLen is the length of the suffix apartExchangeID appends.
const apartSuffixLen = 1 + 12

// baseExchangeID is id without the suffix of apartExchangeID: the id of
// the exchange a missed view's record is a view of.
func baseExchangeID(id string) string {
	i := len(id) - apartSuffixLen
	if i <= 0 || id[i] != '~' {
		return id
	}
	for _, c := range []byte(id[i+1:]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return id
		}
	}
	return id[:i]
}

func eventSum(ev *schema.Event) [32]byte {
	return sha256.Sum256([]byte(ev.Kind + "\x00" + ev.EventID))
}
