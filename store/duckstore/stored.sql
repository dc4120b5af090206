-- Which of a batch's exchange ids (staged in stage_ids) are already stored,
-- in exchanges (kind 'x') or exchange_bodies (kind 'b'). An exchange id
-- always comes with the same request ts, so only stored rows of the
-- batch's ts range [$lo, $hi] can match; the zone maps on ts skip every
-- other row group, and no index on exchange_id is needed.
SELECT DISTINCT 'x' AS kind, e.exchange_id
FROM exchanges AS e
JOIN stage_ids AS s ON s.exchange_id = e.exchange_id
WHERE e.ts >= $lo AND e.ts <= $hi
UNION ALL
SELECT DISTINCT 'b' AS kind, b.exchange_id
FROM exchange_bodies AS b
JOIN stage_ids AS s ON s.exchange_id = b.exchange_id
WHERE b.ts >= $lo AND b.ts <= $hi;
