SELECT server, total, sse, stream_cuts, no_response,
       if(sse = 0, 0, stream_cuts / sse) AS cut_rate,
       no_response / total AS no_response_rate,
       close_reasons
FROM (
    SELECT server,
           count(*) AS total,
           count(*) FILTER (WHERE transport = 'sse') AS sse,
           count(*) FILTER (WHERE outcome = 'STREAM_INCOMPLETE') AS stream_cuts,
           count(*) FILTER (WHERE outcome = 'NO_RESPONSE') AS no_response,
           list_sort(coalesce(list(DISTINCT stream_close_reason) FILTER (WHERE outcome = 'STREAM_INCOMPLETE' AND stream_close_reason != ''), [])) AS close_reasons
    FROM (
        SELECT exchange_id, server, transport, outcome, stream_close_reason
        FROM exchanges
        WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($from AS TIMESTAMP)) AND date_trunc('hour', ts) < CAST($to AS TIMESTAMP)
          AND ts >= CAST($from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
          AND (CAST($server AS VARCHAR) = '' OR server = CAST($server AS VARCHAR))
          AND (CAST($evidence AS VARCHAR) = '' OR evidence = CAST($evidence AS VARCHAR))
    )
    GROUP BY server
)
WHERE stream_cuts + no_response > 0
ORDER BY stream_cuts + no_response DESC, server
LIMIT CAST($limit AS BIGINT)
