WITH asked AS (
    SELECT exchange_id, server, tool_name
    FROM exchanges
    WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($from AS TIMESTAMP)) AND date_trunc('hour', ts) < CAST($to AS TIMESTAMP)
      AND ts >= CAST($from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
      AND outcome = 'INPUT_REQUIRED'
      AND (CAST($server AS VARCHAR) = '' OR server = CAST($server AS VARCHAR))
      AND (CAST($evidence AS VARCHAR) = '' OR evidence = CAST($evidence AS VARCHAR))
      AND (CAST($tool AS VARCHAR) = '' OR tool_name = CAST($tool AS VARCHAR))
),
answers AS (
    SELECT continues AS answered_id, arg_min(outcome, ts) AS answer_outcome
    FROM exchanges
    WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($from AS TIMESTAMP))
      AND ts >= CAST($from AS TIMESTAMP)
      AND continues != ''
    GROUP BY continues
)
SELECT a.server AS server, a.tool_name AS tool_name,
       count(*) AS asked_n,
       count(*) FILTER (WHERE f.answered_id != '') AS answered,
       count(*) FILTER (WHERE f.answer_outcome IN ('SUCCESS', 'TOOL_SUCCESS')) AS answered_ok,
       count(*) - count(*) FILTER (WHERE f.answered_id != '') AS abandoned,
       list_slice(list_sort(coalesce(list(a.exchange_id) FILTER (WHERE coalesce(f.answered_id, '') = ''), [])), 1, 3) AS abandoned_example_ids
FROM asked AS a
LEFT JOIN answers AS f ON f.answered_id = a.exchange_id
GROUP BY server, tool_name
ORDER BY asked_n DESC, server, tool_name
LIMIT CAST($limit AS BIGINT)
