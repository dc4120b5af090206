-- The views merged into an exchange beside the one it was built from (a
-- client's lines beside the gateway's record): merged_event_ids, their
-- event ids; merged_observers ('source/observer') and merged_offsets_ms,
-- each view measured against the gateway's clock and how far its clock
-- was off (its request time less the gateway's, ms). A restarted
-- ingester reads them back with the chain window
-- (queries/chain_window.sql): it counts those events as seen, so that a
-- client line its shipper sends again after the restart is recognised as
-- a copy, and it learns the clocks again, so that a client whose clock is
-- further off than the merge window still merges after the restart, both
-- as an uninterrupted run does. Rows written before this migration get
-- [], and the columns are NOT NULL like the others (DuckDB adds no column
-- with a constraint). Running it twice is a no-op.
ALTER TABLE exchanges ADD COLUMN IF NOT EXISTS merged_event_ids VARCHAR[];
ALTER TABLE exchanges ADD COLUMN IF NOT EXISTS merged_observers VARCHAR[];
ALTER TABLE exchanges ADD COLUMN IF NOT EXISTS merged_offsets_ms DOUBLE[];
UPDATE exchanges SET merged_event_ids = [] WHERE merged_event_ids IS NULL;
UPDATE exchanges SET merged_observers = [] WHERE merged_observers IS NULL;
UPDATE exchanges SET merged_offsets_ms = [] WHERE merged_offsets_ms IS NULL;
ALTER TABLE exchanges ALTER COLUMN merged_event_ids SET NOT NULL;
ALTER TABLE exchanges ALTER COLUMN merged_observers SET NOT NULL;
ALTER TABLE exchanges ALTER COLUMN merged_offsets_ms SET NOT NULL;
