-- Re-sends of a tool call whose earlier attempt had an unknown outcome and
-- whose tool is not known to be read-only or idempotent: the retry, its
-- chain, what the attempt just before it got, how many attempts came
-- before and their distinct outcomes, and the tool's annotations.
-- {chain_from} reaches back before {from} for earlier attempts. Only the
-- first {limit} retries are looked up: every join keeps one row per retry.
WITH r AS (
    SELECT exchange_id, ts, chain_id, server, client_name, session_id, tool_name,
           attempt, retry_of, retry_origin, outcome
    FROM exchanges FINAL
    WHERE toStartOfHour(ts) >= toStartOfHour({from:DateTime64(3, 'UTC')}) AND toStartOfHour(ts) < {to:DateTime64(3, 'UTC')}
      AND ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
      AND unknown_side_effect_retry
      AND ({server:String} = '' OR server = {server:String})
      AND ({evidence:String} = '' OR evidence = {evidence:String})
      AND ({client:String} = '' OR client_name = {client:String})
      AND ({tool:String} = '' OR tool_name = {tool:String})
    ORDER BY ts, exchange_id
    LIMIT {limit:UInt32}
),
e AS (
    SELECT exchange_id, chain_id, ts, outcome, http_status, error_class
    FROM exchanges FINAL
    WHERE toStartOfHour(ts) >= toStartOfHour({chain_from:DateTime64(3, 'UTC')}) AND toStartOfHour(ts) < {to:DateTime64(3, 'UTC')}
      AND ts >= {chain_from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
      AND chain_id IN (SELECT chain_id FROM r)
),
prior AS (
    SELECT r.exchange_id AS retry_id, count() AS earlier, arraySort(groupUniqArray(e.outcome)) AS outcomes
    FROM r
    INNER JOIN e ON e.chain_id = r.chain_id
    WHERE e.ts < r.ts
    GROUP BY r.exchange_id
),
ann AS (
    SELECT server, tool, argMax(read_only, seen_at) AS ro, argMax(idempotent, seen_at) AS idem
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
       toBool(coalesce(a.tool, '') != '') AS annotated,
       coalesce(a.ro, false) AS read_only,
       coalesce(a.idem, false) AS idempotent
FROM r
LEFT JOIN prior AS p ON p.retry_id = r.exchange_id
LEFT JOIN e AS prev ON prev.exchange_id = r.retry_of
LEFT JOIN ann AS a ON a.server = r.server AND a.tool = r.tool_name
ORDER BY ts, exchange_id
LIMIT {limit:UInt32}
