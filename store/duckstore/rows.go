package duckstore

import (
	"database/sql/driver"
	"time"
	"unsafe"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// stamp is a stored time: UTC, millisecond precision (as ClickHouse's
// DateTime64(3) stores it, so both engines hold the same instants); the
// zero time becomes the Unix epoch, the earliest time ClickHouse holds.
func stamp(t time.Time) time.Time {
	if t.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return t.UTC().Truncate(time.Millisecond)
}

func nullInt(n classify.NullInt) driver.Value {
	if !n.Valid {
		return nil
	}
	return n.V
}

// list is v, or an empty list for nil: the list columns are NOT NULL.
func list[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// exchangeRow fills row in schema.ExchangeColumns order.
func exchangeRow(e *schema.Exchange, row []driver.Value) {
	row[0], row[1], row[2] = e.ExchangeID, e.RequestEventID, e.ResponseEventID
	row[3], row[4], row[5] = stamp(e.TS), stamp(e.EndTS), e.DurationMS
	row[6], row[7], row[8] = e.Source, list(e.Sources), e.OneSided
	row[9], row[10], row[11] = e.Observer, e.Server, e.URL
	row[12], row[13], row[14] = e.ClientName, e.ClientVersion, e.SessionID
	row[15], row[16], row[17] = e.HTTPMethod, int32(e.HTTPStatus), int64(e.RequestBytes)
	row[18], row[19], row[20] = int64(e.ResponseBytes), e.BodyTruncated, e.TransportError
	row[21], row[22], row[23] = e.CloseReason, e.IdempotencyKey, string(e.Layer)
	row[24], row[25], row[26] = string(e.Outcome), string(e.ErrorClass), nullInt(e.JSONRPCCode)
	row[27], row[28], row[29] = e.ErrorMessage, nullInt(e.RetryAfterS), string(e.RetryAdvice)
	row[30], row[31], row[32] = e.OutcomeKnown, string(e.SideEffectRisk), e.Rule
	row[33], row[34], row[35] = e.JSONRPCID, e.Method, e.ToolName
	row[36], row[37], row[38] = e.ParamsHash, e.ProtocolVersion, e.ContentType
	row[39], row[40], row[41] = string(e.Transport), int32(e.SSEEvents), int32(e.Batch)
	row[42], row[43], row[44] = e.Notification, e.Continuation, int32(e.Attempt)
	row[45], row[46], row[47] = e.RetryOf, e.RetryOrigin, e.ChainID
	row[48], row[49], row[50] = e.UnknownSideEffectRetry, e.Continues, e.ClientOutcome
	row[51], row[52], row[53] = e.ClientDisagrees, e.NoResponseReason, string(e.Evidence)
	row[54], row[55], row[56] = list(e.MergedEventIDs), list(e.MergedObservers), list(e.MergedOffsetsMS)
}

// headerJSON encodes headers as the text of a JSON object (keys sorted),
// the form the header columns hold (migration 0053: text, since the
// Appender encodes a value for a JSON column with encoding/json).
func headerJSON(h classify.Header) string {
	if len(h) == 0 {
		return "{}"
	}
	b := schema.AppendHeader(make([]byte, 0, 64*len(h)), h)
	return unsafe.String(unsafe.SliceData(b), len(b)) //nolint:gosec // G103: b is not written again
}

func bodyRow(b *schema.Body, row []driver.Value) {
	row[0], row[1] = b.ExchangeID, stamp(b.TS)
	row[2], row[3] = headerJSON(b.RequestHeaders), headerJSON(b.ResponseHeaders)
	row[4], row[5], row[6] = bodyBytes(b.RequestBody), bodyBytes(b.ResponseBody), b.Truncated
}

func annotationRow(a *schema.ToolAnnotation, row []driver.Value) {
	row[0], row[1], row[2] = a.Server, a.Tool, a.ReadOnly
	row[3], row[4], row[5] = a.Destructive, a.Idempotent, a.OpenWorld
	row[6] = stamp(a.SeenAt)
}

func quarantineRow(q *schema.Quarantined, row []driver.Value) {
	raw := q.Raw
	if raw == nil {
		raw = []byte{}
	}
	row[0], row[1], row[2], row[3] = stamp(q.TS), q.Position, q.Reason, raw
}

// bodyBytes is a body as the BLOB it is stored as: the bytes as logged,
// valid UTF-8 or not. The Appender copies them.
func bodyBytes(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s), len(s)) //nolint:gosec // G103: read-only view, the Appender copies
}
