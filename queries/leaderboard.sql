-- Servers, clients or tools (group_by: 'server', 'client', 'tool') ranked
-- by volume, error rate or p99 duration (order_by: 'volume', 'errors',
-- 'p99'): volume, overall and per-layer error rates, and p50/p95/p99 of
-- duration_ms over exchanges that got an answer (not NO_RESPONSE). Error
-- rates are shares of all exchanges; ACCEPTED is not an error, nor are
-- INPUT_REQUIRED and CANCELLED (the client's decision) and UNVERIFIED (a
-- 2xx whose record cannot show more). Tools count tools/call exchanges only.
-- The counts are summed from a count per group, layer and outcome (a few
-- dozen rows per group; DuckDB sums no rows to NULL, hence coalesce)
-- rather than filtered row by row, and the three
-- quantiles come from one sort per group: over 30 days of a million
-- exchanges this is the API's slowest question.
WITH x AS (
    SELECT CASE {group_by:String}
               WHEN 'client' THEN client_name
               WHEN 'tool' THEN tool_name
               ELSE server
           END AS group_key,
           layer, outcome, duration_ms
    FROM (
        SELECT exchange_id, server, client_name, tool_name, layer, outcome, duration_ms
        FROM exchanges FINAL
        WHERE toStartOfHour(ts) >= toStartOfHour({from:DateTime64(3, 'UTC')}) AND toStartOfHour(ts) < {to:DateTime64(3, 'UTC')}
          AND ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
          AND ({server:String} = '' OR server = {server:String})
          AND ({evidence:String} = '' OR evidence = {evidence:String})
          AND ({client:String} = '' OR client_name = {client:String})
          AND ({group_by:String} != 'tool' OR method = 'tools/call')
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
               coalesce(sumIf(n, outcome NOT IN ('SUCCESS', 'TOOL_SUCCESS', 'ACCEPTED', 'INPUT_REQUIRED', 'CANCELLED', 'UNVERIFIED')), 0) AS errors,
               coalesce(sumIf(n, layer = 'transport' AND outcome != 'ACCEPTED'), 0) AS transport_errors,
               coalesce(sumIf(n, layer = 'protocol'), 0) AS protocol_errors,
               coalesce(sumIf(n, outcome = 'TOOL_ERROR'), 0) AS tool_errors,
               coalesce(sumIf(n, layer = 'stream'), 0) AS stream_errors,
               coalesce(sumIf(n, outcome != 'NO_RESPONSE'), 0) AS answered
        FROM (
            SELECT group_key, layer, outcome, count() AS n
            FROM x
            GROUP BY group_key, layer, outcome
        )
        GROUP BY group_key
    ) AS c
    LEFT JOIN (
        SELECT group_key, quantilesExactInclusive(0.5, 0.95, 0.99)(duration_ms) AS qs
        FROM x
        WHERE outcome != 'NO_RESPONSE'
        GROUP BY group_key
    ) AS q ON q.group_key = c.group_key
)
ORDER BY CASE {order_by:String}
             WHEN 'errors' THEN error_rate
             WHEN 'p99' THEN coalesce(p99_ms, 0)
             ELSE toFloat64(total)
         END DESC, group_key
LIMIT {limit:UInt32}
