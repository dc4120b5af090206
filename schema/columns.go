package schema

// Column lists of the stored tables, in DDL order. Both stores write in
// this order; the tests check each list against the DDL of both engines
// and the exchange list against the JSON keys of Exchange.
var (
	ExchangeColumns = []string{
		"exchange_id", "request_event_id", "response_event_id", "ts", "end_ts", "duration_ms",
		"source", "sources", "one_sided", "observer", "server", "url", "client_name", "client_version",
		"session_id", "http_method", "http_status", "request_bytes", "response_bytes", "body_truncated",
		"transport_error", "stream_close_reason", "idempotency_key", "layer", "outcome", "error_class",
		"jsonrpc_code", "error_message", "retry_after_s", "retry_advice", "outcome_known",
		"side_effect_risk", "rule", "jsonrpc_id", "method", "tool_name", "params_hash",
		"protocol_version", "content_type", "transport", "sse_events", "batch", "notification",
		"continuation", "attempt", "retry_of", "retry_origin", "chain_id", "unknown_side_effect_retry",
		"continues", "client_outcome", "client_disagrees", "no_response_reason",
		// Added by a later migration (0040), so last in the table.
		"evidence",
		// Added by migration 0054.
		"merged_event_ids", "merged_observers", "merged_offsets_ms",
	}
	BodyColumns = []string{
		"exchange_id", "ts", "request_headers", "response_headers", "request_body", "response_body", "truncated",
	}
	AnnotationColumns = []string{
		"server", "tool", "read_only", "destructive", "idempotent", "open_world", "seen_at",
	}
	QuarantineColumns = []string{"ts", "position", "reason", "raw"}
)
