-- One session's exchanges in order, for a postmortem; a page starts after
-- the (ts, exchange_id) of the previous page's last row.
SELECT exchange_id, ts, end_ts, duration_ms, server, client_name, http_method, method, tool_name,
       jsonrpc_id, http_status, layer, outcome, error_class, jsonrpc_code, error_message,
       retry_advice, attempt, retry_of, continues, chain_id, evidence
FROM exchanges
WHERE toStartOfHour(ts) >= toStartOfHour({after_ts:DateTime64(3, 'UTC')}) AND toStartOfHour(ts) < {to:DateTime64(3, 'UTC')}
  AND ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
  AND (ts > {after_ts:DateTime64(3, 'UTC')} OR (ts = {after_ts:DateTime64(3, 'UTC')} AND exchange_id > {after_id:String}))
  AND session_id = {session_id:String}
ORDER BY ts, exchange_id
LIMIT 1 BY exchange_id
LIMIT {limit:UInt32}
