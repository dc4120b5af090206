package queries

import (
	"time"

	"github.com/mcplens/mcplens/schema"
)

// The row types: JSON names are the SQL column names of the queries, and
// the names the REST API returns.

// RPCErrorRow is one (server, code, message) row of http200_rpc_errors.
type RPCErrorRow struct {
	Server       string   `json:"server"`
	RPCErrors    int64    `json:"rpc_errors"`
	HTTP200      int64    `json:"http_200"`
	Share        float64  `json:"share"`
	JSONRPCCode  *int64   `json:"jsonrpc_code"`
	ErrorMessage string   `json:"error_message"`
	N            int64    `json:"n"`
	ExampleIDs   []string `json:"example_ids"`
}

// RPCErrorServer is one server that answers HTTP 200 with JSON-RPC errors.
type RPCErrorServer struct {
	Server    string `json:"server"`
	RPCErrors int64  `json:"rpc_errors"`
	// HTTP200 counts all of the server's HTTP 200 answers; Share is
	// RPCErrors/HTTP200.
	HTTP200 int64          `json:"http_200"`
	Share   float64        `json:"share"`
	Top     []RPCErrorCode `json:"top"`
}

// RPCErrorCode is one JSON-RPC error code and message of a server.
type RPCErrorCode struct {
	JSONRPCCode  *int64   `json:"jsonrpc_code"`
	ErrorMessage string   `json:"error_message"`
	N            int64    `json:"n"`
	ExampleIDs   []string `json:"example_ids"`
}

// UnknownRetry is a re-sent tool call whose earlier attempt had an unknown
// outcome.
type UnknownRetry struct {
	ExchangeID  string    `json:"exchange_id"`
	TS          time.Time `json:"ts"`
	ChainID     string    `json:"chain_id"`
	Server      string    `json:"server"`
	ClientName  string    `json:"client_name"`
	SessionID   string    `json:"session_id"`
	ToolName    string    `json:"tool_name"`
	Attempt     int64     `json:"attempt"`
	RetryOrigin string    `json:"retry_origin"`
	Outcome     string    `json:"outcome"`
	RetryOf     string    `json:"retry_of"`
	// PrevOutcome, PrevHTTPStatus and PrevErrorClass are what the attempt
	// just before this one got.
	PrevOutcome    string `json:"prev_outcome"`
	PrevHTTPStatus int64  `json:"prev_http_status"`
	PrevErrorClass string `json:"prev_error_class"`
	// EarlierAttempts counts the chain's attempts before this one;
	// EarlierOutcomes are their distinct outcomes, sorted.
	EarlierAttempts int64    `json:"earlier_attempts"`
	EarlierOutcomes []string `json:"earlier_outcomes"`
	// Annotated: a tools/list result showed the tool; ReadOnly and
	// Idempotent are its hints then (false otherwise).
	Annotated  bool `json:"annotated"`
	ReadOnly   bool `json:"read_only"`
	Idempotent bool `json:"idempotent"`
}

// BreakdownRow counts exchanges of one layer and outcome in one bucket and
// group.
type BreakdownRow struct {
	Bucket    time.Time `json:"bucket"`
	GroupKey  string    `json:"group_key"`
	Layer     string    `json:"layer"`
	Outcome   string    `json:"outcome"`
	Exchanges int64     `json:"exchanges_n"`
}

// LeaderboardRow is one server, client or tool of a leaderboard.
type LeaderboardRow struct {
	GroupKey             string   `json:"group_key"`
	Total                int64    `json:"total"`
	Errors               int64    `json:"errors"`
	ErrorRate            float64  `json:"error_rate"`
	TransportErrorRate   float64  `json:"transport_error_rate"`
	ProtocolErrorRate    float64  `json:"protocol_error_rate"`
	ApplicationErrorRate float64  `json:"application_error_rate"`
	StreamErrorRate      float64  `json:"stream_error_rate"`
	P50MS                *float64 `json:"p50_ms"`
	P95MS                *float64 `json:"p95_ms"`
	P99MS                *float64 `json:"p99_ms"`
}

// DisagreementRow counts exchanges where a client's conclusion contradicts
// the classification.
type DisagreementRow struct {
	ClientName    string   `json:"client_name"`
	ClientVersion string   `json:"client_version"`
	Server        string   `json:"server"`
	ClientOutcome string   `json:"client_outcome"`
	Outcome       string   `json:"outcome"`
	N             int64    `json:"n"`
	ExampleIDs    []string `json:"example_ids"`
}

// RateLimitRow summarizes HTTP 429s of one server and client.
type RateLimitRow struct {
	Server            string   `json:"server"`
	ClientName        string   `json:"client_name"`
	RateLimited       int64    `json:"rate_limited"`
	WithRetryAfter    int64    `json:"with_retry_after"`
	WithoutRetryAfter int64    `json:"without_retry_after"`
	Resent            int64    `json:"resent"`
	EarlyResends      int64    `json:"early_resends"`
	EarlyExampleIDs   []string `json:"early_example_ids"`
}

// StreamCutRow summarizes cut streams and missing responses of a server.
type StreamCutRow struct {
	Server         string   `json:"server"`
	Total          int64    `json:"total"`
	SSE            int64    `json:"sse"`
	StreamCuts     int64    `json:"stream_cuts"`
	NoResponse     int64    `json:"no_response"`
	CutRate        float64  `json:"cut_rate"`
	NoResponseRate float64  `json:"no_response_rate"`
	CloseReasons   []string `json:"close_reasons"`
}

// InputRequiredRow summarizes MRTR input requests of a server and tool.
type InputRequiredRow struct {
	Server              string   `json:"server"`
	ToolName            string   `json:"tool_name"`
	Asked               int64    `json:"asked_n"`
	Answered            int64    `json:"answered"`
	AnsweredOK          int64    `json:"answered_ok"`
	Abandoned           int64    `json:"abandoned"`
	AbandonedExampleIDs []string `json:"abandoned_example_ids"`
}

// ChainLink is one exchange of a retry or MRTR chain.
type ChainLink struct {
	ExchangeID             string    `json:"exchange_id"`
	TS                     time.Time `json:"ts"`
	Attempt                int64     `json:"attempt"`
	RetryOf                string    `json:"retry_of"`
	Continues              string    `json:"continues"`
	RetryOrigin            string    `json:"retry_origin"`
	Method                 string    `json:"method"`
	ToolName               string    `json:"tool_name"`
	HTTPStatus             int64     `json:"http_status"`
	Layer                  string    `json:"layer"`
	Outcome                string    `json:"outcome"`
	ErrorClass             string    `json:"error_class"`
	JSONRPCCode            *int64    `json:"jsonrpc_code"`
	RetryAfterS            *int64    `json:"retry_after_s"`
	RetryAdvice            string    `json:"retry_advice"`
	SideEffectRisk         string    `json:"side_effect_risk"`
	UnknownSideEffectRetry bool      `json:"unknown_side_effect_retry"`
	DurationMS             float64   `json:"duration_ms"`
}

// ExchangeDetail is one exchange with everything a postmortem needs.
type ExchangeDetail struct {
	Exchange schema.Exchange `json:"exchange"`
	// Body is nil when the body is not stored (or expired: bodies have a
	// shorter retention).
	Body *schema.Body `json:"body"`
	// Chain is every exchange of the exchange's chain, in order: each link
	// says how it joins by retry_of (an attempt of the call) or continues
	// (an MRTR round); the first has neither.
	Chain []ChainLink `json:"chain"`
}

// TimelineRow is one exchange of a session timeline.
type TimelineRow struct {
	ExchangeID   string    `json:"exchange_id"`
	TS           time.Time `json:"ts"`
	EndTS        time.Time `json:"end_ts"`
	DurationMS   float64   `json:"duration_ms"`
	Server       string    `json:"server"`
	ClientName   string    `json:"client_name"`
	HTTPMethod   string    `json:"http_method"`
	Method       string    `json:"method"`
	ToolName     string    `json:"tool_name"`
	JSONRPCID    string    `json:"jsonrpc_id"`
	HTTPStatus   int64     `json:"http_status"`
	Layer        string    `json:"layer"`
	Outcome      string    `json:"outcome"`
	ErrorClass   string    `json:"error_class"`
	JSONRPCCode  *int64    `json:"jsonrpc_code"`
	ErrorMessage string    `json:"error_message"`
	RetryAdvice  string    `json:"retry_advice"`
	Attempt      int64     `json:"attempt"`
	RetryOf      string    `json:"retry_of"`
	Continues    string    `json:"continues"`
	ChainID      string    `json:"chain_id"`
	Evidence     string    `json:"evidence"`
}

// SearchRow is one exchange found by Search.
type SearchRow struct {
	ExchangeID   string    `json:"exchange_id"`
	TS           time.Time `json:"ts"`
	DurationMS   float64   `json:"duration_ms"`
	Server       string    `json:"server"`
	ClientName   string    `json:"client_name"`
	SessionID    string    `json:"session_id"`
	Method       string    `json:"method"`
	ToolName     string    `json:"tool_name"`
	HTTPStatus   int64     `json:"http_status"`
	Layer        string    `json:"layer"`
	Outcome      string    `json:"outcome"`
	ErrorClass   string    `json:"error_class"`
	JSONRPCCode  *int64    `json:"jsonrpc_code"`
	ErrorMessage string    `json:"error_message"`
	RetryAdvice  string    `json:"retry_advice"`
	Attempt      int64     `json:"attempt"`
	ChainID      string    `json:"chain_id"`
	Evidence     string    `json:"evidence"`
}

// QuarantineRow is one quarantined input line.
type QuarantineRow struct {
	TS       time.Time `json:"ts"`
	Position string    `json:"position"`
	Reason   string    `json:"reason"`
	Raw      string    `json:"raw"`
}

// Page is one page of an ordered listing. Next is the cursor of the next
// page, "" on the last one.
type Page[T any] struct {
	Rows []T    `json:"rows"`
	Next string `json:"next"`
}
