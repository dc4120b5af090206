-- Empties the staging tables after a batch (committed or not).
DELETE FROM stage_ids;
DELETE FROM stage_annotations;
DELETE FROM stage_quarantine;
DELETE FROM stage_released;
