WITH r AS (
    SELECT exchange_id, ts, chain_id, server, client_name, session_id, tool_name,
           attempt, retry_of, retry_origin, outcome
    FROM exchanges
    WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($from AS TIMESTAMP)) AND date_trunc('hour', ts) < CAST($to AS TIMESTAMP)
      AND ts >= CAST($from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
      AND unknown_side_effect_retry
      AND (CAST($server AS VARCHAR) = '' OR server = CAST($server AS VARCHAR))
      AND (CAST($evidence AS VARCHAR) = '' OR evidence = CAST($evidence AS VARCHAR))
      AND (CAST($client AS VARCHAR) = '' OR client_name = CAST($client AS VARCHAR))
      AND (CAST($tool AS VARCHAR) = '' OR tool_name = CAST($tool AS VARCHAR))
    ORDER BY ts, exchange_id
    LIMIT CAST($limit AS BIGINT)
),
e AS (
    SELECT exchange_id, chain_id, ts, outcome, http_status, error_class
    FROM exchanges
    WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($chain_from AS TIMESTAMP)) AND date_trunc('hour', ts) < CAST($to AS TIMESTAMP)
      AND ts >= CAST($chain_from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
      AND chain_id IN (SELECT chain_id FROM r)
),
prior AS (
    SELECT r.exchange_id AS retry_id, count(*) AS earlier, list_sort(coalesce(list(DISTINCT e.outcome), [])) AS outcomes
    FROM r
    INNER JOIN e ON e.chain_id = r.chain_id
    WHERE e.ts < r.ts
    GROUP BY r.exchange_id
),
ann AS (
    SELECT server, tool, arg_max(read_only, seen_at) AS ro, arg_max(idempotent, seen_at) AS idem
    FROM tool_annotations
    GROUP BY server, tool
)
SELECT r.exchange_id AS exchange_id, r.ts AS ts, r.chain_id AS chain_id, r.server AS server,
       r.client_name AS client_name, r.session_id AS session_id, r.tool_name AS tool_name,
       r.attempt AS attempt, r.retry_origin AS retry_origin, r.outcome AS outcome, r.retry_of AS retry_of,
       coalesce(prev.outcome, '') AS prev_outcome,
       coalesce(prev.http_status, 0) AS prev_http_status,
       coalesce(prev.error_class, '') AS prev_error_class,
       coalesce(p.earlier, 0) AS earlier_attempts,
       coalesce(p.outcomes, []) AS earlier_outcomes,
       CAST(coalesce(a.tool, '') != '' AS BOOLEAN) AS annotated,
       coalesce(a.ro, false) AS read_only,
       coalesce(a.idem, false) AS idempotent
FROM r
LEFT JOIN prior AS p ON p.retry_id = r.exchange_id
LEFT JOIN e AS prev ON prev.exchange_id = r.retry_of
LEFT JOIN ann AS a ON a.server = r.server AND a.tool = r.tool_name
ORDER BY ts, exchange_id
LIMIT CAST($limit AS BIGINT)
