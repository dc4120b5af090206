-- Empties the staging tables after a batch (committed or not).
DELETE FROM stage_exchanges;
DELETE FROM stage_bodies;
DELETE FROM stage_annotations;
DELETE FROM stage_quarantine;
