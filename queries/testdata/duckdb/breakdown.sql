SELECT if(CAST($bucket_s AS BIGINT) = 0, CAST($from AS TIMESTAMP),
          time_bucket(to_seconds(greatest(CAST($bucket_s AS BIGINT), 1)), ts, TIMESTAMP '1970-01-01 00:00:00')) AS bucket,
       CASE CAST($group_by AS VARCHAR)
           WHEN 'server' THEN server
           WHEN 'client' THEN client_name
           WHEN 'tool' THEN tool_name
           WHEN 'method' THEN method
           WHEN 'error_class' THEN error_class
           ELSE ''
       END AS group_key,
       layer, outcome, count(*) AS exchanges_n
FROM (
    SELECT exchange_id, ts, server, client_name, tool_name, method, error_class, layer, outcome
    FROM exchanges
    WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($from AS TIMESTAMP)) AND date_trunc('hour', ts) < CAST($to AS TIMESTAMP)
      AND ts >= CAST($from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
      AND (CAST($server AS VARCHAR) = '' OR server = CAST($server AS VARCHAR))
      AND (CAST($evidence AS VARCHAR) = '' OR evidence = CAST($evidence AS VARCHAR))
      AND (CAST($client AS VARCHAR) = '' OR client_name = CAST($client AS VARCHAR))
      AND (CAST($tool AS VARCHAR) = '' OR tool_name = CAST($tool AS VARCHAR))
      AND (CAST($method AS VARCHAR) = '' OR method = CAST($method AS VARCHAR))
)
GROUP BY bucket, group_key, layer, outcome
ORDER BY bucket, group_key, layer, outcome
LIMIT CAST($limit AS BIGINT)
