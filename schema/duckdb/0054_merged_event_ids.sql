-- merged_event_ids: the event ids of the other views merged into an
-- exchange (a client's lines beside the gateway's record). A restarted
-- ingester reads them back with the chain window (queries/chain_window.sql)
-- and counts them as seen, so that a client line its shipper sends again
-- after the restart is recognised as a copy, as an uninterrupted run
-- recognises it, instead of being stored as a client view of its own.
-- Rows written before this migration get [] (no view was recorded), and
-- the column is NOT NULL like the others (DuckDB adds no column with a
-- constraint). Running it twice is a no-op.
ALTER TABLE exchanges ADD COLUMN IF NOT EXISTS merged_event_ids VARCHAR[];
UPDATE exchanges SET merged_event_ids = [] WHERE merged_event_ids IS NULL;
ALTER TABLE exchanges ALTER COLUMN merged_event_ids SET NOT NULL;
