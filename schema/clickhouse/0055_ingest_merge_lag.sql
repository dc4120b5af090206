-- The extra wait the merges had learned when a stream's mark was written
-- (views joining their exchange late) and the event time it was learned
-- at: a restarted ingester waits as long again instead of releasing apart
-- the views an uninterrupted run would merge (schema.StreamMark.MergeLag).
-- Marks written before this migration read 0: none learned.
ALTER TABLE {{.DB}}.ingest_streams {{onCluster}} ADD COLUMN IF NOT EXISTS merge_lag_ns Int64 DEFAULT 0 AFTER held;
ALTER TABLE {{.DB}}.ingest_streams {{onCluster}} ADD COLUMN IF NOT EXISTS merge_lag_at_ns Int64 DEFAULT 0 AFTER merge_lag_ns;
