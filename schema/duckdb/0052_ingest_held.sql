-- Each stream's held offsets (pipeline.Config.StateHold): events before
-- the mark that were neither stored nor saved when it was written, read
-- again after a restart instead of skipped. Marks written before this
-- column hold none, as they meant.
ALTER TABLE ingest_streams ADD COLUMN IF NOT EXISTS held BIGINT[] DEFAULT [];
