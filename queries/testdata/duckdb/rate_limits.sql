WITH x AS (
    SELECT exchange_id, ts, server, client_name, http_status, retry_after_s, retry_of
    FROM exchanges
    WHERE date_trunc('hour', ts) >= date_trunc('hour', CAST($from AS TIMESTAMP)) AND date_trunc('hour', ts) < CAST($to AS TIMESTAMP)
      AND ts >= CAST($from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
      AND (CAST($server AS VARCHAR) = '' OR server = CAST($server AS VARCHAR))
      AND (CAST($evidence AS VARCHAR) = '' OR evidence = CAST($evidence AS VARCHAR))
      AND (CAST($client AS VARCHAR) = '' OR client_name = CAST($client AS VARCHAR))
),
resends AS (
    SELECT retry_of AS resend_of, min(ts) AS first_ts, arg_min(exchange_id, ts) AS first_id
    FROM x
    WHERE retry_of != ''
    GROUP BY retry_of
)
SELECT l.server AS server, l.client_name AS client_name,
       count(*) AS rate_limited,
       count(*) FILTER (WHERE l.retry_after_s IS NOT NULL) AS with_retry_after,
       count(*) FILTER (WHERE l.retry_after_s IS NULL) AS without_retry_after,
       count(*) FILTER (WHERE s.resend_of != '') AS resent,
       count(*) FILTER (WHERE s.resend_of != '' AND l.retry_after_s IS NOT NULL
               AND date_diff('millisecond', l.ts, s.first_ts) < l.retry_after_s * 1000) AS early_resends,
       list_slice(list_sort(coalesce(list(s.first_id) FILTER (WHERE s.resend_of != '' AND l.retry_after_s IS NOT NULL
               AND date_diff('millisecond', l.ts, s.first_ts) < l.retry_after_s * 1000), [])), 1, 3) AS early_example_ids
FROM x AS l
LEFT JOIN resends AS s ON s.resend_of = l.exchange_id
WHERE l.http_status = 429
GROUP BY server, client_name
ORDER BY rate_limited DESC, server, client_name
LIMIT CAST($limit AS BIGINT)
