# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit report: per-node status, a human summary, JSON, JUnit XML and a Prometheus
textfile.

Output is stable: no timestamps, nodes and findings sorted, so two runs diff cleanly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import json
import os
import re
import tempfile
from xml.sax.saxutils import escape, quoteattr

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import findings as checks

OK = "OK"
FINDINGS = "FINDINGS"
NOT_CHECKED = "NOT CHECKED"
# The audit's statuses (and the Prometheus series); the others come with other modes.
STATUSES = (OK, FINDINGS, NOT_CHECKED)
NOT_VALIDATED = "NOT VALIDATED"  # validate_bootstrap: parts of the bootstrap that cannot be evaluated
REFUSED = "REFUSED"  # remediation: the node was left as it was, with the reasons
FAILED = "FAILED"  # remediation: gather, write or restart failed, or the node was unreachable
NOT_PROCESSED = "NOT PROCESSED"  # remediation: the rollout stopped before the node's batch
OTHER_STATUSES = (NOT_VALIDATED, REFUSED, FAILED, NOT_PROCESSED)
REPORT_FORMAT = 2
# The report's outcome: what a CI job reads first.
PASSED = "passed"
FAILED_OUTCOME = "failed"
NOT_JUDGED = "not_judged"
COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def collection_version(root=COLLECTION_ROOT):
    """The collection's version: MANIFEST.json of an installed collection, else galaxy.yml."""
    try:
        with open(os.path.join(root, "MANIFEST.json")) as handle:
            return json.load(handle)["collection_info"]["version"]
    except (IOError, OSError, ValueError, KeyError, TypeError):
        pass
    try:
        with open(os.path.join(root, "galaxy.yml")) as handle:
            match = re.search(r"^version:\s*['\"]?([^'\"\s]+)", handle.read(), re.MULTILINE)
            return match.group(1) if match else None
    except (IOError, OSError):
        return None


def node_entry(name, findings=None, not_checked_reason=None, fail_on="error", checks_run=None, runtimes=None,
               checks_skipped=None, node_info=None, status=None, extra=None):
    """One node of the report; a node that could not be checked never counts as OK. status: one of
    OTHER_STATUSES, with not_checked_reason as its reason; extra: more keys of the entry (what the
    remediation did, whether a Node object matched)."""
    items = checks.sort_findings(findings or [])
    if status is not None:
        if status not in OTHER_STATUSES:
            raise ValueError("unknown node status %r" % (status,))
    elif not_checked_reason is not None:
        status = NOT_CHECKED
    elif items:
        status = FINDINGS
    else:
        status = OK
    failing = [f for f in items if checks.reaches(f["severity"], fail_on)]
    counts = dict((s, sum(1 for f in items if f["severity"] == s)) for s in checks.SEVERITIES)
    info = node_info or {}
    entry = {
        "node": name,
        "status": status,
        "reason": not_checked_reason,
        "findings": items,
        "counts": counts,
        "failing": bool(failing) or status not in (OK, FINDINGS),
        "missing": checks.missing_lines(items),
        "gate_lines": gate_lines(items, failing, not_checked_reason, status=status),
        "checks_run": sorted(checks_run or []),
        "checks_skipped": dict(checks_skipped or {}),
        "runtimes": sorted(runtimes) if runtimes is not None else None,
        "containerd_version": info.get("containerd_version"),
        "running": info.get("running"),
        "unreachable": bool(info.get("unreachable")),
    }
    entry.update(extra or {})
    return entry


def gate_lines(items, failing, not_checked_reason, detail_missing=True, status=None):
    """Why a node fails: MISSING=<handler> lines first, then each failing finding with its fix
    (missing handlers too, with their suggestion, unless detail_missing is false)."""
    lines = checks.missing_lines(items)
    lines += [checks.finding_line(f) for f in failing if detail_missing or f["check"] != "missing_handler"]
    if status in OTHER_STATUSES:
        lines.append("%s: %s" % (status, checks.one_line(not_checked_reason)))
    elif not_checked_reason is not None:
        lines.append(checks.not_checked_line(not_checked_reason))
    return lines


# Statuses besides the audit's that a mode can report, counted in its summary.
MODE_STATUSES = {"bootstrap": (NOT_VALIDATED,), "remediation": (REFUSED, FAILED, NOT_PROCESSED)}
NOT_JUDGED_REASON = ("not judged: this report was written when the run started and the run ended before judging "
                     "(bad input, no access to the cluster, a controller that cannot run the collection, ...); "
                     "the run's output says why")
# Names shown in a summary line before "and N more" (the report lists all).
SHOWN_NAMES = 20


def _key(status):
    return status.lower().replace(" ", "_")


def build(entries, fail_on="error", mode="hosts", runtimeclasses=None, run_failures=None, coverage=None, extra=None,
          notes=None):
    """The report. run_failures: reasons the run as a whole fails (no host checked, no Node
    matched, no RuntimeClass read): a gate that checked nothing never passes. coverage: the
    inventory against the cluster's Nodes (see coverage()); extra: more top-level keys (the
    rollout, the RuntimeClass gate); notes: lines the summary prints before the totals."""
    nodes = dict((e["node"], e) for e in entries)
    ordered = [nodes[n] for n in sorted(nodes)]
    summary = {
        "nodes": len(ordered),
        "checked": sum(1 for e in ordered if e["status"] in (OK, FINDINGS)),
        "ok": sum(1 for e in ordered if e["status"] == OK),
        "with_findings": sum(1 for e in ordered if e["status"] == FINDINGS),
        "not_checked": sum(1 for e in ordered if e["status"] == NOT_CHECKED),
        "failing": sum(1 for e in ordered if e["failing"]),
        "findings": dict((s, sum(e["counts"][s] for e in ordered)) for s in checks.SEVERITIES),
    }
    for status in MODE_STATUSES.get(mode, ()):
        summary[_key(status)] = sum(1 for e in ordered if e["status"] == status)
    if mode == "remediation":
        for outcome in ("changed", "unchanged"):
            summary[outcome] = sum(1 for e in ordered if (e.get("remediation") or {}).get("outcome") == outcome)
    run_failures = list(run_failures or [])
    summary["passed"] = not run_failures and summary["failing"] == 0 and bool(ordered)
    built = {
        "format": REPORT_FORMAT,
        "tool": "gpurt.runtime_gate",
        "collection_version": collection_version(),
        "mode": mode,
        "outcome": PASSED if summary["passed"] else FAILED_OUTCOME,
        "fail_on": fail_on,
        "summary": summary,
        "run_failures": run_failures,
        "notes": list(notes or []),
        "runtimeclasses": sorted((rc["name"], rc["handler"]) for rc in (runtimeclasses or [])),
        "nodes": dict((e["node"], e) for e in ordered),
    }
    if coverage is not None:
        built["coverage"] = coverage
    built.update(extra or {})
    return built


def not_judged(mode):
    """What a report says until its run has judged: written over the previous run's report when a
    run starts, so that a run that fails before judging never leaves that report as its own."""
    built = build([], fail_on=None, mode=mode, run_failures=[NOT_JUDGED_REASON])
    built["outcome"] = NOT_JUDGED
    return built


def names_text(names, shown=SHOWN_NAMES):
    names = [checks.one_line(n) for n in names]
    if len(names) <= shown:
        return ", ".join(names)
    return "%s and %d more (the report lists all)" % (", ".join(names[:shown]), len(names) - shown)


def coverage(run_nodes, cluster_nodes, inventory_nodes=None):
    """The hosts of a run against the cluster's Nodes.

    run_nodes: host -> the Node name it stands for (gpurt_node_name, default the host's name);
    cluster_nodes: the Node names the cluster listed, or None when it listed none (manifests only);
    inventory_nodes: Node names of the inventory's hosts outside this run (--limit, a host pattern).
    A host with no Node object has unknown labels and allocatable; a Node no host covers was not
    checked. Without a Node list nothing is said about either."""
    if cluster_nodes is None:
        return {"nodes_listed": False,
                "why": "the cluster's Nodes were not listed (RuntimeClasses from manifests, or gpurt_list_nodes=false): "
                       "the hosts were not compared with the cluster's Nodes"}
    listed = set(cluster_nodes)
    covered = set(run_nodes.values())
    without = {}
    for host in sorted(run_nodes):
        name = run_nodes[host]
        if name not in listed:
            without[host] = {"node_name": name, "closest": _closest_node(name, sorted(listed - covered))}
    not_checked = sorted(listed - covered)
    in_inventory = set(inventory_nodes or [])
    return {
        "nodes_listed": True,
        "cluster_nodes": len(listed),
        "hosts_without_node": without,
        "nodes_not_checked": not_checked,
        "nodes_not_checked_in_inventory": [n for n in not_checked if n in in_inventory],
    }


def _closest_node(name, candidates):
    """The Node a host most likely stands for: the same short name (an FQDN against a bare
    hostname, either way), else a close spelling."""
    short = name.split(".", 1)[0]
    for candidate in candidates:
        if candidate.split(".", 1)[0] == short:
            return candidate
    near = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return near[0] if near else None


def coverage_warnings(cov):
    """The coverage as lines: one per host without a Node object, one for the Nodes not checked."""
    if not cov:
        return []
    if not cov["nodes_listed"]:
        return [cov["why"]]
    lines = []
    for host, item in sorted(cov["hosts_without_node"].items()):
        lines.append("%s: no Node object named %s in the cluster: its labels are unknown (every RuntimeClass "
                     "nodeSelector is taken to match) and its allocatable too (the overhead check is skipped); set "
                     "gpurt_node_name to its Node's name%s" % (
                         checks.one_line(host), checks.one_line(item["node_name"]),
                         " (did you mean %s?)" % checks.one_line(item["closest"]) if item["closest"] else ""))
    missing = cov["nodes_not_checked"]
    if missing:
        inside = cov.get("nodes_not_checked_in_inventory") or []
        lines.append("not checked: %d of the cluster's %d Node(s) are covered by no host of this run: %s%s" % (
            len(missing), cov["cluster_nodes"], names_text(missing),
            "; in the inventory but outside this run (host pattern or --limit): %s" % names_text(inside)
            if inside else ""))
    return lines


def _node_suffix(entry):
    """What the remediation did, after a node's status."""
    rem = entry.get("remediation")
    if not rem or entry["status"] in OTHER_STATUSES:
        return ""
    return " (%s)" % checks.one_line(rem.get("msg") or rem.get("outcome"))


def node_line(entry):
    if entry["status"] == NOT_CHECKED or entry["status"] in OTHER_STATUSES:
        return "%s: %s (%s)%s" % (entry["node"], entry["status"], checks.one_line(entry["reason"]), _node_suffix(entry))
    if entry["status"] == OK:
        return "%s: OK%s" % (entry["node"], _node_suffix(entry))
    parts = ["%d %s" % (entry["counts"][s], s) for s in checks.SEVERITIES if entry["counts"][s]]
    total = len(entry["findings"])
    return "%s: %d finding%s (%s)%s" % (entry["node"], total, "" if total == 1 else "s", ", ".join(parts),
                                        _node_suffix(entry))


def totals_line(report):
    s = report["summary"]
    verb = "re-audited" if report["mode"] == "remediation" else "checked"
    others = "".join(", %d %s" % (s[_key(status)], status.lower()) for status in MODE_STATUSES.get(report["mode"], ()))
    line = "%s %d of %d node(s): %d OK, %d with findings, %d not checked%s; %d failing (fail_on=%s)" % (
        verb, s["checked"], s["nodes"], s["ok"], s["with_findings"], s["not_checked"], others, s["failing"],
        report["fail_on"])
    if report["mode"] == "remediation":
        line = "remediation: %d changed, %d unchanged; %s" % (s["changed"], s["unchanged"], line)
    return line


def summary_lines(report, details=True):
    """One line per node, its findings indented under it, then what the run says about the
    cluster's Nodes, its notes, why the run failed, and the totals."""
    lines = []
    for name in sorted(report["nodes"]):
        entry = report["nodes"][name]
        lines.append(node_line(entry))
        if details:
            for reason in (entry.get("remediation") or {}).get("reasons") or []:
                lines.append("  refused: %s" % checks.one_line(reason))
            for item in entry["findings"]:
                lines.append("  " + checks.finding_line(item))
            for check, why in sorted(entry.get("checks_skipped", {}).items()):
                if why != "skip_checks":
                    lines.append("  skipped %s: %s" % (check, checks.one_line(why)))
    lines.extend(coverage_warnings(report.get("coverage")))
    lines.extend(checks.one_line(note) for note in report.get("notes", []))
    for reason in report.get("run_failures", []):
        lines.append("FAILED: %s" % checks.one_line(reason))
    lines.append(totals_line(report))
    return lines


def to_json(report):
    return json.dumps(report, indent=2, sort_keys=True) + "\n"


# --- JUnit ----------------------------------------------------------------------------------

def _attr(text):
    return quoteattr(checks.one_line(text))


def _body(lines):
    """Element text from lines, each made printable (valid XML 1.0 whatever the input)."""
    return escape("\n".join(checks.one_line(line) for line in lines))


def _finding_case(name, item, fail_on):
    case_name = "[%s] %s: %s" % (item["severity"], item["check"], item["subject"])
    text = ["%s: %s" % (item["subject"], item["message"]), "fix: %s" % item["fix"]]
    if checks.reaches(item["severity"], fail_on):
        body = "<failure message=%s type=%s>%s</failure>" % (_attr(item["message"]), _attr(item["severity"]), _body(text))
        failed = True
    else:
        body = "<system-out>%s</system-out>" % _body(["[%s] " % item["severity"] + text[0], text[1]])
        failed = False
    classname = _attr("%s.%s" % (name, item["check"]))
    return "    <testcase classname=%s name=%s>%s</testcase>" % (classname, _attr(case_name), body), failed


def _case(classname, name, body=""):
    if not body:
        return "    <testcase classname=%s name=%s/>" % (_attr(classname), _attr(name))
    return "    <testcase classname=%s name=%s>%s</testcase>" % (_attr(classname), _attr(name), body)


def _suite(name, cases, counts, props=""):
    return '  <testsuite name=%s tests="%d" failures="%d" errors="%d" skipped="%d">\n%s%s\n  </testsuite>' % (
        _attr(name), len(cases), counts["failures"], counts["errors"], counts["skipped"], props + "\n" if props else "",
        "\n".join(cases))


# A node that was not judged is an <error>; one judged and turned down (a refused remediation, a
# bootstrap that cannot be evaluated) a <failure>.
_NOT_JUDGED_CASES = {NOT_CHECKED: ("checked", "error"), FAILED: ("remediation", "error"),
                     NOT_PROCESSED: ("remediation", "error"), REFUSED: ("remediation", "failure"),
                     NOT_VALIDATED: ("validated", "failure")}


def _node_cases(name, entry, fail_on, counts):
    cases = []
    if entry["status"] in _NOT_JUDGED_CASES:
        case, kind = _NOT_JUDGED_CASES[entry["status"]]
        counts[kind + "s"] += 1
        if entry["status"] == NOT_CHECKED:
            cases.append(_case(name, case, "<error message=%s/>" % _attr(entry["reason"] or "not checked")))
            return cases
        reasons = (entry.get("reasons") or (entry.get("remediation") or {}).get("reasons")
                   or [entry["reason"] or entry["status"]])
        cases.append(_case(name, case, "<%s message=%s type=%s>%s</%s>" % (
            kind, _attr(entry["reason"] or entry["status"]), _attr(entry["status"]), _body(reasons), kind)))
        return cases
    rem = entry.get("remediation")
    if rem:
        cases.append(_case(name, "remediation", "<system-out>%s</system-out>" % _body(
            [rem.get("msg") or rem["outcome"]] + ["loaded change: %s" % c for c in rem.get("loaded_changes") or []])))
    with_findings = set()
    for item in entry["findings"]:
        case, failed = _finding_case(name, item, fail_on)
        cases.append(case)
        counts["failures"] += 1 if failed else 0
        with_findings.add(item["check"])
    for check in sorted(set(entry["checks_run"]) - with_findings):
        cases.append(_case("%s.%s" % (name, check), check))
    for check, why in sorted(entry.get("checks_skipped", {}).items()):
        counts["skipped"] += 1
        cases.append(_case("%s.%s" % (name, check), check, "<skipped message=%s/>" % _attr(why)))
    return cases


def _coverage_cases(cov, counts):
    """The coverage suite: a host without a Node object passes with the warning in its output; a
    Node no host covers is skipped (not checked); no Node list is one skipped case saying so."""
    if not cov["nodes_listed"]:
        counts["skipped"] += 1
        return [_case("coverage", "cluster Nodes", "<skipped message=%s/>" % _attr(cov["why"]))]
    cases = []
    lines = dict((line.split(": ", 1)[0], line) for line in coverage_warnings(cov) if not line.startswith("not checked"))
    for host in sorted(cov["hosts_without_node"]):
        cases.append(_case("coverage", "Node object of %s" % host,
                           "<system-out>%s</system-out>" % _body(["[warning] " + lines[checks.one_line(host)]])))
    inside = set(cov.get("nodes_not_checked_in_inventory") or [])
    for node in cov["nodes_not_checked"]:
        counts["skipped"] += 1
        cases.append(_case("coverage", "Node %s" % node, "<skipped message=%s/>" % _attr(
            "not checked: " + ("in the inventory but outside this run" if node in inside
                               else "no host of the inventory stands for it"))))
    return cases


def to_junit(report):
    """JUnit XML: one testsuite per node, one testcase per finding (a finding that reaches
    fail_on is a <failure>; a lesser one passes and shows in its <system-out> and its name),
    one passing testcase per check that ran and found nothing, a <skipped/> testcase per check
    that could not run (or was skipped), an <error> for a node that could not be checked (or
    remediated, or was not processed) and a <failure> for a refused remediation or a bootstrap
    that cannot be validated; a testcase of what the remediation did; a coverage suite (hosts
    without a Node object, Nodes not checked). Always valid XML: control bytes and ANSI escapes
    are shown escaped."""
    fail_on = report["fail_on"]
    suites = []
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}

    def add(name, cases, counts, props=""):
        suites.append(_suite(name, cases, counts, props))
        totals["tests"] += len(cases)
        for key in counts:
            totals[key] += counts[key]

    run_failures = report.get("run_failures") or []
    if run_failures:
        cases = [_case("run", "run %d" % i, "<error message=%s/>" % _attr(r)) for i, r in enumerate(run_failures, 1)]
        add("run", cases, {"failures": 0, "errors": len(cases), "skipped": 0})
    for name in sorted(report["nodes"]):
        entry = report["nodes"][name]
        counts = {"failures": 0, "errors": 0, "skipped": 0}
        cases = _node_cases(name, entry, fail_on, counts)
        props = "    <properties><property name=\"status\" value=%s/><property name=\"containerd_version\" value=%s/></properties>" % (
            _attr(entry["status"]), _attr(entry.get("containerd_version") or ""))
        add(name, cases, counts, props)
    if report.get("coverage"):
        counts = {"failures": 0, "errors": 0, "skipped": 0}
        cases = _coverage_cases(report["coverage"], counts)
        if cases:
            add("coverage", cases, counts)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name=%s tests="%d" '
            'failures="%d" errors="%d" skipped="%d">\n%s\n</testsuites>\n'
            % (_attr("gpurt.runtime_gate %s" % _TITLES.get(report["mode"], report["mode"])), totals["tests"],
               totals["failures"], totals["errors"], totals["skipped"], "\n".join(suites)))


_TITLES = {"hosts": "audit", "cluster": "audit"}


def write(path, text):
    """Write a report file whole or not at all (a temporary file renamed into place): a reader
    (node_exporter, CI) never sees half a file. Raises IOError/OSError."""
    directory = os.path.dirname(path)
    if directory and not os.path.isdir(directory):
        os.makedirs(directory)
    handle = tempfile.NamedTemporaryFile("w", dir=directory or ".", prefix=".%s." % os.path.basename(path), delete=False)
    try:
        with handle:
            handle.write(text)
        os.chmod(handle.name, 0o644)
        os.rename(handle.name, path)
    except BaseException:
        os.unlink(handle.name)
        raise


# --- Prometheus textfile (node_exporter's textfile collector) -------------------------------

def _label(value):
    return checks.one_line(value).replace("\\", "\\\\").replace('"', '\\"')


def _sample(metric, labels, value):
    body = ",".join('%s="%s"' % (key, _label(val)) for key, val in labels)
    return "%s{%s} %s" % (metric, body, value) if body else "%s %s" % (metric, value)


def to_prometheus(report):
    """Prometheus text format: per node its status, whether it fails, its finding counts by
    check and severity (every severity a check can have, zeros included, so alerts see the
    series drop to 0), and which checks could not run; plus the run's verdict."""
    prefix = "gpurt_runtime_gate_"
    out = []

    def family(name, kind, help_text, samples):
        out.append("# HELP %s%s %s" % (prefix, name, help_text))
        out.append("# TYPE %s%s %s" % (prefix, name, kind))
        out.extend(_sample(prefix + name, labels, value) for labels, value in samples)

    nodes = [report["nodes"][n] for n in sorted(report["nodes"])]
    family("info", "gauge", "The collection version and the run's settings.",
           [((("version", report.get("collection_version") or ""), ("mode", report["mode"]),
              ("fail_on", report["fail_on"])), 1)])
    family("run_passed", "gauge", "1 when the run passed: nodes checked and none failing.",
           [((), 1 if report["summary"].get("passed") else 0)])
    family("nodes", "gauge", "Nodes of the run by status.",
           [((("status", s.lower().replace(" ", "_")),), sum(1 for e in nodes if e["status"] == s)) for s in STATUSES])
    family("node_status", "gauge", "1 for the node's status (ok, findings, not_checked), 0 for the others.",
           [((("node", e["node"]), ("status", s.lower().replace(" ", "_"))), 1 if e["status"] == s else 0)
            for e in nodes for s in STATUSES])
    family("node_failing", "gauge", "1 when the node fails the gate at fail_on.",
           [((("node", e["node"]),), 1 if e["failing"] else 0) for e in nodes])
    samples = []
    for entry in nodes:
        for check in checks.REGISTRY:
            for severity in check.severities:
                count = sum(1 for f in entry["findings"] if f["check"] == check.id and f["severity"] == severity)
                if entry["status"] == NOT_CHECKED or (check.id not in entry["checks_run"] and not count):
                    continue
                samples.append(((("node", entry["node"]), ("check", check.id), ("severity", severity)), count))
    family("findings", "gauge", "Findings of a node by check and severity, for the checks that ran.", samples)
    family("check_skipped", "gauge", "1 for a check that could not run on the node (or was skipped).",
           [((("node", e["node"]), ("check", c)), 1) for e in nodes for c in sorted(e.get("checks_skipped", {}))])
    return "\n".join(out) + "\n"


RENDERERS = {"json": to_json, "junit": to_junit, "metrics": to_prometheus}


class WriteError(IOError):
    pass


def write_all(built, paths):
    """Write the report in each format paths names ({"json": PATH, "junit": PATH, "metrics": PATH};
    empty ones skipped). Returns the paths written; WriteError names the one that failed."""
    written = []
    for kind in ("json", "junit", "metrics"):
        path = (paths or {}).get(kind)
        if path:
            try:
                write(path, RENDERERS[kind](built))
            except (IOError, OSError) as exc:
                raise WriteError("cannot write report %s: %s" % (path, exc.strerror or exc))
            written.append(path)
    return written


def result_of(built, written, details=False):
    """What the actions that judge a run return of its report (the summary lines for the callback too)."""
    lines = summary_lines(built, details=details)
    out = {
        "changed": False,
        "report": built,
        "summary": built["summary"],
        "passed": built["summary"]["passed"],
        "run_failures": built["run_failures"],
        "summary_lines": lines,
        "detail_lines": summary_lines(built),
        "gpurt_summary_lines": lines,
        "failing_nodes": sorted(n for n, e in built["nodes"].items() if e["failing"]),
        "unreachable_nodes": sorted(n for n, e in built["nodes"].items() if e["unreachable"]),
        "written": written,
        "msg": lines[-1],
    }
    warnings = coverage_warnings(built.get("coverage")) if (built.get("coverage") or {}).get("nodes_listed") else []
    if warnings:
        out["warnings"] = warnings
    return out
