-- Clients whose own conclusion (client_outcome) contradicts the
-- classification, e.g. "success" for a tool result with isError: true.
SELECT client_name, client_version, server, client_outcome, outcome, count() AS n,
       arraySlice(arraySort(groupArray(exchange_id)), 1, 3) AS example_ids
FROM (
    SELECT exchange_id, client_name, client_version, server, client_outcome, outcome
    FROM exchanges FINAL
    WHERE toStartOfHour(ts) >= toStartOfHour({from:DateTime64(3, 'UTC')}) AND toStartOfHour(ts) < {to:DateTime64(3, 'UTC')}
      AND ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
      AND client_disagrees
      AND ({server:String} = '' OR server = {server:String})
      AND ({evidence:String} = '' OR evidence = {evidence:String})
      AND ({client:String} = '' OR client_name = {client:String})
)
GROUP BY client_name, client_version, server, client_outcome, outcome
ORDER BY n DESC, client_name, client_version, server, client_outcome, outcome
LIMIT {limit:UInt32}
