"""Issue 26 item 10: the Prometheus alert rules and the Grafana dashboard in extensions/monitoring,
checked with the real promtool (tools/build-promtool, from the Go module proxy) on series written by
real audit runs (audit.yml --check on local nodes with real containerd binaries), and every metric
name their queries use checked against what the audit writes."""
import copy
import json
import os
import re
import subprocess

import pytest
import yaml

from tests.integration.test_audit_playbook import AUDIT, V2_CRI_DROPIN, V2_MAIN, healthy
from tests.lib import ansible_run
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
REPO = ansible_run.REPO
MONITORING = os.path.join(REPO, "extensions", "monitoring")
RULES = os.path.join(MONITORING, "gpurt-runtime-gate.rules.yml")
DASHBOARD = os.path.join(MONITORING, "gpurt-runtime-gate.dashboard.json")
# What Prometheus adds to every series it scrapes from the controller's node_exporter.
SCRAPED = (("instance", "controller:9100"), ("job", "node"))
# node_exporter's own series the rules and the dashboard read.
NODE_EXPORTER_METRICS = {"node_textfile_mtime_seconds"}
RUNTIMECLASS = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"},
                "handler": "nvidia"}
# The second run starts an hour after the first.
SECOND_RUN_MINUTE = 60
TIMELINE_MINUTES = 120


def promtool_path():
    path = os.environ.get("GPURT_PROMTOOL") or os.path.join(REPO, ".cache", "bin", "promtool")
    return path if os.access(path, os.X_OK) else None


@pytest.fixture(scope="module")
def promtool():
    path = promtool_path()
    if path is None:
        pytest.skip("no promtool in .cache/bin (make setup builds it with tools/build-promtool, which needs Go)")
    return path


def run_promtool(promtool, *args, stdin=None):
    proc = subprocess.run([promtool] + list(args), input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=300, check=False)
    return proc.returncode, proc.stdout


# --- the audit runs that write the metrics -------------------------------------------------------

@pytest.fixture(scope="module")
def audit_runs(tmp_path_factory, containerd):
    """Two real check-mode audits writing the metrics file, as a schedule would:
    first: ok-1.7 and ok-2.1 healthy, orphan-1.7's drop-in never imported (nvidia missing),
    no-containerd not checked; second, after orphan-1.7's imports are fixed, on the three nodes
    that can be checked (it passes)."""
    base = tmp_path_factory.mktemp("monitoring")
    nodes = dict((name, healthy(Node(base / "nodes", name, version)))
                 for name, version in (("ok-1.7", "1.7"), ("ok-2.1", "2.1")))
    orphan = Node(base / "nodes", "orphan-1.7", "1.7")
    orphan.runtime_binary()
    orphan.write("etc/containerd/config.toml", V2_MAIN.replace("*.toml", "*.conf"))
    orphan.write("etc/containerd/conf.d/99-nvidia.toml", V2_CRI_DROPIN)
    hosts = dict((name, node.host_vars()) for name, node in nodes.items())
    hosts["orphan-1.7"] = orphan.host_vars()
    hosts["no-containerd"] = dict(nodes["ok-2.1"].host_vars(), gpurt_containerd_bin=str(base / "missing" / "containerd"))
    inventory = ansible_run.write_inventory(str(base / "inventory.json"), hosts, groups={"gpu": sorted(hosts)})
    manifest = base / "runtimeclass.json"
    manifest.write_text(json.dumps(RUNTIMECLASS))
    textfile_dir = base / "textfile"
    metrics = textfile_dir / "gpurt_runtime_gate.prom"
    extra = {"gpurt_runtimeclasses_src": str(manifest), "gpurt_report_dir": str(base / "reports"),
             "gpurt_metrics_path": str(metrics)}

    def run(*args):
        result = ansible_run.playbook(AUDIT, inventory, extra, check=True, args=args)
        with open(str(base / "reports" / "audit.json")) as handle:
            report = json.load(handle)
        return {"result": result, "metrics": metrics.read_text(), "report": report}

    first = run()
    assert first["result"].rc == 2, first["result"]
    orphan.write("etc/containerd/config.toml", V2_MAIN)
    second = run("--limit", "ok-1.7,ok-2.1,orphan-1.7")
    assert second["result"].rc == 0, second["result"]
    return {"first": first, "second": second, "metrics_path": str(metrics), "textfile_dir": str(textfile_dir)}


def test_the_runs_are_what_the_alert_tests_assume(audit_runs):
    first, second = audit_runs["first"]["report"], audit_runs["second"]["report"]
    assert first["outcome"] == "failed" and second["outcome"] == "passed"
    statuses = dict((n, e["status"]) for n, e in first["nodes"].items())
    assert statuses == {"ok-1.7": "OK", "ok-2.1": "OK", "orphan-1.7": "FINDINGS", "no-containerd": "NOT CHECKED"}
    assert [f["subject"] for f in first["nodes"]["orphan-1.7"]["findings"] if f["check"] == "missing_handler"] == [
        "nvidia"]
    assert sorted(second["nodes"]) == ["ok-1.7", "ok-2.1", "orphan-1.7"]
    assert not any(e["failing"] for e in second["nodes"].values())


# --- the metrics text as promtool input series -----------------------------------------------------

_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$')


def samples(text):
    """{series selector with the scrape's labels: value} of a metrics file."""
    extra = ",".join('%s="%s"' % pair for pair in SCRAPED)
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        assert match, line
        name, labels, value = match.groups()
        out["%s{%s%s}" % (name, extra, "," + labels[1:-1] if labels else "")] = value
    return out


def series_of_runs(runs, minutes, mtime_file):
    """promtool input series for a schedule of runs [(minute, metrics text)], sampled every minute
    from 0 to `minutes`: each series has the value of the last run's file, and goes stale when a run's
    file no longer has it (node_exporter serves only what the file holds); plus the file's mtime."""
    by_series = {}
    for index, (_start, text) in enumerate(runs):
        for series, value in samples(text).items():
            by_series.setdefault(series, [None] * len(runs))[index] = value
    starts = [start for start, _text in runs]
    out = []
    for series, per_run in sorted(by_series.items()):
        values, last = [], None
        for minute in range(minutes + 1):
            current = per_run[max(i for i, s in enumerate(starts) if s <= minute)]
            values.append(current if current is not None else ("stale" if last is not None else "_"))
            last = current
        out.append({"series": series, "values": " ".join(values)})
    mtimes = [str(60 * max(s for s in starts if s <= minute)) for minute in range(minutes + 1)]
    out.append({"series": 'node_textfile_mtime_seconds{file="%s",%s}' % (
        mtime_file, ",".join('%s="%s"' % pair for pair in SCRAPED)), "values": " ".join(mtimes)})
    return out


def scraped(**labels):
    out = dict(SCRAPED)
    out.update(labels)
    return out


def write_tests(tmp_path, tests, rules=RULES):
    path = tmp_path / "tests.yml"
    path.write_text(yaml.safe_dump({"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": tests},
                                   sort_keys=False))
    return str(path)


def failing_description(node, checks):
    listed = ",".join(" %s (%s: %s)" % item for item in checks)
    return ("%s has findings that fail the gate: pods whose RuntimeClass it does not serve fail there with "
            "RunContainerError. Checks with findings:%s. The audit's report (audit.json in gpurt_report_dir) has "
            "each finding with its fix." % (node, listed))


def findings_of(report, node):
    """(check, severity, count) of a node's findings, from the JSON report (not from the metrics)."""
    counts = {}
    for item in report["nodes"][node]["findings"]:
        key = (item["check"], item["severity"])
        counts[key] = counts.get(key, 0) + 1
    return [(check, severity, str(count)) for (check, severity), count in sorted(counts.items())]


NOT_CHECKED = {"summary": "no-containerd was not checked by the GPU runtime gate",
               "description": "The last audit could not check no-containerd (unreachable, no containerd, its config could "
                              "not be loaded): nothing is known about the runtimes it serves. The audit's report says why."}
RUN_NOT_PASSED = {"summary": "The GPU runtime gate's last audit did not pass",
                  "description": "The last audit run written to controller:9100 did not pass: a node fails or was not "
                                 "checked, or the run as a whole failed (no RuntimeClass read, no host checked). The "
                                 "report's run_failures and nodes say which."}


def test_promtool_checks_the_rules(promtool):
    rc, out = run_promtool(promtool, "check", "rules", RULES)
    assert rc == 0, out
    assert "SUCCESS: 6 rules found" in out, out


def test_the_audit_writes_what_promtool_accepts_as_metrics(promtool, audit_runs):
    rc, out = run_promtool(promtool, "check", "metrics", stdin=audit_runs["first"]["metrics"])
    assert rc == 0, out


def test_alerts_on_the_series_of_real_audit_runs(promtool, audit_runs, tmp_path):
    """The first run: orphan-1.7 fails, no-containerd was not checked, the run fails; the healthy nodes
    raise nothing. The second run an hour later (orphan-1.7 fixed, no-containerd left out): every
    alert resolves."""
    first, second = audit_runs["first"], audit_runs["second"]
    series = series_of_runs([(0, first["metrics"]), (SECOND_RUN_MINUTE, second["metrics"])], TIMELINE_MINUTES,
                            audit_runs["metrics_path"])
    orphan_checks = findings_of(first["report"], "orphan-1.7")
    assert ("missing_handler", "error", "1") in orphan_checks
    failing = [{"exp_labels": scraped(node="orphan-1.7", severity="critical"),
                "exp_annotations": {"summary": "orphan-1.7 fails the GPU runtime gate",
                                    "description": failing_description("orphan-1.7", orphan_checks)}}]
    alerts = []
    for minute, expected in ((1, True), (30, True), (SECOND_RUN_MINUTE + 1, False), (TIMELINE_MINUTES, False)):
        at = "%dm" % minute
        alerts += [
            {"eval_time": at, "alertname": "GpuRuntimeGateNodeFailing", "exp_alerts": failing if expected else []},
            {"eval_time": at, "alertname": "GpuRuntimeGateNodeNotChecked", "exp_alerts": [
                {"exp_labels": scraped(node="no-containerd", status="not_checked", severity="warning"),
                 "exp_annotations": NOT_CHECKED}]
             if expected else []},
            {"eval_time": at, "alertname": "GpuRuntimeGateRunNotPassed", "exp_alerts": [
                {"exp_labels": scraped(severity="warning"), "exp_annotations": RUN_NOT_PASSED}] if expected else []},
            {"eval_time": at, "alertname": "GpuRuntimeGateMetricsStale", "exp_alerts": []},
            {"eval_time": at, "alertname": "GpuRuntimeGateMetricsAbsent", "exp_alerts": []},
        ]
    path = write_tests(tmp_path, [{"name": "two audit runs", "interval": "1m", "input_series": series,
                                   "alert_rule_test": alerts}])
    rc, out = run_promtool(promtool, "test", "rules", path)
    assert rc == 0, out


def stale_tests(metrics_path, max_age_hours, fires_at_hours, schedule_hours):
    """The metrics file written once at t=0; a second gpurt file (its name only, as node_exporter before
    1.7 labels it) rewritten on schedule, and another exporter's old file: only the first goes stale."""
    hours = fires_at_hours + 2
    scrape = ",".join('%s="%s"' % pair for pair in SCRAPED)
    series = [
        {"series": 'node_textfile_mtime_seconds{file="%s",%s}' % (metrics_path, scrape), "values": "0x%d" % hours},
        {"series": 'node_textfile_mtime_seconds{file="gpurt_runtime_gate_cluster.prom",%s}' % scrape,
         "values": " ".join(str(3600 * schedule_hours * (h // schedule_hours)) for h in range(hours + 1))},
        {"series": 'node_textfile_mtime_seconds{file="%s",%s}' % (
            os.path.join(os.path.dirname(metrics_path), "raid.prom"), scrape), "values": "0x%d" % hours},
        {"series": "gpurt_runtime_gate_run_passed{%s}" % scrape, "values": "1x%d" % hours},
    ]
    age = fires_at_hours * 3600
    days, rest = divmod(age, 86400)
    human = ("%dd %dh 0m 0s" % (days, rest // 3600)) if days else "%dh 0m 0s" % (rest // 3600)
    fired = [{"exp_labels": scraped(file=metrics_path, severity="warning"), "exp_annotations": {
        "summary": "The GPU runtime gate's metrics file is older than its schedule",
        "description": "%s on controller:9100 was last written %s ago, more than "
                       "gpurt_runtime_gate:metrics_max_age_seconds: the scheduled audit did not run, or ran and could "
                       "not judge. Its verdicts are stale." % (metrics_path, human)}}]
    return [{"name": "metrics file older than %dh" % max_age_hours, "interval": "1h", "input_series": series,
             "alert_rule_test": [
                 {"eval_time": "%dh" % max_age_hours, "alertname": "GpuRuntimeGateMetricsStale", "exp_alerts": []},
                 {"eval_time": "%dh" % fires_at_hours, "alertname": "GpuRuntimeGateMetricsStale",
                  "exp_alerts": fired}]}]


def test_stale_metrics_file_at_the_default_schedule(promtool, audit_runs, tmp_path):
    """The default: 26 hours. The label is the file's real path, as node_exporter 1.7+ serves it."""
    path = write_tests(tmp_path, stale_tests(audit_runs["metrics_path"], 26, 27, schedule_hours=24))
    rc, out = run_promtool(promtool, "test", "rules", path)
    assert rc == 0, out


def test_stale_metrics_file_follows_the_parameter(promtool, audit_runs, tmp_path):
    """An hourly audit sets gpurt_runtime_gate:metrics_max_age_seconds to 5400: the alert fires after 2h."""
    with open(RULES) as handle:
        rules = yaml.safe_load(handle)
    hourly = copy.deepcopy(rules)
    (param,) = [r for r in hourly["groups"][0]["rules"] if r.get("record") == "gpurt_runtime_gate:metrics_max_age_seconds"]
    assert param["expr"] == "vector(93600)"
    param["expr"] = "vector(5400)"
    (tmp_path / "hourly.rules.yml").write_text(yaml.safe_dump(hourly, sort_keys=False))
    tests = stale_tests(audit_runs["metrics_path"], 1, 2, schedule_hours=1)
    tests[0]["alert_rule_test"][0]["eval_time"] = "1h"  # 3600 s: not yet past 5400
    path = write_tests(tmp_path, tests, rules=tmp_path / "hourly.rules.yml")
    rc, out = run_promtool(promtool, "test", "rules", path)
    assert rc == 0, out


def test_metrics_absent(promtool, tmp_path):
    absent = [{"exp_labels": {"severity": "warning"}, "exp_annotations": {
        "summary": "No GPU runtime gate metrics",
        "description": "Prometheus has no gpurt_runtime_gate_run_passed series: the audit's metrics file is not served "
                       "(removed, renamed outside the textfile collector's directory, or unreadable)."}}]
    path = write_tests(tmp_path, [{"name": "no metrics file", "interval": "1m", "input_series": [
        {"series": 'node_textfile_mtime_seconds{file="raid.prom",instance="controller:9100",job="node"}',
         "values": "0x120"}],
        "alert_rule_test": [{"eval_time": "30m", "alertname": "GpuRuntimeGateMetricsAbsent", "exp_alerts": []},
                            {"eval_time": "61m", "alertname": "GpuRuntimeGateMetricsAbsent", "exp_alerts": absent}]}])
    rc, out = run_promtool(promtool, "test", "rules", path)
    assert rc == 0, out


# --- the dashboard ----------------------------------------------------------------------------------

def dashboard():
    with open(DASHBOARD) as handle:
        return json.load(handle)


def dashboard_exprs():
    """(panel title, expr) of every query, Grafana's variables set as an instance would set them."""
    out = []
    for panel in dashboard()["panels"]:
        for target in panel["targets"]:
            out.append((panel["title"], target["expr"].replace("$instance", ".*")))
    return out


def rule_exprs():
    with open(RULES) as handle:
        rules = yaml.safe_load(handle)
    return [(r.get("alert") or r.get("record"), r["expr"]) for g in rules["groups"] for r in g["rules"]]


def recorded_names():
    with open(RULES) as handle:
        rules = yaml.safe_load(handle)
    return set(r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r)


_PROMQL_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
                    "offset", "inf", "nan"}


def metric_names(expr):
    """The metric names a PromQL expression reads: identifiers outside strings, label matchers, grouping
    lists and ranges that are not functions or keywords."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", text):
        name, call = match.group(1), match.group(2)
        if call or name.lower() in _PROMQL_KEYWORDS:
            continue
        names.add(name)
    return names


def test_metric_names_are_read_out_of_promql():
    """The parser the next test relies on, on shapes the rules and the dashboard use."""
    assert metric_names('sum by (check, severity) (gpurt_runtime_gate_findings{node=~"a|b"}) > 0') == {
        "gpurt_runtime_gate_findings"}
    assert metric_names('time() - node_textfile_mtime_seconds{file=~"x"} > on() group_left() a:b_c') == {
        "node_textfile_mtime_seconds", "a:b_c"}
    assert metric_names("(x == 1) * on(instance, node) group_left(containerd_version) y unless ignoring(status) "
                        "z offset 5m") == {"x", "y", "z"}
    assert metric_names("count(rate(typo_metric[5m])) / 1e3") == {"typo_metric"}


def test_every_metric_name_the_rules_and_dashboard_use_is_written(audit_runs):
    written = set(samples(audit_runs["first"]["metrics"]).keys())
    written = set(s.split("{", 1)[0] for s in written)
    declared = set(line.split()[2] for line in audit_runs["first"]["metrics"].splitlines()
                   if line.startswith("# TYPE "))
    assert written == declared  # every family the writer declares has samples in a real run
    known = written | NODE_EXPORTER_METRICS | recorded_names()
    used = {}
    for where, expr in rule_exprs() + dashboard_exprs():
        names = metric_names(expr)
        assert names or expr.startswith("vector("), (where, expr)
        for name in names:
            used.setdefault(name, []).append(where)
    unknown = dict((n, w) for n, w in used.items() if n not in known)
    assert not unknown, "names the audit does not write: %s" % unknown
    # The three views of the issue: verdict over time, findings by check, nodes by containerd version.
    assert {"gpurt_runtime_gate_nodes", "gpurt_runtime_gate_run_passed", "gpurt_runtime_gate_findings",
            "gpurt_runtime_gate_node_info", "node_textfile_mtime_seconds"} <= set(used)


def test_dashboard_queries_parse(promtool, tmp_path):
    """promtool parses each query as a recording rule's expression."""
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": "dashboard:query_%d" % i, "expr": expr} for i, (_title, expr) in enumerate(dashboard_exprs())]}]}
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    rc, out = run_promtool(promtool, "check", "rules", str(path))
    assert rc == 0, out


def test_dashboard_shows_what_the_report_says(promtool, audit_runs, tmp_path):
    """The three views evaluated by promtool on the first run's series equal what its JSON report says."""
    report = audit_runs["first"]["report"]
    series = series_of_runs([(0, audit_runs["first"]["metrics"])], 30, audit_runs["metrics_path"])
    exprs = dict((title, expr) for title, expr in dashboard_exprs())
    versions = {}
    for entry in report["nodes"].values():
        version = entry["containerd_version"] or "unknown"
        versions[version] = versions.get(version, 0) + 1
    statuses = dict((s.lower().replace(" ", "_"), 0) for s in ("OK", "FINDINGS", "NOT CHECKED"))
    for entry in report["nodes"].values():
        statuses[entry["status"].lower().replace(" ", "_")] += 1
    by_check = {}
    for entry in report["nodes"].values():
        for item in entry["findings"]:
            key = (item["check"], item["severity"])
            by_check[key] = by_check.get(key, 0) + 1
    assert versions.get("unknown") == 1 and len(versions) == 3, versions  # 1.7, 2.1 and the node not checked
    fleet = [e for t, e in dashboard_exprs() if t == "Fleet verdict over time"][0]
    tests = [{"interval": "1m", "input_series": series, "promql_expr_test": [
        {"expr": exprs["Nodes by containerd version"], "eval_time": "10m",
         "exp_samples": [{"labels": '{containerd_version="%s"}' % v, "value": n} for v, n in sorted(versions.items())]},
        {"expr": fleet, "eval_time": "10m",
         "exp_samples": [{"labels": '{status="%s"}' % s, "value": n} for s, n in sorted(statuses.items())]},
        {"expr": exprs["Findings by check"], "eval_time": "10m",
         "exp_samples": [{"labels": '{check="%s",severity="%s"}' % k, "value": n} for k, n in sorted(by_check.items())]},
        {"expr": exprs["Last run"], "eval_time": "10m", "exp_samples": [{"labels": "{}", "value": 0}]},
        {"expr": exprs["Metrics file age"], "eval_time": "10m", "exp_samples": [{"labels": "{}", "value": 600}]},
    ]}]
    path = write_tests(tmp_path, tests)
    rc, out = run_promtool(promtool, "test", "rules", path)
    assert rc == 0, out


GRID_WIDTH = 24


def test_dashboard_is_an_importable_grafana_dashboard():
    dash = dashboard()
    assert dash["uid"] and dash["title"] and isinstance(dash["schemaVersion"], int)
    variables = dict((v["name"], v) for v in dash["templating"]["list"])
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    datasource = {"type": "prometheus", "uid": "${datasource}"}
    assert variables["instance"]["datasource"] == datasource
    ids, cells = set(), []
    for panel in dash["panels"]:
        where = panel.get("title")
        assert panel["id"] not in ids, where
        ids.add(panel["id"])
        assert panel["type"] in {"stat", "timeseries", "state-timeline", "bargauge", "piechart", "table"}, where
        assert panel["datasource"] == datasource, where
        grid = panel["gridPos"]
        assert set(grid) == {"x", "y", "w", "h"} and grid["x"] + grid["w"] <= GRID_WIDTH, where
        columns, rows = range(grid["x"], grid["x"] + grid["w"]), range(grid["y"], grid["y"] + grid["h"])
        cells.append((where, set((x, y) for x in columns for y in rows)))
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), where
        for target in panel["targets"]:
            assert target["expr"].strip() and target["datasource"] == datasource, where
    for i, (title, cell) in enumerate(cells):
        for other, other_cell in cells[i + 1:]:
            assert not cell & other_cell, "panels %r and %r overlap" % (title, other)


def test_metrics_reference_is_current():
    proc = subprocess.run([os.path.join(ansible_run.BIN, "python"), os.path.join(REPO, "tools", "metrics_reference.py"),
                           "--check"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          check=False)
    assert proc.returncode == 0, proc.stdout


PASSED = re.compile(r"^gpurt_runtime_gate_run_passed(?:\{[^}]*\})? (\d)$", re.M)


def test_the_metrics_file_is_rewritten_only_by_a_run_that_judged(tmp_path, containerd):
    """docs/ci.md: a run that fails before judging replaces the reports with a not-judged one, and leaves the
    Prometheus file as the last judging run wrote it (node_textfile_mtime_seconds then tells its age)."""
    node = healthy(Node(tmp_path / "nodes", "gpu-1", "2.1"))
    inventory = ansible_run.write_inventory(str(tmp_path / "inventory.json"), {"gpu-1": node.host_vars()})
    manifest = tmp_path / "runtimeclass.json"
    manifest.write_text(json.dumps(RUNTIMECLASS))
    metrics = tmp_path / "textfile" / "gpurt_runtime_gate.prom"
    reports = tmp_path / "reports"

    def run(src):
        result = ansible_run.playbook(AUDIT, inventory, {"gpurt_runtimeclasses_src": str(src),
                                                         "gpurt_report_dir": str(reports),
                                                         "gpurt_metrics_path": str(metrics)}, check=True)
        with open(str(reports / "audit.json")) as handle:
            return result, json.load(handle)

    result, report = run(manifest)
    assert result.rc == 0 and report["outcome"] == "passed", result
    judged = metrics.read_text()
    assert PASSED.search(judged).group(1) == "1", judged
    os.utime(str(metrics), (1000000000, 1000000000))  # a rewrite, even of the same text, moves it

    result, report = run(tmp_path / "no-such-manifests")  # fails before any node is judged
    assert result.rc != 0 and report["outcome"] == "not_judged", result
    assert metrics.read_text() == judged and os.stat(str(metrics)).st_mtime == 1000000000

    os.remove(node.path("etc/containerd/conf.d/99-nvidia.toml"))  # judged again: nvidia is missing now
    result, report = run(manifest)
    assert result.rc == 2 and report["outcome"] == "failed", result
    assert os.stat(str(metrics)).st_mtime > 1000000000
    assert PASSED.search(metrics.read_text()).group(1) == "0"
