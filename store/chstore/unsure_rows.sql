-- Which of a batch's unsure rows (schema.Batch.Unsure) are stored
-- already: its exchanges by id within their time range (the bloom filter
-- on exchange_id skips the granules without them), its quarantined
-- lines by position (the quarantine table's key).
SELECT 'x', exchange_id
FROM exchanges
WHERE toStartOfHour(ts) >= toStartOfHour(@lo) AND toStartOfHour(ts) <= @hi
  AND ts >= @lo AND ts <= @hi
  AND exchange_id IN @exchanges
UNION ALL
SELECT 'q', position
FROM quarantine
WHERE position IN @positions;
