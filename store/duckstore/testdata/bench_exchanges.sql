-- 1,000,000 exchanges (and their bodies) for the question benchmarks,
-- generated inside DuckDB: 7 days from $start, 40 servers with skewed
-- volume, 5 clients, 12 tools, sessions of 50 calls, a realistic mix of
-- outcomes, retries (every 50th exchange re-sends the one before it),
-- 429s with Retry-After, MRTR rounds, client disagreements.
INSERT INTO exchanges
SELECT
    printf('x-%016x', n * 2654435761 % 1000000007) AS exchange_id,
    printf('e-%d', n), printf('e-%d-r', n),
    ts, ts + INTERVAL 20 MILLISECOND, dur, 'gateway', ['gateway'], true, 'gw-1',
    printf('srv-%02d', CAST(floor(sqrt(n % 1600)) AS INTEGER)),
    'https://mcp.example/mcp',
    ['claude-code', 'cursor', 'vscode', 'goose', 'zed'][n % 5 + 1], '1.0',
    printf('s-%d', n // 50), 'POST',
    CASE o WHEN 'HTTP_ERROR' THEN (CASE WHEN n % 3 = 0 THEN 429 ELSE 503 END) WHEN 'NO_RESPONSE' THEN 0 ELSE 200 END,
    180, 420, false, '', CASE o WHEN 'STREAM_INCOMPLETE' THEN 'server_abort' ELSE '' END, '',
    CASE o WHEN 'TOOL_SUCCESS' THEN 'application' WHEN 'SUCCESS' THEN 'application' WHEN 'TOOL_ERROR' THEN 'application'
           WHEN 'INPUT_REQUIRED' THEN 'interaction' WHEN 'JSONRPC_ERROR' THEN 'protocol' WHEN 'STREAM_INCOMPLETE' THEN 'stream' ELSE 'transport' END,
    o,
    CASE o WHEN 'HTTP_ERROR' THEN (CASE WHEN n % 3 = 0 THEN 'RATE_LIMITED' ELSE 'SERVER_ERROR' END) WHEN 'JSONRPC_ERROR' THEN 'INVALID_PARAMS' ELSE '' END,
    CASE o WHEN 'JSONRPC_ERROR' THEN -32602 END,
    CASE o WHEN 'JSONRPC_ERROR' THEN printf('Invalid params: argument %d must be a string', n % 20)
           WHEN 'HTTP_ERROR' THEN (CASE WHEN n % 3 = 0 THEN 'Too Many Requests' ELSE 'Service Unavailable' END)
           WHEN 'TOOL_ERROR' THEN printf('tool failed: upstream %d timed out', n % 50) ELSE '' END,
    CASE WHEN o = 'HTTP_ERROR' AND n % 3 = 0 AND n % 2 = 0 THEN 5 END,
    CASE o WHEN 'TOOL_SUCCESS' THEN 'NONE' WHEN 'SUCCESS' THEN 'NONE' ELSE 'RETRY_IF_SAFE' END,
    o IN ('TOOL_SUCCESS', 'SUCCESS', 'TOOL_ERROR'), CASE WHEN o IN ('HTTP_ERROR', 'NO_RESPONSE', 'STREAM_INCOMPLETE') THEN 'unknown' ELSE 'possible' END,
    'json-result', CAST(n AS VARCHAR), CASE WHEN n % 25 = 0 THEN 'tools/list' ELSE 'tools/call' END,
    CASE WHEN n % 25 = 0 THEN '' ELSE printf('tool-%d', n % 12) END, printf('%016x', n % 50000), '2025-06-18', 'application/json',
    CASE o WHEN 'NO_RESPONSE' THEN 'none' WHEN 'STREAM_INCOMPLETE' THEN 'sse' ELSE 'json' END,
    0, 0, false, o = 'TOOL_SUCCESS' AND n % 50 = 2,
    CASE WHEN n % 50 = 1 THEN 2 ELSE 1 END,
    CASE WHEN n % 50 = 1 THEN printf('x-%016x', (n - 1) * 2654435761 % 1000000007) ELSE '' END,
    CASE WHEN n % 50 = 1 THEN 'sdk' ELSE 'none' END,
    printf('x-%016x', (CASE WHEN n % 50 IN (1, 2) THEN n - n % 50 ELSE n END) * 2654435761 % 1000000007),
    n % 50 = 1 AND n % 100 = 1,
    CASE WHEN n % 50 = 2 THEN printf('x-%016x', (n - 1) * 2654435761 % 1000000007) ELSE '' END,
    CASE WHEN n % 7 = 0 THEN 'success' ELSE '' END,
    n % 7 = 0 AND o NOT IN ('TOOL_SUCCESS', 'SUCCESS', 'INPUT_REQUIRED'),
    CASE o WHEN 'NO_RESPONSE' THEN 'no response within the pair window' ELSE '' END,
    CASE o WHEN 'NO_RESPONSE' THEN '' ELSE 'bodies' END,
    []::VARCHAR[], []::VARCHAR[], []::DOUBLE[]
FROM (
    SELECT n,
           CAST($start AS TIMESTAMP) + to_milliseconds(n * 604) AS ts,
           CAST(5 + (n * 7919) % 400 + CASE WHEN n % 97 = 0 THEN 3000 ELSE 0 END AS DOUBLE) AS dur,
           CASE WHEN n % 50 = 1 THEN 'TOOL_SUCCESS'
                ELSE ['TOOL_SUCCESS', 'TOOL_SUCCESS', 'TOOL_SUCCESS', 'TOOL_SUCCESS', 'SUCCESS', 'TOOL_SUCCESS', 'TOOL_ERROR',
                      'JSONRPC_ERROR', 'HTTP_ERROR', 'TOOL_SUCCESS', 'STREAM_INCOMPLETE', 'TOOL_SUCCESS', 'NO_RESPONSE',
                      'TOOL_SUCCESS', 'INPUT_REQUIRED', 'TOOL_SUCCESS', 'TOOL_SUCCESS', 'TOOL_SUCCESS', 'TOOL_SUCCESS', 'SUCCESS'][n % 20 + 1]
           END AS o
    FROM range(1000000) AS r(n)
);
INSERT INTO exchange_bodies
SELECT exchange_id, ts, '{"content-type":"application/json"}', '{"content-type":"application/json"}',
       printf('{"jsonrpc":"2.0","id":%s,"method":"%s","params":{"name":"%s","arguments":{"path":"/tmp"}}}', jsonrpc_id, method, tool_name),
       printf('{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}', jsonrpc_id), false
FROM exchanges;
INSERT INTO tool_annotations
SELECT printf('srv-%02d', s), printf('tool-%d', t), t % 3 = 0, t % 3 != 0, t % 4 = 0, true, CAST($start AS TIMESTAMP)
FROM range(40) AS a(s), range(12) AS b(t);
