-- The extra wait the merges had learned when a stream's mark was written
-- (views joining their exchange late) and the event time it was learned
-- at: a restarted ingester waits as long again instead of releasing apart
-- the views an uninterrupted run would merge (schema.StreamMark.MergeLag).
-- Marks written before this migration read 0: none learned.
ALTER TABLE ingest_streams ADD COLUMN IF NOT EXISTS merge_lag_ns BIGINT DEFAULT 0;
ALTER TABLE ingest_streams ADD COLUMN IF NOT EXISTS merge_lag_at_ns BIGINT DEFAULT 0;
