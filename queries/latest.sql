-- The newest event time among stored exchanges; no row when none is
-- stored. (max is what duplicates cannot change, so no LIMIT 1 BY.)
SELECT max(ts) AS latest
FROM exchanges
HAVING count() > 0
