-- Each stream's held offsets (pipeline.Config.StateHold): events before
-- the mark that were neither stored nor saved when it was written, read
-- again after a restart instead of skipped. Marks written before this
-- column hold none, as they meant.
ALTER TABLE {{.DB}}.ingest_streams {{onCluster}} ADD COLUMN IF NOT EXISTS held Array(Int64) AFTER max_ts_ns;
