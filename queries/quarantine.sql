-- Quarantined input lines rejected in a time range, newest last.
SELECT ts, position, reason, raw
FROM (
    SELECT ts, position, reason, raw
    FROM quarantine
    WHERE ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
    LIMIT 1 BY position
)
ORDER BY ts, position
LIMIT {limit:UInt32}
