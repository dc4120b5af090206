package classify

// ErrorClass is a finer cause within an outcome. The empty class means the
// outcome needs no further detail (a success, an accepted notification).
type ErrorClass string

// Error classes. The README explains each; TestReadmeDocumentsEveryClass
// keeps the two in step.
const (
	ClassNone ErrorClass = ""

	// From the HTTP status.
	AuthRequired         ErrorClass = "AUTH_REQUIRED"
	Forbidden            ErrorClass = "FORBIDDEN"
	InsufficientScope    ErrorClass = "INSUFFICIENT_SCOPE"
	SessionNotFound      ErrorClass = "SESSION_NOT_FOUND"
	NotFound             ErrorClass = "NOT_FOUND"
	MethodNotAllowed     ErrorClass = "METHOD_NOT_ALLOWED"
	NotAcceptable        ErrorClass = "NOT_ACCEPTABLE"
	UnsupportedMediaType ErrorClass = "UNSUPPORTED_MEDIA_TYPE"
	Conflict             ErrorClass = "CONFLICT"
	RateLimited          ErrorClass = "RATE_LIMITED"
	PayloadTooLarge      ErrorClass = "PAYLOAD_TOO_LARGE"
	BadRequest           ErrorClass = "BAD_REQUEST"
	ClientError          ErrorClass = "CLIENT_ERROR"
	ServerError          ErrorClass = "SERVER_ERROR"
	Redirect             ErrorClass = "REDIRECT"
	BatchRejected        ErrorClass = "BATCH_REJECTED"

	// From the JSON-RPC error code (on a 200 or in an HTTP error body).
	ParseError              ErrorClass = "PARSE_ERROR"
	InvalidRequest          ErrorClass = "INVALID_REQUEST"
	MethodNotFound          ErrorClass = "METHOD_NOT_FOUND"
	InvalidParams           ErrorClass = "INVALID_PARAMS"
	InternalError           ErrorClass = "INTERNAL_ERROR"
	ResourceNotFound        ErrorClass = "RESOURCE_NOT_FOUND"
	URLElicitationRequired  ErrorClass = "URL_ELICITATION_REQUIRED"
	HeaderMismatch          ErrorClass = "HEADER_MISMATCH"
	MissingCapability       ErrorClass = "MISSING_CAPABILITY"
	UnsupportedVersion      ErrorClass = "UNSUPPORTED_VERSION"
	ImplementationError     ErrorClass = "IMPLEMENTATION_ERROR"
	ApplicationDefinedError ErrorClass = "APPLICATION_ERROR"

	// From tool results.
	ToolInputValidation  ErrorClass = "TOOL_INPUT_VALIDATION"
	ToolOutputValidation ErrorClass = "TOOL_OUTPUT_VALIDATION"
	UnknownTool          ErrorClass = "UNKNOWN_TOOL"
	ToolFailed           ErrorClass = "TOOL_FAILED"

	// From the transport and the stream.
	Timeout           ErrorClass = "TIMEOUT"
	ConnectionReset   ErrorClass = "CONNECTION_RESET"
	ConnectionRefused ErrorClass = "CONNECTION_REFUSED"
	TLSError          ErrorClass = "TLS_ERROR"
	DNSError          ErrorClass = "DNS_ERROR"
	NetworkError      ErrorClass = "NETWORK_ERROR"
	ClientAbort       ErrorClass = "CLIENT_ABORT"
	ServerAbort       ErrorClass = "SERVER_ABORT"
	StreamEndedEarly  ErrorClass = "STREAM_ENDED_EARLY"
	NoResponseWindow  ErrorClass = "RESPONSE_WINDOW_EXPIRED"
	PendingEvicted    ErrorClass = "PENDING_EVICTED"

	// From the envelope and result shape.
	IDMismatch        ErrorClass = "ID_MISMATCH"
	MissingID         ErrorClass = "MISSING_ID"
	ResultAndError    ErrorClass = "RESULT_AND_ERROR"
	NoResultOrError   ErrorClass = "NO_RESULT_OR_ERROR"
	BadVersion        ErrorClass = "BAD_JSONRPC_VERSION"
	BadErrorObject    ErrorClass = "BAD_ERROR_OBJECT"
	NotAResponse      ErrorClass = "NOT_A_RESPONSE"
	BatchMismatch     ErrorClass = "BATCH_MISMATCH"
	ResultNotObject   ErrorClass = "RESULT_NOT_OBJECT"
	ContentNotArray   ErrorClass = "CONTENT_NOT_ARRAY"
	IsErrorNotBoolean ErrorClass = "ISERROR_NOT_BOOLEAN"
	UnknownResultType ErrorClass = "UNKNOWN_RESULT_TYPE"
	BadInputRequest   ErrorClass = "BAD_INPUT_REQUIRED"
	AcceptedRequest   ErrorClass = "ACCEPTED_FOR_REQUEST"
	EmptyBody         ErrorClass = "EMPTY_BODY"
	BodyForNotice     ErrorClass = "BODY_FOR_NOTIFICATION"
	BodyTruncated     ErrorClass = "BODY_TRUNCATED"

	// RequestCancelled is JSON-RPC -32800, the answer to a request the
	// client cancelled (outcome CANCELLED).
	RequestCancelled ErrorClass = "REQUEST_CANCELLED"
)

// ErrorClasses lists every non-empty class.
var ErrorClasses = []ErrorClass{
	AuthRequired, Forbidden, InsufficientScope, SessionNotFound, NotFound,
	MethodNotAllowed, NotAcceptable, UnsupportedMediaType, Conflict,
	RateLimited, PayloadTooLarge, BadRequest, ClientError, ServerError,
	Redirect, BatchRejected,
	ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError,
	ResourceNotFound, URLElicitationRequired, HeaderMismatch,
	MissingCapability, UnsupportedVersion, ImplementationError,
	ApplicationDefinedError,
	ToolInputValidation, ToolOutputValidation, UnknownTool, ToolFailed,
	Timeout, ConnectionReset, ConnectionRefused, TLSError, DNSError,
	NetworkError, ClientAbort, ServerAbort, StreamEndedEarly,
	NoResponseWindow, PendingEvicted,
	IDMismatch, MissingID, ResultAndError, NoResultOrError, BadVersion,
	BadErrorObject, NotAResponse, BatchMismatch, ResultNotObject,
	ContentNotArray, IsErrorNotBoolean, UnknownResultType, BadInputRequest,
	AcceptedRequest, EmptyBody, BodyForNotice, BodyTruncated,
	RequestCancelled,
}
