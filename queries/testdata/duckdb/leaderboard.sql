WITH x AS (
    SELECT CASE CAST($group_by AS VARCHAR)
               WHEN 'client' THEN client_name
               WHEN 'tool' THEN tool_name
               ELSE server
           END AS group_key,
           layer, outcome, duration_ms
    FROM (
        SELECT exchange_id, server, client_name, tool_name, layer, outcome, duration_ms
        FROM exchanges
        WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($from AS TIMESTAMP)) AND date_trunc('hour', ts) < CAST($to AS TIMESTAMP)
          AND ts >= CAST($from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
          AND (CAST($server AS VARCHAR) = '' OR server = CAST($server AS VARCHAR))
          AND (CAST($evidence AS VARCHAR) = '' OR evidence = CAST($evidence AS VARCHAR))
          AND (CAST($client AS VARCHAR) = '' OR client_name = CAST($client AS VARCHAR))
          AND (CAST($group_by AS VARCHAR) != 'tool' OR method = 'tools/call')
    )
)
SELECT group_key, total, errors, error_rate,
       transport_error_rate, protocol_error_rate, application_error_rate, stream_error_rate,
       p50_ms, p95_ms, p99_ms
FROM (
    SELECT c.group_key AS group_key, c.total AS total, c.errors AS errors,
           c.errors / c.total AS error_rate,
           c.transport_errors / c.total AS transport_error_rate,
           c.protocol_errors / c.total AS protocol_error_rate,
           c.tool_errors / c.total AS application_error_rate,
           c.stream_errors / c.total AS stream_error_rate,
           if(c.answered = 0, NULL, q.qs[1]) AS p50_ms,
           if(c.answered = 0, NULL, q.qs[2]) AS p95_ms,
           if(c.answered = 0, NULL, q.qs[3]) AS p99_ms
    FROM (
        SELECT group_key, sum(n) AS total,
               coalesce(sum(n) FILTER (WHERE outcome NOT IN ('SUCCESS', 'TOOL_SUCCESS', 'ACCEPTED', 'INPUT_REQUIRED', 'CANCELLED', 'UNVERIFIED')), 0) AS errors,
               coalesce(sum(n) FILTER (WHERE layer = 'transport' AND outcome != 'ACCEPTED'), 0) AS transport_errors,
               coalesce(sum(n) FILTER (WHERE layer = 'protocol'), 0) AS protocol_errors,
               coalesce(sum(n) FILTER (WHERE outcome = 'TOOL_ERROR'), 0) AS tool_errors,
               coalesce(sum(n) FILTER (WHERE layer = 'stream'), 0) AS stream_errors,
               coalesce(sum(n) FILTER (WHERE outcome != 'NO_RESPONSE'), 0) AS answered
        FROM (
            SELECT group_key, layer, outcome, count(*) AS n
            FROM x
            GROUP BY group_key, layer, outcome
        )
        GROUP BY group_key
    ) AS c
    LEFT JOIN (
        SELECT group_key, quantile_cont(duration_ms, [0.5, 0.95, 0.99]) AS qs
        FROM x
        WHERE outcome != 'NO_RESPONSE'
        GROUP BY group_key
    ) AS q ON q.group_key = c.group_key
)
ORDER BY CASE CAST($order_by AS VARCHAR)
             WHEN 'errors' THEN error_rate
             WHEN 'p99' THEN coalesce(p99_ms, 0)
             ELSE CAST(total AS DOUBLE)
         END DESC, group_key
LIMIT CAST($limit AS BIGINT)
