SELECT group_key, total, errors, error_rate,
       transport_error_rate, protocol_error_rate, application_error_rate, stream_error_rate,
       p50_ms, p95_ms, p99_ms
FROM (
    SELECT CASE CAST($group_by AS VARCHAR)
               WHEN 'client' THEN client_name
               WHEN 'tool' THEN tool_name
               ELSE server
           END AS group_key,
           count(*) AS total,
           count(*) FILTER (WHERE outcome NOT IN ('SUCCESS', 'TOOL_SUCCESS', 'ACCEPTED', 'INPUT_REQUIRED', 'CANCELLED')) AS errors,
           count(*) FILTER (WHERE outcome NOT IN ('SUCCESS', 'TOOL_SUCCESS', 'ACCEPTED', 'INPUT_REQUIRED', 'CANCELLED')) / count(*) AS error_rate,
           count(*) FILTER (WHERE layer = 'transport' AND outcome != 'ACCEPTED') / count(*) AS transport_error_rate,
           count(*) FILTER (WHERE layer = 'protocol') / count(*) AS protocol_error_rate,
           count(*) FILTER (WHERE outcome = 'TOOL_ERROR') / count(*) AS application_error_rate,
           count(*) FILTER (WHERE layer = 'stream') / count(*) AS stream_error_rate,
           if(count(*) FILTER (WHERE outcome != 'NO_RESPONSE') = 0, NULL, quantile_cont(duration_ms, 0.5) FILTER (WHERE outcome != 'NO_RESPONSE')) AS p50_ms,
           if(count(*) FILTER (WHERE outcome != 'NO_RESPONSE') = 0, NULL, quantile_cont(duration_ms, 0.95) FILTER (WHERE outcome != 'NO_RESPONSE')) AS p95_ms,
           if(count(*) FILTER (WHERE outcome != 'NO_RESPONSE') = 0, NULL, quantile_cont(duration_ms, 0.99) FILTER (WHERE outcome != 'NO_RESPONSE')) AS p99_ms
    FROM (
        SELECT exchange_id, server, client_name, tool_name, layer, outcome, duration_ms
        FROM exchanges
        WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($from AS TIMESTAMP)) AND date_trunc('hour', ts) < CAST($to AS TIMESTAMP)
          AND ts >= CAST($from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
          AND (CAST($server AS VARCHAR) = '' OR server = CAST($server AS VARCHAR))
          AND (CAST($client AS VARCHAR) = '' OR client_name = CAST($client AS VARCHAR))
          AND (CAST($group_by AS VARCHAR) != 'tool' OR method = 'tools/call')
    )
    GROUP BY group_key
)
ORDER BY CASE CAST($order_by AS VARCHAR)
             WHEN 'errors' THEN error_rate
             WHEN 'p99' THEN coalesce(p99_ms, 0)
             ELSE CAST(total AS DOUBLE)
         END DESC, group_key
LIMIT CAST($limit AS BIGINT)
