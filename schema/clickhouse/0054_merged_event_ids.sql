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
-- as an uninterrupted run does. Parts written before this migration read
-- them as []. On a cluster the Distributed table gets the columns too.
ALTER TABLE {{.DB}}.{{local "exchanges"}} {{onCluster}} ADD COLUMN IF NOT EXISTS merged_event_ids Array(String) DEFAULT [];
ALTER TABLE {{.DB}}.{{local "exchanges"}} {{onCluster}} ADD COLUMN IF NOT EXISTS merged_observers Array(LowCardinality(String)) DEFAULT [];
ALTER TABLE {{.DB}}.{{local "exchanges"}} {{onCluster}} ADD COLUMN IF NOT EXISTS merged_offsets_ms Array(Float64) DEFAULT [];
{{if .Cluster}}ALTER TABLE {{.DB}}.exchanges {{onCluster}} ADD COLUMN IF NOT EXISTS merged_event_ids Array(String) DEFAULT [];
ALTER TABLE {{.DB}}.exchanges {{onCluster}} ADD COLUMN IF NOT EXISTS merged_observers Array(LowCardinality(String)) DEFAULT [];
ALTER TABLE {{.DB}}.exchanges {{onCluster}} ADD COLUMN IF NOT EXISTS merged_offsets_ms Array(Float64) DEFAULT [];{{end}}
