SELECT ts
FROM exchanges
WHERE exchange_id = CAST($exchange_id AS VARCHAR)
LIMIT 1
