-- MRTR per server and tool: input requests asked (INPUT_REQUIRED),
-- answered (a later exchange continues it; looked for from {from} on,
-- past {to}), answered with success, and abandoned (never continued), with
-- up to 3 example ids of abandoned requests.
WITH asked AS (
    SELECT exchange_id, server, tool_name
    FROM exchanges FINAL
    WHERE toStartOfHour(ts) >= toStartOfHour({from:DateTime64(3, 'UTC')}) AND toStartOfHour(ts) < {to:DateTime64(3, 'UTC')}
      AND ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
      AND outcome = 'INPUT_REQUIRED'
      AND ({server:String} = '' OR server = {server:String})
      AND ({evidence:String} = '' OR evidence = {evidence:String})
      AND ({tool:String} = '' OR tool_name = {tool:String})
),
answers AS (
    SELECT continues AS answered_id, argMin(outcome, ts) AS answer_outcome
    FROM exchanges FINAL
    WHERE toStartOfHour(ts) >= toStartOfHour({from:DateTime64(3, 'UTC')})
      AND ts >= {from:DateTime64(3, 'UTC')}
      AND continues != ''
    GROUP BY continues
)
SELECT a.server AS server, a.tool_name AS tool_name,
       count() AS asked_n,
       countIf(f.answered_id != '') AS answered,
       countIf(f.answer_outcome IN ('SUCCESS', 'TOOL_SUCCESS')) AS answered_ok,
       count() - countIf(f.answered_id != '') AS abandoned,
       arraySlice(arraySort(groupArrayIf(a.exchange_id, coalesce(f.answered_id, '') = '')), 1, 3) AS abandoned_example_ids
FROM asked AS a
LEFT JOIN answers AS f ON f.answered_id = a.exchange_id
GROUP BY server, tool_name
ORDER BY asked_n DESC, server, tool_name
LIMIT {limit:UInt32}
