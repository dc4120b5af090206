SELECT exchange_id, ts, duration_ms, server, client_name, session_id, method, tool_name,
       http_status, layer, outcome, error_class, jsonrpc_code, error_message, retry_advice,
       attempt, chain_id, evidence
FROM exchanges
WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($after_ts AS TIMESTAMP)) AND date_trunc('hour', ts) < CAST($to AS TIMESTAMP)
  AND ts >= CAST($from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
  AND (ts > CAST($after_ts AS TIMESTAMP) OR (ts = CAST($after_ts AS TIMESTAMP) AND exchange_id > CAST($after_id AS VARCHAR)))
  AND (CAST($server AS VARCHAR) = '' OR server = CAST($server AS VARCHAR))
  AND (CAST($evidence AS VARCHAR) = '' OR evidence = CAST($evidence AS VARCHAR))
  AND (CAST($client AS VARCHAR) = '' OR client_name = CAST($client AS VARCHAR))
  AND (CAST($tool AS VARCHAR) = '' OR tool_name = CAST($tool AS VARCHAR))
  AND (CAST($method AS VARCHAR) = '' OR method = CAST($method AS VARCHAR))
  AND (CAST($outcome AS VARCHAR) = '' OR outcome = CAST($outcome AS VARCHAR))
  AND (CAST($layer AS VARCHAR) = '' OR layer = CAST($layer AS VARCHAR))
  AND (CAST($error_class AS VARCHAR) = '' OR error_class = CAST($error_class AS VARCHAR))
  AND (CAST($q_like AS VARCHAR) = '' OR lower(error_message) LIKE CAST($q_like AS VARCHAR) ESCAPE '!')
ORDER BY ts, exchange_id
LIMIT CAST($limit AS BIGINT)
