-- Which of a batch's exchange ids (staged in stage_ids) are already stored:
-- four queries, of which the writer runs (as one UNION ALL) those the
-- batch needs. An exchange id always comes with the same request ts, so
-- only stored rows of the batch's ts range [$lo, $hi] can match; the zone
-- maps on ts skip every other row group, and no index on exchange_id is
-- needed.
--
-- Kind 'x': in exchanges (a batch with exchanges).
SELECT DISTINCT 'x' AS kind, e.exchange_id
FROM exchanges AS e
JOIN stage_ids AS s ON s.exchange_id = e.exchange_id
WHERE e.ts >= $lo AND e.ts <= $hi;
-- Kind 'b': in exchange_bodies (a batch with bodies).
SELECT DISTINCT 'b' AS kind, b.exchange_id
FROM exchange_bodies AS b
JOIN stage_ids AS s ON s.exchange_id = b.exchange_id
WHERE b.ts >= $lo AND b.ts <= $hi;
-- Kind 'h' (a batch with halves): a half (a request without response, an
-- orphan response) whose event is already stored in another exchange,
-- paired with its other half: a re-read or re-sent half after its pair
-- was stored. It is looked up by event id, not by exchange id: an
-- orphan's id derives from the response unless the gateway logged one,
-- and with the logged id its ts (the response's) is not the stored
-- pair's, which kind 'x' needs. One query per kind of half, each run only
-- for a batch with such halves. An exchange's ts is
-- its request's: the pair holding a request event has that request's ts,
-- so requests are searched in their own range [$qlo, $qhi] (widened by a
-- minute); the pair of an orphan response is up to the longest time
-- that can separate the halves older than it: [$plo, $phi]. Searching
-- that wide range for requests too read every stored id of the last 15
-- minutes on each write (0.55 s a batch twelve minutes into a run).
SELECT DISTINCT 'h' AS kind, s.exchange_id
FROM exchanges AS e
JOIN stage_ids AS s ON s.half_event = e.request_event_id
WHERE s.half_event <> '' AND e.response_event_id <> ''
  AND e.ts >= $qlo AND e.ts <= $qhi;
SELECT DISTINCT 'h' AS kind, s.exchange_id
FROM exchanges AS e
JOIN stage_ids AS s ON s.half_event = e.response_event_id
WHERE s.half_event <> '' AND e.request_event_id <> ''
  AND e.ts >= $plo AND e.ts <= $phi;
