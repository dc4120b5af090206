-- The ts of one exchange by id: the first step of reading an exchange, so
-- that the second (exchange.sql) reads one granule or row group by ts
-- instead of every exchange_id. ClickHouse narrows this scan with the
-- bloom filter index on exchange_id.
SELECT ts
FROM exchanges
WHERE exchange_id = {exchange_id:String}
LIMIT 1
