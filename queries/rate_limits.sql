-- Rate limiting per server and client: HTTP 429s with and without
-- Retry-After, how many were re-sent, and how many re-sends came earlier
-- than Retry-After allowed (re-send ts - 429 ts < retry_after_s), with up
-- to 3 example ids of such early re-sends.
WITH x AS (
    SELECT exchange_id, ts, server, client_name, http_status, retry_after_s, retry_of
    FROM exchanges FINAL
    WHERE toStartOfHour(ts) >= toStartOfHour({from:DateTime64(3, 'UTC')}) AND toStartOfHour(ts) < {to:DateTime64(3, 'UTC')}
      AND ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
      AND ({server:String} = '' OR server = {server:String})
      AND ({evidence:String} = '' OR evidence = {evidence:String})
      AND ({client:String} = '' OR client_name = {client:String})
),
resends AS (
    SELECT retry_of AS resend_of, min(ts) AS first_ts, argMin(exchange_id, ts) AS first_id
    FROM x
    WHERE retry_of != ''
    GROUP BY retry_of
)
SELECT l.server AS server, l.client_name AS client_name,
       count() AS rate_limited,
       countIf(l.retry_after_s IS NOT NULL) AS with_retry_after,
       countIf(l.retry_after_s IS NULL) AS without_retry_after,
       countIf(s.resend_of != '') AS resent,
       countIf(s.resend_of != '' AND l.retry_after_s IS NOT NULL
               AND dateDiff('millisecond', l.ts, s.first_ts) < l.retry_after_s * 1000) AS early_resends,
       arraySlice(arraySort(groupArrayIf(s.first_id, s.resend_of != '' AND l.retry_after_s IS NOT NULL
               AND dateDiff('millisecond', l.ts, s.first_ts) < l.retry_after_s * 1000)), 1, 3) AS early_example_ids
FROM x AS l
LEFT JOIN resends AS s ON s.resend_of = l.exchange_id
WHERE l.http_status = 429
GROUP BY server, client_name
ORDER BY rate_limited DESC, server, client_name
LIMIT {limit:UInt32}
