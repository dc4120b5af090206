-- Servers that answer HTTP 200 with a JSON-RPC error: per server the
-- errors, all 200s and their share; one row per (code, message) of the
-- server with its count and up to 3 example exchange ids.
WITH x AS (
    SELECT exchange_id, server, outcome, jsonrpc_code, error_message
    FROM exchanges FINAL
    WHERE toStartOfHour(ts) >= toStartOfHour({from:DateTime64(3, 'UTC')}) AND toStartOfHour(ts) < {to:DateTime64(3, 'UTC')}
      AND ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
      AND http_status = 200
      AND ({server:String} = '' OR server = {server:String})
      AND ({evidence:String} = '' OR evidence = {evidence:String})
),
totals AS (
    SELECT server, countIf(outcome = 'JSONRPC_ERROR') AS rpc_errors, count() AS http_200
    FROM x
    GROUP BY server
),
codes AS (
    SELECT server, jsonrpc_code, error_message, count() AS n,
           arraySlice(arraySort(groupArray(exchange_id)), 1, 3) AS example_ids
    FROM x
    WHERE outcome = 'JSONRPC_ERROR'
    GROUP BY server, jsonrpc_code, error_message
)
SELECT t.server AS server, t.rpc_errors AS rpc_errors, t.http_200 AS http_200,
       t.rpc_errors / t.http_200 AS share,
       c.jsonrpc_code AS jsonrpc_code, c.error_message AS error_message, c.n AS n, c.example_ids AS example_ids
FROM totals AS t
INNER JOIN codes AS c ON c.server = t.server
WHERE t.rpc_errors > 0
ORDER BY share DESC, server, n DESC, jsonrpc_code ASC NULLS LAST, error_message
LIMIT {limit:UInt32}
