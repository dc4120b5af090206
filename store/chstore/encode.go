package chstore

import (
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/column"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// The encoders turn rows into columns: one slice per column, in the
// order of the schema's column list, of the Go type clickhouse-go appends
// to the DDL's ClickHouse type (String, LowCardinality and Enum8 take
// []string, UInt16 []uint16, Nullable(Int64) []*int64, Map []*headerMap, ...).
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
		sources, merged, mergedObs                  = make([][]string, n), make([][]string, n), make([][]string, n)
		mergedOffsets                               = make([][]float64, n)
		oneSided                                    = make([]bool, n)
		url, sessionID                              = make([]string, n), make([]string, n)
		httpStatus                                  = make([]uint16, n)
		requestBytes, responseBytes                 = make([]uint32, n), make([]uint32, n)
		bodyTruncated                               = make([]bool, n)
		idempotencyKey                              = make([]string, n)
		jsonrpcCode                                 = make([]*int64, n)
		errorMessage                                = make([]string, n)
		retryAfterS                                 = make([]*int64, n)
		retryAdvice                                 = make([]string, n)
		outcomeKnown                                = make([]bool, n)
		sideEffectRisk, jsonrpcID                   = make([]string, n), make([]string, n)
		paramsHash                                  = make([]string, n)
		transport                                   = make([]string, n)
		sseEvents, batch                            = make([]uint32, n), make([]uint32, n)
		notification, continuation                  = make([]bool, n), make([]bool, n)
		attempt                                     = make([]uint32, n)
		retryOf, chainID                            = make([]string, n), make([]string, n)
		unknownRetry                                = make([]bool, n)
		continues                                   = make([]string, n)
		clientDisagrees                             = make([]bool, n)
		ints                                        = make([]int64, 2*n) // backing store of the nullable columns
		// The LowCardinality(String) columns, boxed once per distinct value.
		lowCard                                                 = make([]any, lowCardColumns*n)
		bx                                                      = boxes{}
		observer, server, clientName, clientVersion, httpMethod = lowCard[0*n : 1*n], lowCard[1*n : 2*n], lowCard[2*n : 3*n], lowCard[3*n : 4*n], lowCard[4*n : 5*n]
		transportError, closeReason, layer, outcome, errorClass = lowCard[5*n : 6*n], lowCard[6*n : 7*n], lowCard[7*n : 8*n], lowCard[8*n : 9*n], lowCard[9*n : 10*n]
		rule, method, toolName, protocolVersion, contentType    = lowCard[10*n : 11*n], lowCard[11*n : 12*n], lowCard[12*n : 13*n], lowCard[13*n : 14*n], lowCard[14*n : 15*n]
		retryOrigin, clientOutcome, noResponseReason, evidence  = lowCard[15*n : 16*n], lowCard[16*n : 17*n], lowCard[17*n : 18*n], lowCard[18*n : 19*n]
	)
	unknown := 0
	for i := range rows {
		e := &rows[i]
		exchangeID[i], requestEventID[i], responseEventID[i] = e.ExchangeID, e.RequestEventID, e.ResponseEventID
		ts[i], endTS[i], durationMS[i] = stamp(e.TS), stamp(e.EndTS), e.DurationMS
		source[i] = enum(sourceEnum, e.Source, &unknown)
		sources[i], merged[i], mergedObs[i], mergedOffsets[i] = list(e.Sources), list(e.MergedEventIDs), list(e.MergedObservers), list(e.MergedOffsetsMS)
		oneSided[i], observer[i], server[i], url[i] = e.OneSided, bx.of(e.Observer), bx.of(e.Server), e.URL
		clientName[i], clientVersion[i], sessionID[i] = bx.of(e.ClientName), bx.of(e.ClientVersion), e.SessionID
		httpMethod[i], httpStatus[i] = bx.of(e.HTTPMethod), uint16(e.HTTPStatus)
		requestBytes[i], responseBytes[i] = uint32(e.RequestBytes), uint32(e.ResponseBytes)
		bodyTruncated[i], transportError[i], closeReason[i], idempotencyKey[i] = e.BodyTruncated, bx.of(e.TransportError), bx.of(e.CloseReason), e.IdempotencyKey
		layer[i], outcome[i], errorClass[i] = bx.of(string(e.Layer)), bx.of(string(e.Outcome)), bx.of(string(e.ErrorClass))
		jsonrpcCode[i] = nullable(e.JSONRPCCode, &ints[2*i])
		errorMessage[i] = e.ErrorMessage
		retryAfterS[i] = nullable(e.RetryAfterS, &ints[2*i+1])
		retryAdvice[i] = enum(adviceEnum, string(e.RetryAdvice), &unknown)
		outcomeKnown[i] = e.OutcomeKnown
		sideEffectRisk[i] = enum(riskEnum, string(e.SideEffectRisk), &unknown)
		rule[i], jsonrpcID[i], method[i], toolName[i], paramsHash[i] = bx.of(e.Rule), e.JSONRPCID, bx.of(e.Method), bx.of(e.ToolName), e.ParamsHash
		protocolVersion[i], contentType[i] = bx.of(e.ProtocolVersion), bx.of(e.ContentType)
		transport[i] = enum(transportEnum, string(e.Transport), &unknown)
		sseEvents[i], batch[i] = uint32(e.SSEEvents), uint32(e.Batch)
		notification[i], continuation[i], attempt[i] = e.Notification, e.Continuation, uint32(e.Attempt)
		retryOf[i], retryOrigin[i], chainID[i] = e.RetryOf, bx.of(e.RetryOrigin), e.ChainID
		unknownRetry[i], continues[i], clientOutcome[i] = e.UnknownSideEffectRetry, e.Continues, bx.of(e.ClientOutcome)
		clientDisagrees[i], noResponseReason[i], evidence[i] = e.ClientDisagrees, bx.of(e.NoResponseReason), bx.of(string(e.Evidence))
	}
	return []any{
		exchangeID, requestEventID, responseEventID, ts, endTS, durationMS, source, sources, oneSided,
		observer, server, url, clientName, clientVersion, sessionID, httpMethod, httpStatus,
		requestBytes, responseBytes, bodyTruncated, transportError, closeReason, idempotencyKey,
		layer, outcome, errorClass, jsonrpcCode, errorMessage, retryAfterS, retryAdvice, outcomeKnown,
		sideEffectRisk, rule, jsonrpcID, method, toolName, paramsHash, protocolVersion, contentType,
		transport, sseEvents, batch, notification, continuation, attempt, retryOf, retryOrigin, chainID,
		unknownRetry, continues, clientOutcome, clientDisagrees, noResponseReason, evidence, merged,
		mergedObs, mergedOffsets,
	}, unknown
}

// lowCardColumns is how many LowCardinality(String) columns
// exchangeColumns encodes from boxes.
const lowCardColumns = 19

// boxes holds each distinct string of a batch as one interface value.
// The driver's LowCardinality columns take any slice and append it row by
// row as an interface (keyed in a map[any]int): a []string boxed every
// row, one allocation per row and column (19 of the 21 allocations a row
// took); a []any of these values costs none. It lives for one batch, so
// the strings it keys are the rows' own.
type boxes map[string]any

func (b boxes) of(v string) any {
	if x, ok := b[v]; ok {
		return x
	}
	x := any(v)
	b[v] = x
	return x
}

// list is v, or an empty list for nil: an Array column has no NULL.
func list[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// headerMap is one row of a Map(LowCardinality(String), String) column.
// The driver appends a map[string]string by reflection, which copies
// every key and value into an allocation of its own to box it (4% of an
// ingester's CPU into ClickHouse went there); a headerMap is appended
// through the driver's column.IterableOrderedMap instead, without those:
// a value goes as a pointer into the row's headers, which the String
// column copies at once, and a key as the box the column's boxes keep
// for it, since the LowCardinality column keeps what it is given as its
// dictionary's key. Its names go in sorted order, as decoded.
type headerMap struct {
	h    classify.Header
	keys boxes // shared by the column's rows
	i    int
}

// headerMaps returns a column's rows, one per row's headers (nil: empty).
func headerMaps(n int, of func(i int) classify.Header) []*headerMap {
	keys := boxes{}
	rows, out := make([]headerMap, n), make([]*headerMap, n)
	for i := range rows {
		rows[i] = headerMap{h: of(i).Sorted(), keys: keys}
		out[i] = &rows[i]
	}
	return out
}

// Iterator starts over h's headers.
func (h *headerMap) Iterator() column.MapIterator {
	h.i = -1
	return h
}

func (h *headerMap) Next() bool {
	h.i++
	return h.i < len(h.h)
}

func (h *headerMap) Key() any   { return h.keys.of(h.h[h.i].Name) }
func (h *headerMap) Value() any { return &h.h[h.i].Value }

// Put sets a pair, as a scan into a headerMap would.
func (h *headerMap) Put(key, value any) { h.h.Set(text(key), text(value)) }

func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case *string:
		if v != nil {
			return *v
		}
		return ""
	}
	return fmt.Sprint(v)
}

// bodyColumns encodes bodies in schema.BodyColumns order.
func bodyColumns(rows []schema.Body) []any {
	n := len(rows)
	id, ts := make([]string, n), make([]time.Time, n)
	reqH := headerMaps(n, func(i int) classify.Header { return rows[i].RequestHeaders })
	respH := headerMaps(n, func(i int) classify.Header { return rows[i].ResponseHeaders })
	reqB, respB, trunc := make([]string, n), make([]string, n), make([]bool, n)
	for i := range rows {
		b := &rows[i]
		id[i], ts[i] = b.ExchangeID, stamp(b.TS)
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
