-- Merges the staged small tables inside the batch's transaction: a tool's
-- annotations are replaced only by newer ones; a quarantined line already
-- stored (same source position) is skipped.
INSERT INTO tool_annotations
SELECT * FROM stage_annotations
QUALIFY row_number() OVER (PARTITION BY server, tool ORDER BY seen_at DESC) = 1
ON CONFLICT (server, tool) DO UPDATE SET
    read_only = excluded.read_only,
    destructive = excluded.destructive,
    idempotent = excluded.idempotent,
    open_world = excluded.open_world,
    seen_at = excluded.seen_at
WHERE excluded.seen_at >= tool_annotations.seen_at;
INSERT INTO quarantine
SELECT * FROM stage_quarantine
QUALIFY row_number() OVER (PARTITION BY position) = 1
ON CONFLICT DO NOTHING;
