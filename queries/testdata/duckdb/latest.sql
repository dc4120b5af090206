SELECT max(ts) AS latest
FROM exchanges
HAVING count(*) > 0
