SELECT exchange_id, ts, attempt, retry_of, continues, retry_origin, method, tool_name,
       http_status, layer, outcome, error_class, jsonrpc_code, retry_after_s, retry_advice,
       side_effect_risk, unknown_side_effect_retry, duration_ms
FROM exchanges
WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($from AS TIMESTAMP)) AND date_trunc('hour', ts) < CAST($to AS TIMESTAMP)
  AND ts >= CAST($from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
  AND chain_id = CAST($chain_id AS VARCHAR)
ORDER BY ts, exchange_id
LIMIT CAST($limit AS BIGINT)
