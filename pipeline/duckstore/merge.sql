-- Moves one staged batch into the tables, in one transaction. A row whose
-- key is already stored (or repeats within the batch) is skipped; a tool's
-- annotations are replaced only by newer ones.
INSERT INTO exchanges
SELECT * FROM stage_exchanges
QUALIFY row_number() OVER (PARTITION BY exchange_id) = 1
ON CONFLICT DO NOTHING;
INSERT INTO exchange_bodies
SELECT * FROM stage_bodies
QUALIFY row_number() OVER (PARTITION BY exchange_id) = 1
ON CONFLICT DO NOTHING;
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
