-- Exchange search: filters on every dimension and a case-insensitive
-- substring of error_message, in (ts, exchange_id) order; a page starts
-- after the (ts, exchange_id) of the previous page's last row. {q_like} is
-- '' (no text filter) or a lower-case LIKE pattern whose literal %, _ and
-- ! are escaped with '!' (the store builds it from the search text); the
-- ngram skip index on lowerUTF8(error_message) serves it.
SELECT exchange_id, ts, duration_ms, server, client_name, session_id, method, tool_name,
       http_status, layer, outcome, error_class, jsonrpc_code, error_message, retry_advice,
       attempt, chain_id, evidence
FROM exchanges
WHERE toStartOfHour(ts) >= toStartOfHour({after_ts:DateTime64(3, 'UTC')}) AND toStartOfHour(ts) < {to:DateTime64(3, 'UTC')}
  AND ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
  AND (ts > {after_ts:DateTime64(3, 'UTC')} OR (ts = {after_ts:DateTime64(3, 'UTC')} AND exchange_id > {after_id:String}))
  AND ({server:String} = '' OR server = {server:String})
  AND ({evidence:String} = '' OR evidence = {evidence:String})
  AND ({client:String} = '' OR client_name = {client:String})
  AND ({tool:String} = '' OR tool_name = {tool:String})
  AND ({method:String} = '' OR method = {method:String})
  AND ({outcome:String} = '' OR outcome = {outcome:String})
  AND ({layer:String} = '' OR layer = {layer:String})
  AND ({error_class:String} = '' OR error_class = {error_class:String})
  AND ({q_like:String} = '' OR lowerUTF8(error_message) LIKE {q_like:String} ESCAPE '!')
ORDER BY ts, exchange_id
LIMIT 1 BY exchange_id
LIMIT {limit:UInt32}
