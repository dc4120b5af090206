package chstore

import (
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// The encoders turn rows into columns: one slice per column, in the
// order of the schema's column list, of the Go type clickhouse-go appends
// to the DDL's ClickHouse type (String, LowCardinality and Enum8 take
// []string, UInt16 []uint16, Nullable(Int64) []*int64, Map []map, ...).
// Columnar appends skip the driver's per-row reflection.

// stamp is a stored time: UTC, milliseconds (DateTime64(3)), and the zero
// time as the Unix epoch (the earliest DateTime64 a default holds).
func stamp(t time.Time) time.Time {
	if t.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return t.UTC().Truncate(time.Millisecond)
}

func nullable(n classify.NullInt, store *int64) *int64 {
	if !n.Valid {
		return nil
	}
	*store = n.V
	return store
}

// Values of the Enum8 columns: a value outside them would fail the whole
// insert, so an unknown one (a newer classifier than the schema) is
// stored as ” and counted by the caller.
var (
	sourceEnum    = enumSet("", "gateway", "client", "server")
	adviceEnum    = enumSet("", "NONE", "RETRY_AFTER", "RETRY_IF_SAFE", "FIX_REQUEST", "REAUTHENTICATE", "REINITIALIZE", "DO_NOT_RETRY_BLINDLY", "CONTINUE_INPUT")
	riskEnum      = enumSet("", "none", "possible", "unknown")
	transportEnum = enumSet("", "json", "sse", "empty", "none")
)

func enumSet(vals ...string) map[string]bool {
	m := make(map[string]bool, len(vals))
	for _, v := range vals {
		m[v] = true
	}
	return m
}

func enum(set map[string]bool, v string, unknown *int) string {
	if set[v] {
		return v
	}
	*unknown++
	return ""
}

// exchangeColumns encodes exchanges in schema.ExchangeColumns order. It
// returns how many enum values were unknown.
func exchangeColumns(rows []schema.Exchange) ([]any, int) {
	n := len(rows)
	var (
		exchangeID, requestEventID, responseEventID = make([]string, n), make([]string, n), make([]string, n)
		ts, endTS                                   = make([]time.Time, n), make([]time.Time, n)
		durationMS                                  = make([]float64, n)
		source                                      = make([]string, n)
		sources                                     = make([][]string, n)
		oneSided                                    = make([]bool, n)
		observer, server, url                       = make([]string, n), make([]string, n), make([]string, n)
		clientName, clientVersion, sessionID        = make([]string, n), make([]string, n), make([]string, n)
		httpMethod                                  = make([]string, n)
		httpStatus                                  = make([]uint16, n)
		requestBytes, responseBytes                 = make([]uint32, n), make([]uint32, n)
		bodyTruncated                               = make([]bool, n)
		transportError, closeReason, idempotencyKey = make([]string, n), make([]string, n), make([]string, n)
		layer, outcome, errorClass                  = make([]string, n), make([]string, n), make([]string, n)
		jsonrpcCode                                 = make([]*int64, n)
		errorMessage                                = make([]string, n)
		retryAfterS                                 = make([]*int64, n)
		retryAdvice                                 = make([]string, n)
		outcomeKnown                                = make([]bool, n)
		sideEffectRisk, rule, jsonrpcID             = make([]string, n), make([]string, n), make([]string, n)
		method, toolName, paramsHash                = make([]string, n), make([]string, n), make([]string, n)
		protocolVersion, contentType, transport     = make([]string, n), make([]string, n), make([]string, n)
		sseEvents, batch                            = make([]uint32, n), make([]uint32, n)
		notification, continuation                  = make([]bool, n), make([]bool, n)
		attempt                                     = make([]uint32, n)
		retryOf, retryOrigin, chainID               = make([]string, n), make([]string, n), make([]string, n)
		unknownRetry                                = make([]bool, n)
		continues, clientOutcome                    = make([]string, n), make([]string, n)
		clientDisagrees                             = make([]bool, n)
		noResponseReason, evidence                  = make([]string, n), make([]string, n)
		ints                                        = make([]int64, 2*n) // backing store of the nullable columns
	)
	unknown := 0
	for i := range rows {
		e := &rows[i]
		exchangeID[i], requestEventID[i], responseEventID[i] = e.ExchangeID, e.RequestEventID, e.ResponseEventID
		ts[i], endTS[i], durationMS[i] = stamp(e.TS), stamp(e.EndTS), e.DurationMS
		source[i] = enum(sourceEnum, e.Source, &unknown)
		sources[i] = e.Sources
		if sources[i] == nil {
			sources[i] = []string{}
		}
		oneSided[i], observer[i], server[i], url[i] = e.OneSided, e.Observer, e.Server, e.URL
		clientName[i], clientVersion[i], sessionID[i] = e.ClientName, e.ClientVersion, e.SessionID
		httpMethod[i], httpStatus[i] = e.HTTPMethod, uint16(e.HTTPStatus)
		requestBytes[i], responseBytes[i] = uint32(e.RequestBytes), uint32(e.ResponseBytes)
		bodyTruncated[i], transportError[i], closeReason[i], idempotencyKey[i] = e.BodyTruncated, e.TransportError, e.CloseReason, e.IdempotencyKey
		layer[i], outcome[i], errorClass[i] = string(e.Layer), string(e.Outcome), string(e.ErrorClass)
		jsonrpcCode[i] = nullable(e.JSONRPCCode, &ints[2*i])
		errorMessage[i] = e.ErrorMessage
		retryAfterS[i] = nullable(e.RetryAfterS, &ints[2*i+1])
		retryAdvice[i] = enum(adviceEnum, string(e.RetryAdvice), &unknown)
		outcomeKnown[i] = e.OutcomeKnown
		sideEffectRisk[i] = enum(riskEnum, string(e.SideEffectRisk), &unknown)
		rule[i], jsonrpcID[i], method[i], toolName[i], paramsHash[i] = e.Rule, e.JSONRPCID, e.Method, e.ToolName, e.ParamsHash
		protocolVersion[i], contentType[i] = e.ProtocolVersion, e.ContentType
		transport[i] = enum(transportEnum, string(e.Transport), &unknown)
		sseEvents[i], batch[i] = uint32(e.SSEEvents), uint32(e.Batch)
		notification[i], continuation[i], attempt[i] = e.Notification, e.Continuation, uint32(e.Attempt)
		retryOf[i], retryOrigin[i], chainID[i] = e.RetryOf, e.RetryOrigin, e.ChainID
		unknownRetry[i], continues[i], clientOutcome[i] = e.UnknownSideEffectRetry, e.Continues, e.ClientOutcome
		clientDisagrees[i], noResponseReason[i], evidence[i] = e.ClientDisagrees, e.NoResponseReason, string(e.Evidence)
	}
	return []any{
		exchangeID, requestEventID, responseEventID, ts, endTS, durationMS, source, sources, oneSided,
		observer, server, url, clientName, clientVersion, sessionID, httpMethod, httpStatus,
		requestBytes, responseBytes, bodyTruncated, transportError, closeReason, idempotencyKey,
		layer, outcome, errorClass, jsonrpcCode, errorMessage, retryAfterS, retryAdvice, outcomeKnown,
		sideEffectRisk, rule, jsonrpcID, method, toolName, paramsHash, protocolVersion, contentType,
		transport, sseEvents, batch, notification, continuation, attempt, retryOf, retryOrigin, chainID,
		unknownRetry, continues, clientOutcome, clientDisagrees, noResponseReason, evidence,
	}, unknown
}

func headers(h map[string]string) map[string]string {
	if h == nil {
		return map[string]string{}
	}
	return h
}

// bodyColumns encodes bodies in schema.BodyColumns order.
func bodyColumns(rows []schema.Body) []any {
	n := len(rows)
	id, ts := make([]string, n), make([]time.Time, n)
	reqH, respH := make([]map[string]string, n), make([]map[string]string, n)
	reqB, respB, trunc := make([]string, n), make([]string, n), make([]bool, n)
	for i := range rows {
		b := &rows[i]
		id[i], ts[i], reqH[i], respH[i] = b.ExchangeID, stamp(b.TS), headers(b.RequestHeaders), headers(b.ResponseHeaders)
		reqB[i], respB[i], trunc[i] = b.RequestBody, b.ResponseBody, b.Truncated
	}
	return []any{id, ts, reqH, respH, reqB, respB, trunc}
}

// annotationColumns encodes tool annotations in schema.AnnotationColumns
// order.
func annotationColumns(rows []schema.ToolAnnotation) []any {
	n := len(rows)
	server, tool := make([]string, n), make([]string, n)
	ro, de, id, ow := make([]bool, n), make([]bool, n), make([]bool, n), make([]bool, n)
	seen := make([]time.Time, n)
	for i, a := range rows {
		server[i], tool[i], ro[i], de[i], id[i], ow[i], seen[i] = a.Server, a.Tool, a.ReadOnly, a.Destructive, a.Idempotent, a.OpenWorld, stamp(a.SeenAt)
	}
	return []any{server, tool, ro, de, id, ow, seen}
}

// quarantineColumns encodes quarantined lines in schema.QuarantineColumns
// order.
func quarantineColumns(rows []schema.Quarantined) []any {
	n := len(rows)
	ts, pos, reason, raw := make([]time.Time, n), make([]string, n), make([]string, n), make([]string, n)
	for i, q := range rows {
		ts[i], pos[i], reason[i], raw[i] = stamp(q.TS), q.Position, q.Reason, string(q.Raw)
	}
	return []any{ts, pos, reason, raw}
}
