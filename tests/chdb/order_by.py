"""Measure candidate sorting keys of the exchanges table in chDB.

Run: python3 tests/chdb/order_by.py [rows] [days]

Loads the same generated rows (7 days, 40 servers with skewed volume,
12 tools, 2 clients per server) into one copy of the real exchanges DDL
per candidate ORDER BY, then prints the rows each question-shaped filter
reads (ClickHouse's own read statistics) and the compressed size. The
numbers in schema/clickhouse/0002_exchanges.sql come from this script.
"""
import json
import pathlib
import re
import sys
import time

from chdb import session

ROOT = pathlib.Path(__file__).resolve().parents[2]
CANDIDATES = {
    "hour_server": "(toStartOfHour(ts), server, ts, exchange_id)",
    "server_hour": "(server, toStartOfHour(ts), ts, exchange_id)",
    "server_ts": "(server, ts, exchange_id)",
    "ts_only": "(ts, exchange_id)",
}
# Every question bounds the hour bucket explicitly besides ts: ClickHouse
# does not derive a condition on toStartOfHour(ts) from one on a
# DateTime64 ts (EXPLAIN indexes=1 shows the key unused), so the queries
# spell it out, as SigNoz's do for its ts_bucket_start.
# (ts < to implies toStartOfHour(ts) < to, which skips the bucket of an
# hour-aligned upper bound.)
H1 = "toStartOfHour(ts) >= toStartOfHour(toDateTime64('{f}', 3, 'UTC')) AND toStartOfHour(ts) < toDateTime64('{t}', 3, 'UTC') AND ts >= '{f}' AND ts < '{t}'"
QUERIES = {
    "1h all servers": H1.format(f="2026-11-05 10:00:00", t="2026-11-05 11:00:00"),
    "1h one server": H1.format(f="2026-11-05 10:00:00", t="2026-11-05 11:00:00") + " AND server = 'srv-07'",
    "6h all servers": H1.format(f="2026-11-05 06:00:00", t="2026-11-05 12:00:00"),
    "6h one server": H1.format(f="2026-11-05 06:00:00", t="2026-11-05 12:00:00") + " AND server = 'srv-07'",
    "1d one server": H1.format(f="2026-11-05 00:00:00", t="2026-11-06 00:00:00") + " AND server = 'srv-07'",
    "7d one server": "server = 'srv-07'",
    "id lookup": "exchange_id = 'x-00000000001234567'",
    "session lookup": "session_id = 's-4242'",
}


def exchanges_ddl():
    sql = (ROOT / "schema/testdata/clickhouse_single.sql").read_text()
    for stmt in sql.split(";\n\n"):
        if re.search(r"CREATE TABLE IF NOT EXISTS mcplens.exchanges\s*\n", stmt):
            return "\n".join(l for l in stmt.splitlines() if not l.startswith("--"))
    raise SystemExit("exchanges DDL not found")


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    span_ms = (int(sys.argv[2]) if len(sys.argv) > 2 else 7) * 86_400_000
    s = session.Session()
    s.query("CREATE DATABASE IF NOT EXISTS mcplens")
    ddl = exchanges_ddl()
    key = re.search(r"ORDER BY (\(.*\))", ddl).group(1)
    for name, order in CANDIDATES.items():
        d = re.sub(r"mcplens.exchanges\s*\n", f"mcplens.ex_{name}\n", ddl, count=1).replace(f"ORDER BY {key}", f"ORDER BY {order}")
        d = re.sub(r"TTL .*\n", "", d)
        s.query(d)
        t0 = time.time()
        s.query(f"""
            INSERT INTO mcplens.ex_{name} (exchange_id, ts, end_ts, duration_ms, server, client_name, session_id,
                method, tool_name, outcome, layer, http_status, chain_id, error_message)
            SELECT concat('x-', leftPad(toString(number * 7919 % {rows}), 17, '0')),
                   toDateTime64('2026-11-05 00:00:00', 3, 'UTC') + toIntervalMillisecond(intDiv(number * {span_ms}, {rows})),
                   toDateTime64('2026-11-05 00:00:00', 3, 'UTC') + toIntervalMillisecond(intDiv(number * {span_ms}, {rows}) + 20),
                   20 + number % 97,
                   concat('srv-', leftPad(toString(toUInt32(pow(number % 1600, 0.5))), 2, '0')),
                   concat('client-', toString(number % 2)),
                   concat('s-', toString(intDiv(number, 50) % 100000)),
                   'tools/call', concat('tool-', toString(number % 12)),
                   if(number % 20 = 0, 'HTTP_ERROR', 'TOOL_SUCCESS'), if(number % 20 = 0, 'transport', 'application'),
                   if(number % 20 = 0, 503, 200), concat('x-', toString(number)),
                   if(number % 20 = 0, 'Service Unavailable', '')
            FROM numbers({rows})""")
        s.query(f"OPTIMIZE TABLE mcplens.ex_{name} FINAL")
        size = str(s.query(f"SELECT sum(data_compressed_bytes) FROM system.parts WHERE database = 'mcplens' AND table = 'ex_{name}' AND active", "CSV")).strip()
        print(f"{name:12s} {order}: loaded {rows} rows over {span_ms // 86_400_000} days in {time.time() - t0:.1f}s, {int(size) / 1e6:.1f} MB compressed")
    print()
    print(f"{'filter':16s}" + "".join(f"{n:>14s}" for n in CANDIDATES))
    for qname, where in QUERIES.items():
        line = f"{qname:16s}"
        for name in CANDIDATES:
            out = json.loads(str(s.query(f"SELECT sum(duration_ms) AS d FROM mcplens.ex_{name} WHERE {where}", "JSON")))
            line += f"{out['statistics']['rows_read']:>14d}"
        print(line)


if __name__ == "__main__":
    main()
