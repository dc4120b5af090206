SELECT client_name, client_version, server, client_outcome, outcome, count(*) AS n,
       list_slice(list_sort(coalesce(list(exchange_id), [])), 1, 3) AS example_ids
FROM (
    SELECT exchange_id, client_name, client_version, server, client_outcome, outcome
    FROM exchanges
    WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($from AS TIMESTAMP)) AND date_trunc('hour', ts) < CAST($to AS TIMESTAMP)
      AND ts >= CAST($from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
      AND client_disagrees
      AND (CAST($server AS VARCHAR) = '' OR server = CAST($server AS VARCHAR))
      AND (CAST($evidence AS VARCHAR) = '' OR evidence = CAST($evidence AS VARCHAR))
      AND (CAST($client AS VARCHAR) = '' OR client_name = CAST($client AS VARCHAR))
)
GROUP BY client_name, client_version, server, client_outcome, outcome
ORDER BY n DESC, client_name, client_version, server, client_outcome, outcome
LIMIT CAST($limit AS BIGINT)
