SELECT exchange_id, ts, request_headers, response_headers, request_body, response_body, truncated
FROM exchange_bodies
WHERE ts = CAST($ts AS TIMESTAMP)
  AND exchange_id = CAST($exchange_id AS VARCHAR)
LIMIT 1
