-- The redacted, capped headers and bodies of one exchange, by id and the
-- exchange's ts (which the sorting key of exchange_bodies starts with).
SELECT exchange_id, ts, request_headers, response_headers, request_body, response_body, truncated
FROM exchange_bodies
WHERE ts = {ts:DateTime64(3, 'UTC')}
  AND exchange_id = {exchange_id:String}
LIMIT 1
