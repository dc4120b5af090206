-- The latest annotations of every tool (of one server, or all), as the
-- newest tools/list result showed them.
SELECT server, tool, a_read_only AS read_only, a_destructive AS destructive,
       a_idempotent AS idempotent, a_open_world AS open_world, last_seen AS seen_at
FROM (
    SELECT server, tool,
           argMax(read_only, seen_at) AS a_read_only,
           argMax(destructive, seen_at) AS a_destructive,
           argMax(idempotent, seen_at) AS a_idempotent,
           argMax(open_world, seen_at) AS a_open_world,
           max(seen_at) AS last_seen
    FROM tool_annotations
    WHERE {server:String} = '' OR server = {server:String}
    GROUP BY server, tool
)
ORDER BY server, tool
