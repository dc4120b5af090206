"""Static checks of dashboards/: identities, data source references,
descriptions, units and thresholds, the variables every ClickHouse
dashboard needs, the shape of every ClickHouse query (time range through
the plugin's macros, the hour bucket of the sorting key, no FINAL,
variables through $__conditionalAll), links to the API, PromQL metric
and label names against the Go source of cmd/ingest, the provisioning
example and the README."""
import json
import pathlib
import re

import pytest

import dashlib as L

DASHES = [(f.name, L.load(f)) for f in L.dashboard_files()]
CH_VARS = ("server", "client", "tool", "method", "evidence")
VAR_COLUMN = {"server": "server", "client": "client_name", "tool": "tool_name", "method": "method", "evidence": "evidence"}
ALLOWED_DS = {"grafana-clickhouse-datasource": "${datasource}", "prometheus": "${prometheus}"}
VALUE_PANELS = {"timeseries", "stat", "bargauge", "gauge", "heatmap", "table", "barchart", "piechart"}
API_LINK = re.compile(r"^\$\{api_url\}/api/v1/exchanges/\$\{__data\.fields\.(\w+):percentencode\}$")
# A drill-down to a dashboard with one server selected, keeping the data
# source and the time range: from a table cell or from a series' label.
DRILL_LINK = re.compile(r"^/d/(?P<uid>[a-z0-9-]+)/[a-z0-9-]+\?\$\{datasource:queryparam\}"
                        r"&var-server=\$\{__(?:data\.fields|field\.labels)\.server:percentencode\}&\$\{__url_time_range\}$")


def all_panels():
    return [(name, d, p) for name, d in DASHES for p in L.panels(d)]


def panel_ids():
    return [f"{name}:{p['title']}" for name, _, p in all_panels()]


def test_dashboards_exist():
    names = sorted(n for n, _ in DASHES)
    assert names == ["clients.json", "failing.json", "ingest.json", "overview.json", "retries.json", "servers.json"]


def test_unique_uids_and_titles():
    uids = [d["uid"] for _, d in DASHES]
    assert len(set(uids)) == len(uids), uids
    assert all(re.fullmatch(r"[a-z0-9-]{1,40}", u) for u in uids), uids
    titles = [d["title"] for _, d in DASHES]
    assert len(set(titles)) == len(titles)
    for name, d in DASHES:
        assert d.get("id") is None, f"{name}: an exported dashboard carries no database id"
        assert "mcplens" in d.get("tags", []), name
        assert d.get("description"), name
        assert d.get("schemaVersion"), name


@pytest.mark.parametrize("name,dash", DASHES, ids=[n for n, _ in DASHES])
def test_panel_ids_and_titles_unique(name, dash):
    ids = [p.get("id") for p in L.panels(dash)]
    assert all(isinstance(i, int) and i > 0 for i in ids), ids
    assert len(set(ids)) == len(ids), f"{name}: duplicate panel ids {ids}"
    titles = [p.get("title") for p in L.panels(dash)]
    assert all(titles) and len(set(titles)) == len(titles), f"{name}: {titles}"


@pytest.mark.parametrize("name,dash", DASHES, ids=[n for n, _ in DASHES])
def test_layout_fits_and_does_not_overlap(name, dash):
    taken = {}
    for p in L.panels(dash):
        gp = p["gridPos"]
        assert gp["w"] > 0 and gp["h"] > 0 and gp["x"] >= 0 and gp["x"] + gp["w"] <= 24, (p["title"], gp)
        for x in range(gp["x"], gp["x"] + gp["w"]):
            for y in range(gp["y"], gp["y"] + gp["h"]):
                assert (x, y) not in taken, f"{name}: {p['title']!r} overlaps {taken[(x, y)]!r}"
                taken[(x, y)] = p["title"]


def walk(node, path="$"):
    if isinstance(node, dict):
        for k, v in node.items():
            yield path, k, v
            yield from walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, f"{path}[{i}]")


@pytest.mark.parametrize("name,dash", DASHES, ids=[n for n, _ in DASHES])
def test_data_sources_only_through_variables(name, dash):
    text = json.dumps(dash)
    assert "__inputs" not in dash and "${DS_" not in text, f"{name}: export 'for sharing externally' leftovers"
    refs = 0
    for path, key, value in walk(dash):
        if key != "datasource":
            continue
        refs += 1
        assert isinstance(value, dict), f"{name} {path}: datasource {value!r} is a name or id, not a variable"
        assert value.get("type") in ALLOWED_DS, f"{name} {path}: {value}"
        assert value.get("uid") == ALLOWED_DS[value["type"]], f"{name} {path}: hard-coded uid {value.get('uid')!r}"
        assert set(value) <= {"type", "uid"}, f"{name} {path}: {value}"
    assert refs > 0
    ds_vars = {v["name"]: v for v in dash["templating"]["list"] if v["type"] == "datasource"}
    used = {v.strip("${}") for _, k, v in walk(dash) if k == "uid" and isinstance(v, str) and v.startswith("${")}
    for u in used:
        assert u in ds_vars, f"{name}: ${{{u}}} is used but not a datasource variable"
    for v in ds_vars.values():
        assert v["query"] in ALLOWED_DS and ALLOWED_DS[v["query"]] == "${" + v["name"] + "}", v


@pytest.mark.parametrize("panel", [p for _, _, p in all_panels()], ids=panel_ids())
def test_panel_is_explained(panel):
    desc = panel.get("description", "")
    assert len(desc) >= 60, f"{panel['title']!r}: a newcomer needs a description of what it shows and how to read it"
    assert panel.get("targets"), panel["title"]


@pytest.mark.parametrize("panel", [p for _, _, p in all_panels()], ids=panel_ids())
def test_units_and_thresholds(panel):
    assert panel["type"] in VALUE_PANELS, panel["type"]
    defaults = panel["fieldConfig"]["defaults"]
    assert defaults.get("unit"), f"{panel['title']!r}: no unit"
    steps = (defaults.get("thresholds") or {}).get("steps") or []
    assert steps and steps[0]["value"] is None, f"{panel['title']!r}: thresholds need a base step"
    values = [s["value"] for s in steps[1:]]
    assert values == sorted(values), f"{panel['title']!r}: thresholds out of order {values}"
    if panel["type"] == "heatmap":
        assert panel["options"]["yAxis"].get("unit"), "a heatmap's buckets need a unit"
        assert panel["options"].get("calculate") is False, "buckets come from SQL, not from the browser"
    for o in panel["fieldConfig"].get("overrides", []):
        for prop in o["properties"]:
            if prop["id"] == "thresholds":
                vs = [s["value"] for s in prop["value"]["steps"][1:]]
                assert vs == sorted(vs), (panel["title"], o["matcher"])


def ch_dashes():
    return [(n, d) for n, d in DASHES if n != "ingest.json"]


@pytest.mark.parametrize("name,dash", ch_dashes(), ids=[n for n, _ in ch_dashes()])
def test_clickhouse_variables(name, dash):
    vars_ = {v["name"]: v for v in dash["templating"]["list"]}
    assert vars_["datasource"]["type"] == "datasource"
    assert vars_["datasource"]["query"] == "grafana-clickhouse-datasource"
    for n in CH_VARS:
        v = vars_[n]
        assert v["type"] == "query" and v["multi"] and v["includeAll"], f"{name}: ${n} must be multi-select with All"
        assert v["datasource"]["uid"] == "${datasource}"
        assert v["refresh"] == 2, f"{name}: ${n} must refresh on time range change"
        assert not v.get("allValue"), f"{name}: ${n}: All is handled by $__conditionalAll, not a custom value"
        assert v["current"]["value"] == ["$__all"]
        sql = L.variable_sql(v)
        assert "$__timeFilter_ms(ts)" in sql and "toStartOfHour(ts) BETWEEN" in sql, f"{name}: ${n} ignores the time range"
        assert v.get("definition") == sql
    assert vars_["api_url"]["type"] in ("textbox", "constant")
    assert vars_["api_url"]["query"].startswith("http")
    assert [v["name"] for v in dash["templating"]["list"]][:len(CH_VARS) + 1] == ["datasource", *CH_VARS]


def ch_targets():
    out = []
    for name, d in ch_dashes():
        for p in L.panels(d):
            for t in p["targets"]:
                out.append(pytest.param(p, t, id=f"{name}:{p['title']}"))
    return out


@pytest.mark.parametrize("panel,target", ch_targets())
def test_clickhouse_query_shape(panel, target):
    assert L.is_clickhouse(target)
    assert target["editorType"] == "sql"
    series = panel["type"] in ("timeseries", "heatmap")
    assert target["queryType"] == ("timeSeries" if series else "table")
    assert target["format"] == (0 if series else 1), "sqlutil format: 0 time series, 1 table"
    sql = target["rawSql"]
    assert not re.search(r"\bFINAL\b", sql), "read LIMIT 1 BY exchange_id, not FINAL"
    reads = len(re.findall(r"\bFROM exchanges\b", sql))
    assert reads >= 1
    # Each read of exchanges states the hour bucket of the sorting key and the range.
    assert len(re.findall(r"toStartOfHour\(ts\) BETWEEN toStartOfHour\(", sql)) == reads
    assert len(re.findall(r"\$__timeFilter_ms\(ts\)|ts >= subtractHours\(\$__fromTime_ms", sql)) == reads
    assert "LIMIT 1 BY exchange_id" in sql
    for v in CH_VARS:
        call = f"$__conditionalAll({VAR_COLUMN[v]} IN (${{{v}:singlequote}}), ${v})"
        assert call in sql, f"{panel['title']!r} ignores ${v}"
        bare = sql.replace(call, "")
        assert f"${v}" not in bare and f"${{{v}" not in bare, f"${v} outside $__conditionalAll"
    if series:
        assert panel.get("interval") == "1m", "per-minute rates need buckets of at least a minute"
        assert "$__timeInterval(ts) AS time" in sql and "ORDER BY time" in sql


def test_api_links():
    seen = 0
    for name, d in ch_dashes():
        for p in L.panels(d):
            for o in p["fieldConfig"].get("overrides", []):
                for prop in o["properties"]:
                    if prop["id"] != "links":
                        continue
                    for link in prop["value"]:
                        if drill_link(link, o["matcher"]["options"]):
                            continue
                        m = API_LINK.match(link["url"])
                        assert m, f"{p['title']!r}: {link['url']}"
                        assert m.group(1) == o["matcher"]["options"], "the link opens the exchange of its own cell"
                        assert link["title"]
                        seen += 1
    assert seen >= 6


def drill_link(link, column):
    """A drill-down link of a server cell: to a dashboard that exists, in
    the same browser tab."""
    m = DRILL_LINK.match(link["url"])
    if not m:
        return False
    assert column == "server", f"a drill-down by server sits on the server column, not {column!r}"
    assert m.group("uid") in {d["uid"] for _, d in DASHES}, link["url"]
    assert link["title"] and not link.get("targetBlank"), link
    return True


def test_drill_downs():
    """Failing now: the failing servers table and the per-server series
    drill down to the dashboard itself with that server selected."""
    dash = dict(DASHES)["failing.json"]
    by_title = {p["title"]: p for p in L.panels(dash)}
    cells = [link for o in by_title["Failing servers"]["fieldConfig"]["overrides"] for prop in o["properties"]
             if prop["id"] == "links" for link in prop["value"]]
    series = by_title["Failures per minute by server"]["fieldConfig"]["defaults"].get("links", [])
    for link in cells + series:
        m = DRILL_LINK.match(link["url"])
        assert m and m.group("uid") == dash["uid"], link
    assert len(cells) == 1 and len(series) == 1
    assert "__data.fields.server" in cells[0]["url"] and "__field.labels.server" in series[0]["url"]
    assert by_title["Failures per minute by server"]["fieldConfig"]["defaults"]["displayName"] == "${__field.labels.server}"


# --- Prometheus ----------------------------------------------------------------------

GO_METRIC = re.compile(
    r"prometheus\.New(Counter|Gauge|Histogram|Summary)(Vec)?\(\s*prometheus\.\w+Opts\{(?P<opts>[^{}]*)\}"
    r"(?:,\s*\[\]string\{(?P<labels>[^}]*)\})?")


def go_metrics():
    """(name -> (kind, labels) of the metrics whose declaration is
    understood, every "mcplens_..." string literal) of the non-test Go
    files under pipeline/ (pipeline/kafkasource included)."""
    parsed, names = {}, set()
    for f in sorted((L.ROOT / "pipeline").rglob("*.go")):
        if f.name.endswith("_test.go"):
            continue
        text = f.read_text()
        names.update(re.findall(r'"(mcplens_[a-z0-9_]+)"', text))
        for m in GO_METRIC.finditer(text):
            name = re.search(r'Name:\s*"([^"]+)"', m.group("opts"))
            if name:
                labels = re.findall(r'"([^"]+)"', m.group("labels") or "")
                parsed[name.group(1)] = (m.group(1), set(labels))
    assert parsed and set(parsed) <= names
    return parsed, names


PROM_TARGETS = [(p, t) for n, d in DASHES if n == "ingest.json" for p in L.panels(d) for t in p["targets"]]
TARGET_LABELS = {"job", "instance"}


def metric_in_go(name, metrics, names):
    """The registered metric a PromQL name reads, with its kind and labels
    (None when only its name could be found in the source)."""
    if name in metrics:
        return name, metrics[name]
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and metrics.get(base, ("",))[0] in ("Histogram", "Summary"):
            kind, labels = metrics[base]
            return base, (kind, labels | ({"le"} if suffix == "_bucket" and kind == "Histogram" else set()))
    if name in names:
        return name, None
    return None, None


@pytest.mark.parametrize("panel,target", PROM_TARGETS, ids=[f"{p['title']}:{t['refId']}" for p, t in PROM_TARGETS])
def test_promql_names_exist_in_go(panel, target):
    metrics, names = go_metrics()
    expr = target["expr"]
    assert target["datasource"]["uid"] == "${prometheus}"
    used = re.findall(r"\bmcplens_[a-z0-9_]+", expr)
    assert used, expr
    allowed, known = set(TARGET_LABELS), True
    for name in used:
        base, info = metric_in_go(name, metrics, names)
        assert base, f"{name} is not in the Go source of pipeline/ or pipeline/kafkasource"
        selector = re.search(re.escape(name) + r"\{([^}]*)\}", expr)
        assert selector, f"{name}: select job and instance so the variables apply"
        keys = re.findall(r"(\w+)\s*[=!]~?", selector.group(1))
        assert {"job", "instance"} <= set(keys), expr
        if info is None:
            known = False
            continue
        allowed |= info[1]
        assert set(keys) <= TARGET_LABELS | info[1], f"{name} has no label(s) {set(keys) - TARGET_LABELS - info[1]}"
        if info[0] == "Counter":
            assert re.search(r"\b(rate|increase)\(" + re.escape(name), expr), f"counter {name} needs rate()/increase()"
    if known:
        for group in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr):
            for label in (x.strip() for x in group.split(",")):
                assert label in allowed, f"{expr}: no label {label!r}"
        for legend in re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", "")):
            assert legend in allowed, f"legend {{{{{legend}}}}} is not a label of the series"
    assert expr.count("(") == expr.count(")")


def test_ingest_dashboard_covers_the_metrics():
    # The pipeline's and the Kafka source's metrics, which cmd/ingest
    # registers (README, "Metrics on --listen"); stores' own metrics are
    # checked for existence only.
    metrics = set()
    for f in ("pipeline/metrics.go", "pipeline/kafkasource/metrics.go"):
        metrics.update(re.findall(r'Name:\s*"(mcplens_[a-z0-9_]+)"', (L.ROOT / f).read_text()))
    assert metrics <= set(go_metrics()[0])
    text = " ".join(t["expr"] for _, t in PROM_TARGETS)
    for want in ("mcplens_ingest_events_total", "mcplens_ingest_exchanges_total", "mcplens_ingest_quarantined_total",
                 "mcplens_ingest_pending", "mcplens_ingest_evicted_total", "mcplens_ingest_consumer_lag"):
        assert re.search(r"\b" + want + r"\b", text), f"ingest health lacks {want}"
    unused = {m for m in metrics if not re.search(r"\b" + m + r"(_bucket|_sum|_count)?\b", text)}
    assert not unused, f"metrics of cmd/ingest without a panel: {sorted(unused)}"
    vars_ = {v["name"]: v for v in dict(DASHES)["ingest.json"]["templating"]["list"]}
    assert vars_["prometheus"]["type"] == "datasource" and vars_["prometheus"]["query"] == "prometheus"
    for n in ("job", "instance"):
        assert vars_[n]["datasource"]["uid"] == "${prometheus}" and vars_[n]["multi"] and vars_[n]["includeAll"]
        assert vars_[n]["allValue"] == ".*"


# --- Provisioning and README ------------------------------------------------------------


def test_provisioning_example():
    yaml = pytest.importorskip("yaml")
    prov = L.DASHBOARDS / "provisioning"
    ds = yaml.safe_load((prov / "datasources.yaml").read_text())
    by_type = {d["type"]: d for d in ds["datasources"]}
    ch = by_type["grafana-clickhouse-datasource"]
    assert ch["jsonData"]["defaultDatabase"] == "mcplens", "the panels' unqualified table names resolve there"
    assert ch["jsonData"]["protocol"] in ("native", "http") and ch["jsonData"]["host"] and ch["jsonData"]["port"]
    assert "password" in ch.get("secureJsonData", {}) and "$" in ch["secureJsonData"]["password"], \
        "the password comes from the environment, not the file"
    assert re.match(r"^(https?://|\$\{?\w+)", by_type["prometheus"]["url"])
    dash = yaml.safe_load((prov / "dashboards.yaml").read_text())
    p = dash["providers"][0]
    assert p["type"] == "file" and p["options"]["path"]


def test_readme_describes_every_panel():
    readme = (L.DASHBOARDS / "README.md").read_text()
    for name, d in DASHES:
        assert d["title"] in readme, f"README lacks the dashboard {d['title']!r}"
        for p in L.panels(d):
            assert f"**{p['title']}**" in readme, f"README lacks the panel {p['title']!r} of {name}"
    assert "provisioning/" in readme
