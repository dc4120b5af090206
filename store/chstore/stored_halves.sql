-- Which halves of a batch (a request without its response, a response
-- without its request) are already stored paired with their other half,
-- within [lo, hi]: the batch's halves' time range widened by the
-- longest time that can separate two halves. Two selects, one per kind
-- of half, each run only with ids to look up: a skip index answers for
-- its own column alone, so the bloom filters of migration 0012 skip the
-- granules without the ids only when each select tests one column (an
-- OR across both read every granule of the range), and an empty list is
-- left out rather than bound as [''], which the filters hold wherever a
-- row lacks that half. Only rows with both ids are pairs. The sink joins
-- the selects it needs with UNION ALL.
SELECT request_event_id, response_event_id
FROM exchanges
WHERE toStartOfHour(ts) >= toStartOfHour(@lo) AND toStartOfHour(ts) <= @hi
  AND ts >= @lo AND ts <= @hi
  AND response_event_id != ''
  AND request_event_id IN @requests;
SELECT request_event_id, response_event_id
FROM exchanges
WHERE toStartOfHour(ts) >= toStartOfHour(@lo) AND toStartOfHour(ts) <= @hi
  AND ts >= @lo AND ts <= @hi
  AND request_event_id != ''
  AND response_event_id IN @responses;
