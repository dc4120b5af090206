-- Servers, clients or tools (group_by: 'server', 'client', 'tool') ranked
-- by volume, error rate or p99 duration (order_by: 'volume', 'errors',
-- 'p99'): volume, overall and per-layer error rates, and p50/p95/p99 of
-- duration_ms over exchanges that got an answer (not NO_RESPONSE). Error
-- rates are shares of all exchanges; ACCEPTED is not an error, nor are
-- INPUT_REQUIRED and CANCELLED (the client's decision). Tools count tools/call exchanges only.
SELECT group_key, total, errors, error_rate,
       transport_error_rate, protocol_error_rate, application_error_rate, stream_error_rate,
       p50_ms, p95_ms, p99_ms
FROM (
    SELECT CASE {group_by:String}
               WHEN 'client' THEN client_name
               WHEN 'tool' THEN tool_name
               ELSE server
           END AS group_key,
           count() AS total,
           countIf(outcome NOT IN ('SUCCESS', 'TOOL_SUCCESS', 'ACCEPTED', 'INPUT_REQUIRED', 'CANCELLED')) AS errors,
           countIf(outcome NOT IN ('SUCCESS', 'TOOL_SUCCESS', 'ACCEPTED', 'INPUT_REQUIRED', 'CANCELLED')) / count() AS error_rate,
           countIf(layer = 'transport' AND outcome != 'ACCEPTED') / count() AS transport_error_rate,
           countIf(layer = 'protocol') / count() AS protocol_error_rate,
           countIf(outcome = 'TOOL_ERROR') / count() AS application_error_rate,
           countIf(layer = 'stream') / count() AS stream_error_rate,
           if(countIf(outcome != 'NO_RESPONSE') = 0, NULL, quantileExactInclusiveIf(0.5)(duration_ms, outcome != 'NO_RESPONSE')) AS p50_ms,
           if(countIf(outcome != 'NO_RESPONSE') = 0, NULL, quantileExactInclusiveIf(0.95)(duration_ms, outcome != 'NO_RESPONSE')) AS p95_ms,
           if(countIf(outcome != 'NO_RESPONSE') = 0, NULL, quantileExactInclusiveIf(0.99)(duration_ms, outcome != 'NO_RESPONSE')) AS p99_ms
    FROM (
        SELECT exchange_id, server, client_name, tool_name, layer, outcome, duration_ms
        FROM exchanges
        WHERE toStartOfHour(ts) >= toStartOfHour({from:DateTime64(3, 'UTC')}) AND toStartOfHour(ts) < {to:DateTime64(3, 'UTC')}
          AND ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
          AND ({server:String} = '' OR server = {server:String})
          AND ({client:String} = '' OR client_name = {client:String})
          AND ({group_by:String} != 'tool' OR method = 'tools/call')
        LIMIT 1 BY exchange_id
    )
    GROUP BY group_key
)
ORDER BY CASE {order_by:String}
             WHEN 'errors' THEN error_rate
             WHEN 'p99' THEN coalesce(p99_ms, 0)
             ELSE toFloat64(total)
         END DESC, group_key
LIMIT {limit:UInt32}
