package schema

import (
	"time"

	"github.com/mcplens/mcplens/classify"
)

// Exchange is one exchange record: one HTTP exchange after correlation and
// classification. The JSON keys are the column names of the exchanges table
// and the keys of `ingest --to stdout`.
type Exchange struct {
	ExchangeID      string    `json:"exchange_id"`
	RequestEventID  string    `json:"request_event_id"`
	ResponseEventID string    `json:"response_event_id"`
	TS              time.Time `json:"ts"`
	EndTS           time.Time `json:"end_ts"`
	DurationMS      float64   `json:"duration_ms"`
	Source          string    `json:"source"`
	Sources         []string  `json:"sources"`
	OneSided        bool      `json:"one_sided"`
	Observer        string    `json:"observer"`
	Server          string    `json:"server"`
	URL             string    `json:"url"`
	ClientName      string    `json:"client_name"`
	ClientVersion   string    `json:"client_version"`
	SessionID       string    `json:"session_id"`
	HTTPMethod      string    `json:"http_method"`
	HTTPStatus      int       `json:"http_status"`
	RequestBytes    int       `json:"request_bytes"`
	ResponseBytes   int       `json:"response_bytes"`
	BodyTruncated   bool      `json:"body_truncated"`
	TransportError  string    `json:"transport_error"`
	CloseReason     string    `json:"stream_close_reason"`
	IdempotencyKey  string    `json:"idempotency_key"`

	classify.Result

	// Filled across exchanges by the correlator.
	Attempt                int    `json:"attempt"`
	RetryOf                string `json:"retry_of"`
	RetryOrigin            string `json:"retry_origin"`
	ChainID                string `json:"chain_id"`
	UnknownSideEffectRetry bool   `json:"unknown_side_effect_retry"`
	Continues              string `json:"continues"`
	ClientOutcome          string `json:"client_outcome"`
	ClientDisagrees        bool   `json:"client_disagrees"`
	// NoResponseReason says why a NO_RESPONSE record was emitted
	// (window expired, pending state evicted, shutdown).
	NoResponseReason string `json:"no_response_reason,omitempty"`
	// MergedEventIDs are the event ids of the other views merged into
	// this record (a client's lines beside the gateway's): the store keeps
	// them so that a restarted ingester knows those lines are handled
	// (Engine.Seed puts them into deduplication) when their shipper sends
	// one again.
	MergedEventIDs []string `json:"merged_event_ids,omitempty"`
	// MergedObservers ("source/observer") are the other views the record
	// measured against the gateway's clock, and MergedOffsetsMS how far
	// each one's clock was off (its request time less the gateway's): a
	// restarted ingester learns the clocks from them (Engine.Seed).
	MergedObservers []string  `json:"merged_observers,omitempty"`
	MergedOffsetsMS []float64 `json:"merged_offsets_ms,omitempty"`
}

// Body is the redacted, capped bodies and headers of one exchange, stored
// apart from the exchange record.
type Body struct {
	ExchangeID      string          `json:"exchange_id"`
	TS              time.Time       `json:"ts"`
	RequestHeaders  classify.Header `json:"request_headers"`
	ResponseHeaders classify.Header `json:"response_headers"`
	RequestBody     string          `json:"request_body"`
	ResponseBody    string          `json:"response_body"`
	Truncated       bool            `json:"truncated"`
}

// Quarantined is an input line that could not be decoded: kept with its raw
// bytes, where it came from and why it was rejected.
type Quarantined struct {
	TS       time.Time `json:"ts"`
	Position string    `json:"position"` // file:line or topic/partition/offset
	Reason   string    `json:"reason"`
	Raw      []byte    `json:"raw"`
}

// ToolAnnotation is the latest known annotations of one tool of one server,
// learned from a recorded tools/list result. Absent hints carry the spec
// defaults (readOnly=false, destructive=true, idempotent=false,
// openWorld=true).
type ToolAnnotation struct {
	Server      string    `json:"server"`
	Tool        string    `json:"tool"`
	ReadOnly    bool      `json:"read_only"`
	Destructive bool      `json:"destructive"`
	Idempotent  bool      `json:"idempotent"`
	OpenWorld   bool      `json:"open_world"`
	SeenAt      time.Time `json:"seen_at"`
}

// HalfEvent returns the one event id of an exchange that has only a
// request (isResponse false) or only a response (isResponse true), and ""
// for a complete one (an exchange event has both ids).
func (x *Exchange) HalfEvent() (id string, isResponse bool) {
	switch {
	case x.RequestEventID == "" && x.ResponseEventID != "":
		return x.ResponseEventID, true
	case x.ResponseEventID == "" && x.RequestEventID != "":
		return x.RequestEventID, false
	}
	return "", false
}
