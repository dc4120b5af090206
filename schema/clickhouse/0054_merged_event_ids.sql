-- merged_event_ids: the event ids of the other views merged into an
-- exchange (a client's lines beside the gateway's record). A restarted
-- ingester reads them back with the chain window (queries/chain_window.sql)
-- and counts them as seen, so that a client line its shipper sends again
-- after the restart is recognised as a copy, as an uninterrupted run
-- recognises it, instead of being stored as a client view of its own.
-- Parts written before this migration read it as []. On a cluster the
-- Distributed table gets the column too.
ALTER TABLE {{.DB}}.{{local "exchanges"}} {{onCluster}} ADD COLUMN IF NOT EXISTS merged_event_ids Array(String) DEFAULT [];
{{if .Cluster}}ALTER TABLE {{.DB}}.exchanges {{onCluster}} ADD COLUMN IF NOT EXISTS merged_event_ids Array(String) DEFAULT [];{{end}}
