SELECT server, tool, a_read_only AS read_only, a_destructive AS destructive,
       a_idempotent AS idempotent, a_open_world AS open_world, last_seen AS seen_at
FROM (
    SELECT server, tool,
           arg_max(read_only, seen_at) AS a_read_only,
           arg_max(destructive, seen_at) AS a_destructive,
           arg_max(idempotent, seen_at) AS a_idempotent,
           arg_max(open_world, seen_at) AS a_open_world,
           max(seen_at) AS last_seen
    FROM tool_annotations
    WHERE CAST($server AS VARCHAR) = '' OR server = CAST($server AS VARCHAR)
    GROUP BY server, tool
)
ORDER BY server, tool
