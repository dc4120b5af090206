WITH x AS (
    SELECT exchange_id, server, outcome, jsonrpc_code, error_message
    FROM exchanges
    WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($from AS TIMESTAMP)) AND date_trunc('hour', ts) < CAST($to AS TIMESTAMP)
      AND ts >= CAST($from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
      AND http_status = 200
      AND (CAST($server AS VARCHAR) = '' OR server = CAST($server AS VARCHAR))
      AND (CAST($evidence AS VARCHAR) = '' OR evidence = CAST($evidence AS VARCHAR))
),
totals AS (
    SELECT server, count(*) FILTER (WHERE outcome = 'JSONRPC_ERROR') AS rpc_errors, count(*) AS http_200
    FROM x
    GROUP BY server
),
codes AS (
    SELECT server, jsonrpc_code, error_message, count(*) AS n,
           list_slice(list_sort(coalesce(list(exchange_id), [])), 1, 3) AS example_ids
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
LIMIT CAST($limit AS BIGINT)
