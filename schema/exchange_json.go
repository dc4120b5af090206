package schema

import "github.com/mcplens/mcplens/classify"

// AppendJSON appends the record as one JSON object, byte for byte what
// encoding/json writes for it with SetEscapeHTML(false) (no newline), but
// without reflection. Times outside years 0-9999, which encoding/json
// refuses, are written all the same.
func (x *Exchange) AppendJSON(b []byte) []byte {
	str := func(key, v string) {
		b = append(b, ',')
		b = appendKey(b, key)
		b = appendString(b, v)
	}
	num := func(key string, v int) {
		b = append(b, ',')
		b = appendKey(b, key)
		b = appendInt(b, int64(v))
	}
	flag := func(key string, v bool) {
		b = append(b, ',')
		b = appendKey(b, key)
		b = appendBool(b, v)
	}
	nullInt := func(key string, v classify.NullInt) {
		b = append(b, ',')
		b = appendKey(b, key)
		if !v.Valid {
			b = append(b, "null"...)
			return
		}
		b = appendInt(b, v.V)
	}
	b = append(b, '{')
	b = appendKey(b, "exchange_id")
	b = appendString(b, x.ExchangeID)
	str("request_event_id", x.RequestEventID)
	str("response_event_id", x.ResponseEventID)
	b = append(b, ',')
	b = appendKey(b, "ts")
	b = appendTime(b, x.TS)
	b = append(b, ',')
	b = appendKey(b, "end_ts")
	b = appendTime(b, x.EndTS)
	b = append(b, ',')
	b = appendKey(b, "duration_ms")
	b = appendFloat(b, x.DurationMS)
	str("source", x.Source)
	b = append(b, ',')
	b = appendKey(b, "sources")
	b = appendStrings(b, x.Sources)
	flag("one_sided", x.OneSided)
	str("observer", x.Observer)
	str("server", x.Server)
	str("url", x.URL)
	str("client_name", x.ClientName)
	str("client_version", x.ClientVersion)
	str("session_id", x.SessionID)
	str("http_method", x.HTTPMethod)
	num("http_status", x.HTTPStatus)
	num("request_bytes", x.RequestBytes)
	num("response_bytes", x.ResponseBytes)
	flag("body_truncated", x.BodyTruncated)
	str("transport_error", x.TransportError)
	str("stream_close_reason", x.CloseReason)
	str("idempotency_key", x.IdempotencyKey)

	r := &x.Result
	str("layer", string(r.Layer))
	str("outcome", string(r.Outcome))
	str("error_class", string(r.ErrorClass))
	nullInt("jsonrpc_code", r.JSONRPCCode)
	str("error_message", r.ErrorMessage)
	nullInt("retry_after_s", r.RetryAfterS)
	str("retry_advice", string(r.RetryAdvice))
	flag("outcome_known", r.OutcomeKnown)
	str("side_effect_risk", string(r.SideEffectRisk))
	str("rule", r.Rule)
	str("evidence", string(r.Evidence))
	str("jsonrpc_id", r.JSONRPCID)
	str("method", r.Method)
	str("tool_name", r.ToolName)
	str("params_hash", r.ParamsHash)
	str("protocol_version", r.ProtocolVersion)
	str("content_type", r.ContentType)
	str("transport", string(r.Transport))
	num("sse_events", r.SSEEvents)
	num("batch", r.Batch)
	flag("notification", r.Notification)
	flag("continuation", r.Continuation)

	num("attempt", x.Attempt)
	str("retry_of", x.RetryOf)
	str("retry_origin", x.RetryOrigin)
	str("chain_id", x.ChainID)
	flag("unknown_side_effect_retry", x.UnknownSideEffectRetry)
	str("continues", x.Continues)
	str("client_outcome", x.ClientOutcome)
	flag("client_disagrees", x.ClientDisagrees)
	if x.NoResponseReason != "" {
		str("no_response_reason", x.NoResponseReason)
	}
	if len(x.MergedEventIDs) > 0 {
		b = append(b, ',')
		b = appendKey(b, "merged_event_ids")
		b = appendStrings(b, x.MergedEventIDs)
	}
	if len(x.MergedObservers) > 0 {
		b = append(b, ',')
		b = appendKey(b, "merged_observers")
		b = appendStrings(b, x.MergedObservers)
	}
	if len(x.MergedOffsetsMS) > 0 {
		b = append(b, ',')
		b = appendKey(b, "merged_offsets_ms")
		b = append(b, '[')
		for i, v := range x.MergedOffsetsMS {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendFloat(b, v)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}
