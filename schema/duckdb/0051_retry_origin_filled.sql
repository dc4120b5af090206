-- Exchanges written before every exchange got a retry_origin hold '' on a
-- re-send mcplens linked without the logger naming who re-sent it, and
-- some a logger's 'none' on a re-send. Say 'unknown' on a re-send
-- (retry_of set, or attempt > 1) and 'none' on a first attempt, as the
-- pipeline now writes them (an MRTR round of a later attempt becomes
-- 'unknown' here, where the pipeline gives it its attempt's origin).
-- Running it twice is a no-op: no row matches the second time.
UPDATE exchanges SET retry_origin = CASE WHEN retry_of <> '' OR attempt > 1 THEN 'unknown' ELSE 'none' END
WHERE retry_origin = '' OR (retry_origin = 'none' AND (retry_of <> '' OR attempt > 1));
