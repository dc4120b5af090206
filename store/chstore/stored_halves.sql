-- Which halves of a batch (a response without its request, a request
-- without its response) are already stored paired with their other half,
-- within [lo, hi]: the batch's halves' time range widened by the
-- longest time that can separate two halves. The bloom filters on the
-- event ids (migration 0012) skip the granules without them. Only rows
-- with both ids are pairs, and an empty list binds as [''], which must
-- match nothing: not every stored half of the other kind in the range.
SELECT request_event_id, response_event_id
FROM exchanges
WHERE toStartOfHour(ts) >= toStartOfHour(@lo) AND toStartOfHour(ts) <= @hi
  AND ts >= @lo AND ts <= @hi
  AND request_event_id != '' AND response_event_id != ''
  AND (response_event_id IN @responses OR request_event_id IN @requests);
