SELECT exchange_id, ts, end_ts, duration_ms, server, client_name, http_method, method, tool_name,
       jsonrpc_id, http_status, layer, outcome, error_class, jsonrpc_code, error_message,
       retry_advice, attempt, retry_of, continues, chain_id, evidence
FROM exchanges
WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($after_ts AS TIMESTAMP)) AND date_trunc('hour', ts) < CAST($to AS TIMESTAMP)
  AND ts >= CAST($from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
  AND (ts > CAST($after_ts AS TIMESTAMP) OR (ts = CAST($after_ts AS TIMESTAMP) AND exchange_id > CAST($after_id AS VARCHAR)))
  AND session_id = CAST($session_id AS VARCHAR)
ORDER BY ts, exchange_id
LIMIT CAST($limit AS BIGINT)
