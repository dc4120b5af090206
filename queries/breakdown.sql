-- Exchanges by layer and outcome, per time bucket and group. bucket_s = 0
-- makes one bucket that starts at {from}; group_by is '', 'server',
-- 'client', 'tool', 'method' or 'error_class' ('' puts every exchange in
-- one group).
SELECT if({bucket_s:UInt32} = 0, {from:DateTime64(3, 'UTC')},
          toStartOfInterval(ts, toIntervalSecond(greatest({bucket_s:UInt32}, 1)))) AS bucket,
       CASE {group_by:String}
           WHEN 'server' THEN server
           WHEN 'client' THEN client_name
           WHEN 'tool' THEN tool_name
           WHEN 'method' THEN method
           WHEN 'error_class' THEN error_class
           ELSE ''
       END AS group_key,
       layer, outcome, count() AS exchanges_n
FROM (
    SELECT exchange_id, ts, server, client_name, tool_name, method, error_class, layer, outcome
    FROM exchanges FINAL
    WHERE toStartOfHour(ts) >= toStartOfHour({from:DateTime64(3, 'UTC')}) AND toStartOfHour(ts) < {to:DateTime64(3, 'UTC')}
      AND ts >= {from:DateTime64(3, 'UTC')} AND ts < {to:DateTime64(3, 'UTC')}
      AND ({server:String} = '' OR server = {server:String})
      AND ({evidence:String} = '' OR evidence = {evidence:String})
      AND ({client:String} = '' OR client_name = {client:String})
      AND ({tool:String} = '' OR tool_name = {tool:String})
      AND ({method:String} = '' OR method = {method:String})
)
GROUP BY bucket, group_key, layer, outcome
ORDER BY bucket, group_key, layer, outcome
LIMIT {limit:UInt32}
