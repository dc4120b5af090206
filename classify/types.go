// Package classify decides, for one recorded HTTP exchange of MCP traffic,
// the layer where it failed (transport, protocol, application, interaction,
// stream), the outcome, a finer error class, and what a client may safely do
// next.
//
// The package is pure: it performs no I/O, keeps no state between calls and is
// safe for concurrent use. [Classify] is the only entry point.
package classify

import (
	"strconv"
	"time"
)

// StreamEnd tells how an SSE response stream ended, as the observer saw it.
type StreamEnd uint8

const (
	// StreamUnknown: the observer did not record stream completion.
	StreamUnknown StreamEnd = iota
	// StreamComplete: the stream ended normally.
	StreamComplete
	// StreamCut: the stream was cut (abort, reset, timeout).
	StreamCut
)

// Exchange is one recorded HTTP exchange: everything the classifier looks at.
// Bodies are raw bytes exactly as logged; they are only read, never retained.
type Exchange struct {
	HTTPMethod      string // POST, GET, DELETE; empty means POST
	RequestHeaders  Header
	RequestBody     []byte
	Status          int // 0 when no HTTP response arrived
	ResponseHeaders Header
	ResponseBody    []byte
	Stream          StreamEnd
	CloseReason     string // eof, client_abort, server_abort, timeout, reset
	TransportError  string // timeout, connection_refused, connection_reset, tls, dns, free text
	BodyTruncated   bool   // the logger cut a body
	NoResponse      bool   // the correlator gave up waiting for a response
	// RequestUnseen: a response whose request no observer logged, or not
	// within the pair window (a tool that ran past it, a request line
	// lost, a restart between the two). The response is then judged by
	// what it holds: the first answer on a stream is taken for the final
	// one, and a result with isError or a content array is a tool result.
	RequestUnseen bool
	Evicted       bool // with NoResponse: pending state was full, not the window
	ResponseTime  time.Time
	// Evidence is how much the record holds; empty means bodies. With
	// envelope or status_only, Envelope (may be nil) is what is known and
	// the classification goes no further than that (evidence.go).
	Evidence Evidence
	Envelope *Envelope
}

// Layer is where an exchange failed, or "application" for a success.
type Layer string

// Layers, see the log contract.
const (
	LayerTransport   Layer = "transport"
	LayerProtocol    Layer = "protocol"
	LayerApplication Layer = "application"
	LayerInteraction Layer = "interaction"
	LayerStream      Layer = "stream"
)

// Outcome is the single verdict on an exchange.
type Outcome string

// Outcomes of the log contract.
const (
	Success            Outcome = "SUCCESS"
	ToolSuccess        Outcome = "TOOL_SUCCESS"
	ToolError          Outcome = "TOOL_ERROR"
	InputRequired      Outcome = "INPUT_REQUIRED"
	Accepted           Outcome = "ACCEPTED"
	HTTPError          Outcome = "HTTP_ERROR"
	TransportError     Outcome = "TRANSPORT_ERROR"
	NoResponse         Outcome = "NO_RESPONSE"
	JSONRPCError       Outcome = "JSONRPC_ERROR"
	MalformedJSON      Outcome = "MALFORMED_JSON"
	InvalidEnvelope    Outcome = "INVALID_ENVELOPE"
	InvalidToolResult  Outcome = "INVALID_TOOL_RESULT"
	StreamIncomplete   Outcome = "STREAM_INCOMPLETE"
	UnexpectedResponse Outcome = "UNEXPECTED_RESPONSE"
	// Cancelled: the client cancelled the request (notifications/cancelled)
	// and the server confirmed with JSON-RPC -32800. The client's decision,
	// not a server failure.
	Cancelled Outcome = "CANCELLED"
)

// Outcomes lists every outcome, in the order of the log contract.
var Outcomes = []Outcome{
	Success, ToolSuccess, ToolError, InputRequired, Accepted, HTTPError,
	TransportError, NoResponse, JSONRPCError, MalformedJSON, InvalidEnvelope,
	InvalidToolResult, StreamIncomplete, UnexpectedResponse, Cancelled, Unverified,
}

// Layer returns the layer an outcome belongs to.
func (o Outcome) Layer() Layer {
	switch o {
	case Success, ToolSuccess, ToolError:
		return LayerApplication
	case InputRequired, Cancelled:
		return LayerInteraction
	case Accepted, HTTPError, TransportError, NoResponse, Unverified:
		return LayerTransport
	case StreamIncomplete:
		return LayerStream
	default:
		return LayerProtocol
	}
}

// Transport is how the response body was carried.
type Transport string

// Transports.
const (
	TransportJSON  Transport = "json"
	TransportSSE   Transport = "sse"
	TransportEmpty Transport = "empty"
	TransportNone  Transport = "none"
)

// Advice is what a client may safely do next.
type Advice string

// Retry advice values of the log contract.
const (
	AdviceNone           Advice = "NONE"
	AdviceRetryAfter     Advice = "RETRY_AFTER"
	AdviceRetryIfSafe    Advice = "RETRY_IF_SAFE"
	AdviceFixRequest     Advice = "FIX_REQUEST"
	AdviceReauthenticate Advice = "REAUTHENTICATE"
	AdviceReinitialize   Advice = "REINITIALIZE"
	AdviceDoNotRetry     Advice = "DO_NOT_RETRY_BLINDLY"
	AdviceContinueInput  Advice = "CONTINUE_INPUT"
)

// Risk is the side-effect risk of an exchange.
type Risk string

// Side-effect risks: none (the tool did not run, or the method has no side
// effects), possible (the tool ran, so its effects happened, and the client
// knows the outcome), unknown (the client cannot know whether it ran).
const (
	RiskNone     Risk = "none"
	RiskPossible Risk = "possible"
	RiskUnknown  Risk = "unknown"
)

// NullInt is an integer that may be absent; it marshals to JSON null when
// not Valid.
type NullInt struct {
	V     int64
	Valid bool
}

// Int returns a valid NullInt.
func Int(v int64) NullInt { return NullInt{V: v, Valid: true} }

// MarshalJSON implements json.Marshaler.
func (n NullInt) MarshalJSON() ([]byte, error) {
	if !n.Valid {
		return []byte("null"), nil
	}
	return strconv.AppendInt(nil, n.V, 10), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *NullInt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = NullInt{}
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return err
	}
	*n = Int(v)
	return nil
}

// Result is every field of the exchange record that one exchange alone
// determines. The JSON keys are the column names of the log contract.
type Result struct {
	Layer          Layer      `json:"layer"`
	Outcome        Outcome    `json:"outcome"`
	ErrorClass     ErrorClass `json:"error_class"`
	JSONRPCCode    NullInt    `json:"jsonrpc_code"`
	ErrorMessage   string     `json:"error_message"`
	RetryAfterS    NullInt    `json:"retry_after_s"`
	RetryAdvice    Advice     `json:"retry_advice"`
	OutcomeKnown   bool       `json:"outcome_known"`
	SideEffectRisk Risk       `json:"side_effect_risk"`
	// Rule names the rule that decided the outcome: the evidence a
	// postmortem quotes.
	Rule string `json:"rule"`
	// Evidence is how much the record held: bodies, envelope or
	// status_only (Classify always names one; a stored row written before
	// the evidence column may read '' for unknown).
	Evidence Evidence `json:"evidence"`

	JSONRPCID       string    `json:"jsonrpc_id"`
	Method          string    `json:"method"`
	ToolName        string    `json:"tool_name"`
	ParamsHash      string    `json:"params_hash"`
	ProtocolVersion string    `json:"protocol_version"`
	ContentType     string    `json:"content_type"`
	Transport       Transport `json:"transport"`
	SSEEvents       int       `json:"sse_events"`
	// Batch is the number of messages in a JSON-RPC batch request, 0 for a
	// single message.
	Batch int `json:"batch"`
	// Notification: the request was a notification or a client response
	// (no reply expected).
	Notification bool `json:"notification"`
	// Continuation: the request carried inputResponses or requestState, so
	// it continues an earlier input_required round (MRTR), not a retry.
	Continuation bool `json:"continuation"`
}
