"""Every ClickHouse panel of dashboards/ run on the real ClickHouse engine
(chDB) over the conformance fixture (testdata/conformance, loaded into the
real DDL with the storage tests' loader), its SQL expanded the way Grafana
and grafana-clickhouse-datasource expand it (grafana_sql.py): variables
from their own queries, All and explicit multi-value selections, the
plugin's time macros for the fixture's days and the interval Grafana would
pick. Each panel must return the columns its visualisation reads, of the
right kinds, rows where the fixture has data for it, the same answers as
the API's question it shows (queries/*.sql), the same answers when every
row is stored twice and not yet merged, and use the sorting key's hour
bucket."""
import datetime as dt
import json
import math
import re

import pytest

import dashlib as L
import grafana_sql as g

DB = "mcplens_dash"
DB_TWICE = "mcplens_dash_twice"

LEADER = [("total", "number"), ("errors", "number"), ("error_rate", "number"), ("transport_error_rate", "number"),
          ("protocol_error_rate", "number"), ("application_error_rate", "number"), ("stream_error_rate", "number"),
          ("p50_ms", "number"), ("p95_ms", "number"), ("p99_ms", "number")]
HEATMAP = [("time", "time")] + [(b, "number") for b in
                                ("1", "5", "10", "25", "50", "100", "250", "500", "1000", "2500", "5000",
                                 "10000", "30000", "+Inf")]

# (dashboard uid, panel title) -> the columns the panel reads, in order.
EXPECTED = {
    ("mcplens-overview", "Exchanges"): [("exchanges", "number")],
    ("mcplens-overview", "Error rate"): [("error_rate", "number")],
    ("mcplens-overview", "HTTP 200 but failed"): [("failed_behind_200", "number")],
    ("mcplens-overview", "Failed share of HTTP 200"): [("failed_share_of_200", "number")],
    ("mcplens-overview", "Exchanges per minute by layer"):
        [("time", "time"), ("layer", "string"), ("exchanges_per_min", "number")],
    ("mcplens-overview", "HTTP 200 but failed, per minute by outcome"):
        [("time", "time"), ("outcome", "string"), ("failed_per_min", "number")],
    ("mcplens-overview", "Success rate per server"):
        [("server", "string"), ("total", "number"), ("success_rate", "number")],
    ("mcplens-overview", "Top error classes"):
        [("error_class", "string"), ("outcome", "string"), ("layer", "string"), ("exchanges", "number"),
         ("share", "number"), ("servers", "number")],
    ("mcplens-overview", "Top JSON-RPC error codes"):
        [("jsonrpc_code", "number"), ("error_class", "string"), ("exchanges", "number"),
         ("behind_http_200", "number"), ("servers", "number"), ("example_message", "string")],
    ("mcplens-overview", "Servers answering HTTP 200 with JSON-RPC errors"):
        [("server", "string"), ("rpc_errors", "number"), ("http_200", "number"), ("share", "number"),
         ("jsonrpc_code", "number"), ("error_message", "string"), ("n", "number"), ("example_id", "string"),
         ("example_ids", "array")],
    ("mcplens-failing", "Failing servers"):
        [("server", "string"), ("exchanges", "number"), ("failures", "number"), ("failure_rate", "number"),
         ("failed_behind_2xx", "number"), ("top_causes", "string"), ("last_failure", "time")],
    ("mcplens-failing", "Failures per minute by server"):
        [("time", "time"), ("server", "string"), ("failures_per_min", "number")],
    ("mcplens-failing", "Failures per minute by layer"):
        [("time", "time"), ("layer", "string"), ("failures_per_min", "number")],
    ("mcplens-failing", "Failing exchanges"):
        [("exchange_id", "string"), ("ts", "time"), ("server", "string"), ("client_name", "string"),
         ("tool_name", "string"), ("method", "string"), ("layer", "string"), ("outcome", "string"),
         ("error_class", "string"), ("http_status", "number"), ("jsonrpc_code", "number"),
         ("error_message", "string"), ("retry_advice", "string")],
    ("mcplens-retries", "Retries"): [("retries", "number")],
    ("mcplens-retries", "Unknown side-effect retries"): [("unknown_side_effect_retries", "number")],
    ("mcplens-retries", "429s"): [("rate_limited", "number")],
    ("mcplens-retries", "Re-sent before Retry-After"): [("early_resends", "number")],
    ("mcplens-retries", "Retries per minute by origin"):
        [("time", "time"), ("origin", "string"), ("retries_per_min", "number")],
    ("mcplens-retries", "429s per minute, with and without Retry-After"):
        [("time", "time"), ("retry_after", "string"), ("rate_limited_per_min", "number")],
    ("mcplens-retries", "Retries with unknown side effects"):
        [("exchange_id", "string"), ("ts", "time"), ("tool_name", "string"), ("server", "string"),
         ("client_name", "string"), ("attempt", "number"), ("chain_length", "number"),
         ("first_outcome", "string"), ("first_error_class", "string"), ("outcome", "string"),
         ("origin", "string"), ("annotated", "bool"), ("read_only", "bool"), ("idempotent", "bool"),
         ("chain_id", "string")],
    ("mcplens-retries", "Rate limiting per server and client"):
        [("server", "string"), ("client_name", "string"), ("rate_limited", "number"),
         ("with_retry_after", "number"), ("without_retry_after", "number"), ("resent", "number"),
         ("early_resends", "number"), ("early_example_ids", "array")],
    ("mcplens-retries", "Re-sends earlier than Retry-After allowed"):
        [("exchange_id", "string"), ("ts", "time"), ("rate_limited_id", "string"), ("server", "string"),
         ("client_name", "string"), ("tool_name", "string"), ("retry_after_s", "number"), ("waited_s", "number")],
    ("mcplens-servers", "Server leaderboard"): [("server", "string")] + LEADER,
    ("mcplens-servers", "Tool leaderboard"): [("server", "string"), ("tool_name", "string")] + LEADER,
    ("mcplens-servers", "Latency heatmap"): HEATMAP,
    ("mcplens-servers", "Latency percentiles"):
        [("time", "time"), ("p50_ms", "number"), ("p95_ms", "number"), ("p99_ms", "number")],
    ("mcplens-servers", "Stream cuts and NO_RESPONSE per server"):
        [("server", "string"), ("total", "number"), ("sse", "number"), ("stream_cuts", "number"),
         ("no_response", "number"), ("cut_rate", "number"), ("no_response_rate", "number"),
         ("close_reasons", "array")],
    ("mcplens-servers", "Stream cuts and NO_RESPONSE per minute, by cause"):
        [("time", "time"), ("cause", "string"), ("cuts_per_min", "number")],
    ("mcplens-servers", "Input required (MRTR) per tool"):
        [("server", "string"), ("tool_name", "string"), ("asked_n", "number"), ("answered", "number"),
         ("answered_ok", "number"), ("abandoned", "number"), ("abandoned_example_ids", "array")],
    ("mcplens-clients", "Clients reporting success on failed calls"):
        [("client", "string"), ("client_version", "string"), ("failed", "number"),
         ("failed_with_client_outcome", "number"), ("false_successes", "number"), ("false_success_rate", "number")],
    ("mcplens-clients", "False successes by client version"): [("client", "string"), ("false_successes", "number")],
    ("mcplens-clients", "Every disagreement"):
        [("client_name", "string"), ("client_version", "string"), ("server", "string"), ("client_outcome", "string"),
         ("outcome", "string"), ("n", "number"), ("example_id", "string"), ("example_ids", "array")],
    ("mcplens-clients", "Disagreements per minute by client"):
        [("time", "time"), ("client", "string"), ("disagreements_per_min", "number")],
    ("mcplens-clients", "Client leaderboard"): [("client_name", "string"), ("client_version", "string")] + LEADER,
}

PANELS = L.clickhouse_panels()
PANEL_IDS = [f"{d['uid']}:{p['title']}" for d, p in PANELS]
# Selections besides All: two servers and one method; one server and one
# client; one tool. Every value must be an option of its variable.
SELECTIONS = {
    "all": {},
    "two_servers_tools_call": {"server": ["files", "gosdk"], "method": ["tools/call"]},
    "one_server_one_client": {"server": ["gamma"], "client": ["cli-b"]},
    "one_tool": {"tool": ["lookup"]},
}


@pytest.fixture(scope="module")
def ch():
    s = L.new_session()
    L.new_database(s, DB)
    yield s
    s.query(f"DROP DATABASE IF EXISTS {DB}")
    s.query(f"DROP DATABASE IF EXISTS {DB_TWICE}")


@pytest.fixture(scope="module")
def rng(ch):
    return L.fixture_range(ch, DB)


def run_panel(ch, db, dash, panel, selection, rng, strict=True):
    f, t = rng
    variables, options = L.resolve_variables(ch, db, dash, selection, f, t)
    for name, values in selection.items():
        assert set(values) <= set(options[name]), f"${name}: {values} not among its options {options[name]}"
    out = []
    for target, sql in L.expanded_targets(panel, variables, f, t):
        assert "$" not in sql, f"unexpanded macro or variable left in:\n{sql}"
        cols, rows = L.run(ch, db, sql)
        out.append((sql, cols, rows))
    assert len(out) == 1, "one query per ClickHouse panel"
    return out[0]


def test_every_panel_has_an_expectation():
    have = {(d["uid"], p["title"]) for d, p in PANELS}
    assert have == set(EXPECTED), f"missing: {sorted(have - set(EXPECTED))}, stale: {sorted(set(EXPECTED) - have)}"


def test_variable_queries_list_what_is_stored(ch, rng):
    f, t = rng
    direct = {
        "server": "SELECT DISTINCT server AS v FROM exchanges WHERE server != '' ORDER BY v",
        "client": "SELECT DISTINCT client_name AS v FROM exchanges WHERE client_name != '' ORDER BY v",
        "tool": "SELECT DISTINCT tool_name AS v FROM exchanges WHERE method = 'tools/call' AND tool_name != '' ORDER BY v",
        "method": "SELECT DISTINCT method AS v FROM exchanges WHERE method != '' ORDER BY v",
    }
    for f_ in L.dashboard_files():
        dash = L.load(f_)
        if not L.query_variables(dash):
            continue
        _, options = L.resolve_variables(ch, DB, dash, {}, f, t)
        for name, q in direct.items():
            want = [r["v"] for r in L.run(ch, DB, q)[1]]
            assert options[name] == want, f"{f_.name}: ${name}"
        # Cascading: the clients of the selected server only.
        all_clients = options["client"]
        _, options = L.resolve_variables(ch, DB, dash, {"server": ["gamma"]}, f, t)
        want = [r["v"] for r in L.run(ch, DB, "SELECT DISTINCT client_name AS v FROM exchanges "
                                              "WHERE server = 'gamma' AND client_name != '' ORDER BY v")[1]]
        assert options["client"] == want and 0 < len(want) < len(all_clients)


def field_names_referenced(panel):
    """Field names the panel's configuration points at."""
    names = set()
    for o in panel["fieldConfig"].get("overrides", []):
        if o["matcher"]["id"] == "byName" and panel["type"] != "timeseries":
            names.add(o["matcher"]["options"])
        for prop in o["properties"]:
            if prop["id"] == "links":
                for link in prop["value"]:
                    names.update(re.findall(r"__data\.fields\.(\w+)", link["url"]))
    label = re.fullmatch(r"\$\{__field\.labels\.(\w+)\}", panel["fieldConfig"]["defaults"].get("displayName", ""))
    if label:
        names.add(label.group(1))
    fields = panel.get("options", {}).get("reduceOptions", {}).get("fields", "")
    m = re.fullmatch(r"/\^(\w+)\$/", fields)
    if m:
        names.add(m.group(1))
    for s in panel.get("options", {}).get("sortBy", []):
        names.add(s["displayName"])
    return names


def unit_of(panel, column):
    unit = panel["fieldConfig"]["defaults"].get("unit")
    for o in panel["fieldConfig"].get("overrides", []):
        if o["matcher"] == {"id": "byName", "options": column}:
            for prop in o["properties"]:
                if prop["id"] == "unit":
                    unit = prop["value"]
    return unit


@pytest.mark.parametrize("dash,panel", PANELS, ids=PANEL_IDS)
def test_panel_on_the_fixture(ch, rng, dash, panel):
    sql, cols, rows = run_panel(ch, DB, dash, panel, {}, rng)
    got = [(name, L.kind(t)) for name, t in cols]
    want = EXPECTED[(dash["uid"], panel["title"])]
    assert got == want, f"columns\n got {got}\nwant {want}\n{sql}"
    assert rows, f"no rows over the fixture's days:\n{sql}"
    names = [c for c, _ in cols]
    missing = field_names_referenced(panel) - set(names)
    assert not missing, f"the panel's configuration refers to columns the query lacks: {missing}"
    for name, k in got:
        if k == "number":
            assert all(r[name] is None or isinstance(r[name], (int, float)) for r in rows), name
            assert all(r[name] is None or math.isfinite(r[name]) for r in rows), f"{name}: NaN or Inf"
            if panel["type"] == "table":
                assert unit_of(panel, name), f"numeric column {name} has no unit"
    if panel["type"] == "stat":
        assert len(rows) == 1
    if panel["type"] in ("timeseries", "heatmap"):
        assert names[0] == "time"
        times = [r["time"] for r in rows]
        assert times == sorted(times), "the plugin's long-to-wide conversion needs rows in time order"
    if panel["type"] == "heatmap":
        bounds = [float(n.replace("+Inf", "inf")) for n in names[1:]]
        assert bounds == sorted(bounds) and bounds[-1] == math.inf, "buckets are upper bounds in ascending order"
    if panel["type"] == "bargauge":
        assert sum(1 for _, k in got if k == "string") == 1, "one name per bar"
    ids = {c for c in names if c.endswith("_id")}
    linked = {o["matcher"]["options"] for o in panel["fieldConfig"].get("overrides", [])
              if any(p["id"] == "links" for p in o["properties"])}
    assert ids <= linked, f"exchange ids without a link to the API: {ids - linked}"


@pytest.mark.parametrize("selection", [k for k in SELECTIONS if k != "all"])
@pytest.mark.parametrize("dash,panel", PANELS, ids=PANEL_IDS)
def test_panel_with_selected_values(ch, rng, dash, panel, selection):
    sql, cols, _ = run_panel(ch, DB, dash, panel, SELECTIONS[selection], rng)
    assert [(n, L.kind(t)) for n, t in cols] == EXPECTED[(dash["uid"], panel["title"])], sql


def find(uid, title):
    for d, p in PANELS:
        if d["uid"] == uid and p["title"] == title:
            return d, p
    raise KeyError((uid, title))


@pytest.mark.parametrize("uid,title,selection,column,want", [
    ("mcplens-servers", "Server leaderboard", {"server": ["files", "gosdk"]}, "server", {"files", "gosdk"}),
    ("mcplens-servers", "Tool leaderboard", {"tool": ["lookup", "send"]}, "tool_name", {"lookup", "send"}),
    ("mcplens-clients", "Client leaderboard", {"client": ["cli-b"]}, "client_name", {"cli-b"}),
    ("mcplens-overview", "Top JSON-RPC error codes", {"method": ["initialize"]}, "jsonrpc_code", set()),
])
def test_selection_filters(ch, rng, uid, title, selection, column, want):
    dash, panel = find(uid, title)
    _, _, rows = run_panel(ch, DB, dash, panel, selection, rng)
    assert {r[column] for r in rows} == want


def test_per_minute_rates_add_up(ch, rng):
    """exchanges_per_min * interval / 60 summed over buckets and layers is
    the number of exchanges: the rate arithmetic and the buckets lose
    nothing."""
    dash, panel = find("mcplens-overview", "Exchanges per minute by layer")
    _, _, rows = run_panel(ch, DB, dash, panel, {}, rng)
    interval_s = L.panel_interval_ms(panel, *rng) / 1000
    by_layer = {}
    for r in rows:
        by_layer[r["layer"]] = by_layer.get(r["layer"], 0) + r["exchanges_per_min"] * interval_s / 60
    stored = L.run(ch, DB, "SELECT layer, uniqExact(exchange_id) AS n FROM exchanges GROUP BY layer")[1]
    assert {k: round(v, 6) for k, v in by_layer.items()} == {r["layer"]: r["n"] for r in stored}
    _, _, total = run_panel(ch, DB, *find("mcplens-overview", "Exchanges"), {}, rng)
    assert total[0]["exchanges"] == sum(r["n"] for r in stored)


# --- Failing now: failures only, and the drill-down from a server to its exchanges ------

# Not failures, as in the API's error rates: INPUT_REQUIRED and CANCELLED
# are the client's decision, UNVERIFIED a 2xx whose record shows no more.
NOT_FAILED = "('SUCCESS', 'TOOL_SUCCESS', 'ACCEPTED', 'INPUT_REQUIRED', 'CANCELLED', 'UNVERIFIED')"


def stored_failures(ch, where=""):
    return L.run(ch, DB, "SELECT server, layer, exchange_id FROM exchanges "
                         f"WHERE outcome NOT IN {NOT_FAILED} {where} LIMIT 1 BY exchange_id")[1]


def test_failure_series_count_failures_only(ch, rng):
    """Each failure series adds up, bucket by bucket, to the stored
    failures, by server and by layer: no success, ACCEPTED,
    INPUT_REQUIRED, CANCELLED or UNVERIFIED is stacked in."""
    failed = stored_failures(ch)
    assert failed and len(failed) < L.run(ch, DB, "SELECT uniqExact(exchange_id) AS n FROM exchanges")[1][0]["n"]
    for title, key in (("Failures per minute by server", "server"), ("Failures per minute by layer", "layer")):
        dash, panel = find("mcplens-failing", title)
        _, _, rows = run_panel(ch, DB, dash, panel, {}, rng)
        interval_s = L.panel_interval_ms(panel, *rng) / 1000
        got = {}
        for r in rows:
            got[r[key]] = got.get(r[key], 0) + r["failures_per_min"] * interval_s / 60
        want = {}
        for r in failed:
            want[r[key]] = want.get(r[key], 0) + 1
        assert {k: round(v, 6) for k, v in got.items()} == want, title


def test_failing_servers_rank_the_failures(ch, rng):
    _, _, rows = run_panel(ch, DB, *find("mcplens-failing", "Failing servers"), {}, rng)
    want = {}
    for r in stored_failures(ch):
        want[r["server"]] = want.get(r["server"], 0) + 1
    assert {r["server"]: r["failures"] for r in rows} == want
    assert [r["failures"] for r in rows] == sorted((r["failures"] for r in rows), reverse=True)
    for r in rows:
        assert 0 < r["failure_rate"] <= 1 and r["failed_behind_2xx"] <= r["failures"] and r["top_causes"]


def test_drill_down_from_a_server_to_its_failing_exchanges(ch, rng):
    """What a click on a failing server opens: this dashboard with $server
    set to it. Failing exchanges then lists exactly that server's failed
    exchanges (within its limit), and the table of servers only it."""
    _, _, servers = run_panel(ch, DB, *find("mcplens-failing", "Failing servers"), {}, rng)
    assert len(servers) >= 2, "the fixture needs two failing servers to tell a drill-down from no filter"
    target = servers[-1]["server"]
    selection = {"server": [target]}
    _, _, rows = run_panel(ch, DB, *find("mcplens-failing", "Failing exchanges"), selection, rng)
    want = {r["exchange_id"] for r in stored_failures(ch, f"AND server = '{target}'")}
    assert {r["server"] for r in rows} == {target}
    assert {r["exchange_id"] for r in rows} == want and len(rows) == len(want) == servers[-1]["failures"]
    assert all(r["outcome"] not in NOT_FAILED for r in rows)
    assert [r["ts"] for r in rows] == sorted((r["ts"] for r in rows), reverse=True)
    _, _, drilled = run_panel(ch, DB, *find("mcplens-failing", "Failing servers"), selection, rng)
    assert [r["server"] for r in drilled] == [target]


# --- The panels answer what the API's questions answer ----------------------------------

def question(ch, name, args):
    sql = (L.ROOT / "queries" / f"{name}.sql").read_text()
    types = L.chdb_loader.query_params(sql)
    params = {}
    for k, v in args.items():
        if types[k].startswith("DateTime64"):
            params[k] = v.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        else:
            params[k] = str(v)
    ch.query(f"USE {DB}")
    out = str(ch.query(sql, "JSONEachRow", params=params))
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def close(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def same_rows(want, got, columns):
    assert len(want) == len(got), f"{len(want)} rows from the question, {len(got)} from the panel"
    for w, r in zip(want, got):
        for c_want, c_got in columns:
            assert close(w[c_want], r[c_got]), f"{c_got}: question {w[c_want]!r}, panel {r[c_got]!r}\n{w}\n{r}"


@pytest.mark.parametrize("evidence", ["", "bodies", "envelope", "status_only"])
def test_server_leaderboard_is_the_leaderboard_question(ch, rng, evidence):
    f, t = rng
    want = question(ch, "leaderboard", {"from": f, "to": t, "group_by": "server", "order_by": "volume",
                                        "server": "", "evidence": evidence, "client": "", "limit": 100})
    selection = {"evidence": [evidence]} if evidence else {}
    _, _, got = run_panel(ch, DB, *find("mcplens-servers", "Server leaderboard"), selection, rng)
    assert want, f"no server has {evidence or 'any'} evidence in the fixture"
    same_rows(want, got, [("group_key", "server")] + [(c, c) for c, _ in LEADER])


@pytest.mark.parametrize("uid,title,name,extra,columns", [
    ("mcplens-servers", "Stream cuts and NO_RESPONSE per server", "stream_cuts", {"server": "", "evidence": ""}, None),
    ("mcplens-retries", "Rate limiting per server and client", "rate_limits", {"server": "", "evidence": "", "client": ""}, None),
    ("mcplens-clients", "Every disagreement", "client_disagreements", {"server": "", "evidence": "", "client": ""}, None),
    ("mcplens-overview", "Servers answering HTTP 200 with JSON-RPC errors", "http200_rpc_errors", {"server": "", "evidence": ""}, None),
    ("mcplens-servers", "Input required (MRTR) per tool", "input_required", {"server": "", "evidence": "", "tool": ""}, None),
])
def test_panel_is_its_question(ch, rng, uid, title, name, extra, columns):
    f, t = rng
    want = question(ch, name, {"from": f, "to": t, "limit": 100, **extra})
    _, _, got = run_panel(ch, DB, *find(uid, title), {}, rng)
    assert want, f"{name} has no rows over the fixture"
    same_rows(want, got, [(c, c) for c in want[0]])


def test_unknown_side_effect_retries_is_its_question(ch, rng):
    f, t = rng
    want = question(ch, "unknown_side_effect_retries", {
        "from": f, "to": t, "chain_from": f - dt.timedelta(hours=1), "server": "", "evidence": "", "client": "", "tool": "",
        "limit": 100})
    _, _, got = run_panel(ch, DB, *find("mcplens-retries", "Retries with unknown side effects"), {}, rng)
    want = sorted(want, key=lambda r: r["exchange_id"])
    got = sorted(got, key=lambda r: r["exchange_id"])
    same_rows(want, got, [(c, c) for c in ("exchange_id", "tool_name", "server", "client_name", "attempt",
                                            "outcome", "chain_id", "annotated", "read_only", "idempotent")])
    for w, r in zip(want, got):
        assert r["first_outcome"] in w["earlier_outcomes"], (r, w)
        assert r["chain_length"] >= w["earlier_attempts"] + 1


# --- Storage properties ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def twice(ch):
    """The corpus stored twice with merges stopped: ReplacingMergeTree has
    not collapsed anything, as between inserts and the next merge."""
    L.new_database(ch, DB_TWICE, copies=2, stop_merges=True)
    stored = L.run(ch, DB_TWICE, "SELECT count() AS n, uniqExact(exchange_id) AS u FROM exchanges")[1][0]
    assert stored["n"] == 2 * stored["u"]
    return DB_TWICE


def canonical(rows):
    return sorted(json.dumps(r, sort_keys=True) for r in rows)


@pytest.mark.parametrize("dash,panel", PANELS, ids=PANEL_IDS)
def test_duplicates_do_not_count_twice(ch, rng, twice, dash, panel):
    _, _, once = run_panel(ch, DB, dash, panel, {}, rng)
    _, _, doubled = run_panel(ch, twice, dash, panel, {}, rng)
    assert canonical(doubled) == canonical(once)


def primary_key_blocks(plan, table):
    """For each read of table in an EXPLAIN indexes = 1 plan, the keys its
    primary key condition uses."""
    out = []
    lines = [re.sub(r"^[\s│├└─]+", "", line) for line in plan.splitlines()]
    for i, line in enumerate(lines):
        if line != f"ReadFromMergeTree ({table})":
            continue
        keys = []
        j = i + 1
        while j < len(lines) and not lines[j].startswith("ReadFromMergeTree"):
            if lines[j] == "PrimaryKey":
                k = j + 2  # after "Keys:"
                while k < len(lines) and not lines[k].startswith("Condition:"):
                    keys.append(lines[k])
                    k += 1
                break
            j += 1
        out.append(keys)
    return out


@pytest.mark.parametrize("dash,panel", PANELS, ids=PANEL_IDS)
def test_reads_use_the_hour_bucket_of_the_sorting_key(ch, rng, dash, panel):
    """schema/clickhouse/0002_exchanges.sql: ClickHouse does not derive the
    hour bucket from a condition on ts; every read must state it."""
    sql, _, _ = run_panel(ch, DB, dash, panel, {}, rng)
    ch.query(f"USE {DB}")
    plan = str(ch.query("EXPLAIN indexes = 1 " + sql, "TSVRaw"))
    blocks = primary_key_blocks(plan, f"{DB}.exchanges")
    assert blocks, plan
    for keys in blocks:
        assert "toStartOfHour(ts)" in keys, f"a read of exchanges does not use the hour bucket:\n{plan}"


@pytest.mark.parametrize("dash,panel", PANELS, ids=PANEL_IDS)
def test_empty_range(ch, dash, panel):
    """A range without data: the query runs, stats show 0, not NaN."""
    rng = (dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(2020, 1, 1, 6, tzinfo=dt.timezone.utc))
    _, cols, rows = run_panel(ch, DB, dash, panel, {}, rng)
    if panel["type"] == "stat":
        assert len(rows) == 1 and rows[0][cols[0][0]] == 0, rows
    else:
        assert rows == []
