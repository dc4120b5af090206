SELECT ts, position, reason, raw
FROM (
    SELECT ts, position, reason, raw
    FROM quarantine
    WHERE ts >= CAST($from AS TIMESTAMP) AND ts < CAST($to AS TIMESTAMP)
)
ORDER BY ts, position
LIMIT CAST($limit AS BIGINT)
