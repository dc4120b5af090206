-- Deletes rows older than the retention, relative to the newest exchange
-- (event time, so a replay of old logs is not pruned as it is written).
-- $exchanges_before and $bodies_before are computed by the store.
DELETE FROM exchanges WHERE ts < $exchanges_before;
DELETE FROM quarantine WHERE ts < $exchanges_before;
DELETE FROM exchange_bodies WHERE ts < $bodies_before;
