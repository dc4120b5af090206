// Package schema is mcplens' own copy of the log contract: the Go types of
// the input log events and the output exchange records (contract.md beside
// this file documents both), and the storage DDL that holds them.
package schema

import (
	"encoding/json"
	"time"

	"github.com/mcplens/mcplens/classify"
)

// ContractVersion is the version of the log contract this package speaks.
const ContractVersion = 1

// Event kinds.
const (
	KindExchange = "exchange"
	KindRequest  = "request"
	KindResponse = "response"
)

// Event sources.
const (
	SourceGateway = "gateway"
	SourceClient  = "client"
	SourceServer  = "server"
)

// Event is one contract-v1 log event. The JSON keys are the contract's field
// names, spelled flat with dots ("http.status"); the decoder in pipeline also
// accepts the nested spelling ({"http":{"status":...}}).
type Event struct {
	V               int             `json:"v"`
	EventID         string          `json:"event_id"`
	TS              time.Time       `json:"ts"`
	Kind            string          `json:"kind"`
	Source          string          `json:"source"`
	Observer        string          `json:"observer,omitempty"`
	ExchangeID      string          `json:"exchange_id,omitempty"`
	Server          string          `json:"server,omitempty"`
	URL             string          `json:"url,omitempty"`
	ClientName      string          `json:"client_name,omitempty"`
	ClientVersion   string          `json:"client_version,omitempty"`
	SessionID       string          `json:"session_id,omitempty"`
	HTTPMethod      string          `json:"http.method,omitempty"`
	HTTPStatus      int             `json:"http.status,omitempty"`
	RequestHeaders  classify.Header `json:"http.request_headers,omitempty"`
	ResponseHeaders classify.Header `json:"http.response_headers,omitempty"`
	RequestBody     string          `json:"request_body"`
	ResponseBody    string          `json:"response_body"`
	BodyTruncated   bool            `json:"body_truncated,omitempty"`
	DurationMS      *float64        `json:"duration_ms,omitempty"`
	StreamComplete  *bool           `json:"stream.complete,omitempty"`
	CloseReason     string          `json:"stream.close_reason,omitempty"`
	TransportError  string          `json:"transport_error,omitempty"`
	Attempt         int             `json:"attempt,omitempty"`
	RetryOrigin     string          `json:"retry_origin,omitempty"`
	IdempotencyKey  string          `json:"idempotency_key,omitempty"`
	ClientOutcome   string          `json:"client_outcome,omitempty"`
	// Attrs keeps every field the contract does not name, as raw JSON.
	Attrs map[string]json.RawMessage `json:"attrs,omitempty"`
}

// HasRequest reports whether the event carries the request half.
func (e *Event) HasRequest() bool { return e.Kind != KindResponse }

// HasResponse reports whether the event carries the response half.
func (e *Event) HasResponse() bool { return e.Kind != KindRequest }
