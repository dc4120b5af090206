-- Every exchange of one chain (retries linked by retry_of, MRTR rounds by
-- continues), in order. The caller bounds the time range around the
-- exchange it starts from.
SELECT exchange_id, ts, attempt, retry_of, continues, retry_origin, method, tool_name,
       http_status, layer, outcome, error_class, jsonrpc_code, retry_after_s, retry_advice,
       side_effect_risk, unknown_side_effect_retry, duration_ms
FROM exchanges
WHERE toStartOfHour(ts) >= toStartOfHour({from:DateTime64(3, 'UTC')}) AND toStartOfHour(ts) < {to:DateTime64(3, 'UTC')}
  AND ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
  AND chain_id = {chain_id:String}
ORDER BY ts, exchange_id
LIMIT 1 BY exchange_id
LIMIT {limit:UInt32}
