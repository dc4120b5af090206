-- Stream cuts (STREAM_INCOMPLETE) and NO_RESPONSE per server, with their
-- rates (cuts per SSE response, no-responses per exchange) and the close
-- reasons the observers recorded for the cuts.
SELECT server, total, sse, stream_cuts, no_response,
       if(sse = 0, 0, stream_cuts / sse) AS cut_rate,
       no_response / total AS no_response_rate,
       close_reasons
FROM (
    SELECT server,
           count() AS total,
           countIf(transport = 'sse') AS sse,
           countIf(outcome = 'STREAM_INCOMPLETE') AS stream_cuts,
           countIf(outcome = 'NO_RESPONSE') AS no_response,
           arraySort(groupUniqArrayIf(stream_close_reason, outcome = 'STREAM_INCOMPLETE' AND stream_close_reason != '')) AS close_reasons
    FROM (
        SELECT exchange_id, server, transport, outcome, stream_close_reason
        FROM exchanges FINAL
        WHERE toStartOfHour(ts) >= toStartOfHour({from:DateTime64(3, 'UTC')}) AND toStartOfHour(ts) < {to:DateTime64(3, 'UTC')}
          AND ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
          AND ({server:String} = '' OR server = {server:String})
          AND ({evidence:String} = '' OR evidence = {evidence:String})
    )
    GROUP BY server
)
WHERE stream_cuts + no_response > 0
ORDER BY stream_cuts + no_response DESC, server
LIMIT {limit:UInt32}
