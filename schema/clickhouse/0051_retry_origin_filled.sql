-- Exchanges written before every exchange got a retry_origin hold '' on a
-- re-send mcplens linked without the logger naming who re-sent it, and
-- some a logger's 'none' on a re-send. Say 'unknown' on a re-send
-- (retry_of set, or attempt > 1) and 'none' on a first attempt, as the
-- pipeline now writes them (an MRTR round of a later attempt becomes
-- 'unknown' here, where the pipeline gives it its attempt's origin).
-- A mutation: it returns at once (mutations_sync = 0 whatever the
-- profile says; chDB waits by default) and rewrites the parts holding
-- such rows in the background (system.mutations shows its progress); on
-- a fresh server it has nothing to do. Running it twice is a no-op.
ALTER TABLE {{.DB}}.{{local "exchanges"}} {{onCluster}} UPDATE retry_origin = if(retry_of != '' OR attempt > 1, 'unknown', 'none')
WHERE retry_origin = '' OR (retry_origin = 'none' AND (retry_of != '' OR attempt > 1))
SETTINGS mutations_sync = 0;
