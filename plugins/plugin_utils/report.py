# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit report: per-node status, a human summary, JSON, JUnit XML and a Prometheus
textfile.

Output is stable: no timestamps, nodes and findings sorted, so two runs diff cleanly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
from xml.sax.saxutils import escape, quoteattr

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import findings as checks

OK = "OK"
FINDINGS = "FINDINGS"
NOT_CHECKED = "NOT CHECKED"
STATUSES = (OK, FINDINGS, NOT_CHECKED)
REPORT_FORMAT = 2
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
               checks_skipped=None, node_info=None):
    """One node of the report; a node that could not be checked never counts as OK."""
    items = checks.sort_findings(findings or [])
    if not_checked_reason is not None:
        status = NOT_CHECKED
    elif items:
        status = FINDINGS
    else:
        status = OK
    failing = [f for f in items if checks.reaches(f["severity"], fail_on)]
    counts = dict((s, sum(1 for f in items if f["severity"] == s)) for s in checks.SEVERITIES)
    info = node_info or {}
    return {
        "node": name,
        "status": status,
        "reason": not_checked_reason,
        "findings": items,
        "counts": counts,
        "failing": bool(failing) or status == NOT_CHECKED,
        "missing": checks.missing_lines(items),
        "gate_lines": gate_lines(items, failing, not_checked_reason),
        "checks_run": sorted(checks_run or []),
        "checks_skipped": dict(checks_skipped or {}),
        "runtimes": sorted(runtimes) if runtimes is not None else None,
        "containerd_version": info.get("containerd_version"),
        "running": info.get("running"),
    }


def gate_lines(items, failing, not_checked_reason, detail_missing=True):
    """Why a node fails: MISSING=<handler> lines first, then each failing finding with its fix
    (missing handlers too, with their suggestion, unless detail_missing is false)."""
    lines = checks.missing_lines(items)
    lines += [checks.finding_line(f) for f in failing if detail_missing or f["check"] != "missing_handler"]
    if not_checked_reason is not None:
        lines.append(checks.not_checked_line(not_checked_reason))
    return lines


def build(entries, fail_on="error", mode="hosts", runtimeclasses=None, run_failures=None):
    """The report. run_failures: reasons the run as a whole fails (no host checked, no Node
    matched, no RuntimeClass read): a gate that checked nothing never passes."""
    nodes = dict((e["node"], e) for e in entries)
    ordered = [nodes[n] for n in sorted(nodes)]
    summary = {
        "nodes": len(ordered),
        "checked": sum(1 for e in ordered if e["status"] != NOT_CHECKED),
        "ok": sum(1 for e in ordered if e["status"] == OK),
        "with_findings": sum(1 for e in ordered if e["status"] == FINDINGS),
        "not_checked": sum(1 for e in ordered if e["status"] == NOT_CHECKED),
        "failing": sum(1 for e in ordered if e["failing"]),
        "findings": dict((s, sum(e["counts"][s] for e in ordered)) for s in checks.SEVERITIES),
    }
    run_failures = list(run_failures or [])
    summary["passed"] = not run_failures and summary["failing"] == 0
    return {
        "format": REPORT_FORMAT,
        "tool": "gpurt.runtime_gate",
        "collection_version": collection_version(),
        "mode": mode,
        "fail_on": fail_on,
        "summary": summary,
        "run_failures": run_failures,
        "runtimeclasses": sorted((rc["name"], rc["handler"]) for rc in (runtimeclasses or [])),
        "nodes": dict((e["node"], e) for e in ordered),
    }


def node_line(entry):
    if entry["status"] == NOT_CHECKED:
        return "%s: NOT CHECKED (%s)" % (entry["node"], checks.one_line(entry["reason"]))
    if entry["status"] == OK:
        return "%s: OK" % entry["node"]
    parts = ["%d %s" % (entry["counts"][s], s) for s in checks.SEVERITIES if entry["counts"][s]]
    total = len(entry["findings"])
    return "%s: %d finding%s (%s)" % (entry["node"], total, "" if total == 1 else "s", ", ".join(parts))


def summary_lines(report, details=True):
    """One line per node, its findings indented under it, then the totals."""
    lines = []
    for name in sorted(report["nodes"]):
        entry = report["nodes"][name]
        lines.append(node_line(entry))
        if details:
            for item in entry["findings"]:
                lines.append("  " + checks.finding_line(item))
            for check, why in sorted(entry.get("checks_skipped", {}).items()):
                if why != "skip_checks":
                    lines.append("  skipped %s: %s" % (check, checks.one_line(why)))
    for reason in report.get("run_failures", []):
        lines.append("FAILED: %s" % checks.one_line(reason))
    s = report["summary"]
    lines.append("checked %d of %d node(s): %d OK, %d with findings, %d not checked; %d failing (fail_on=%s)"
                 % (s["checked"], s["nodes"], s["ok"], s["with_findings"], s["not_checked"], s["failing"], report["fail_on"]))
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


def to_junit(report):
    """JUnit XML: one testsuite per node, one testcase per finding (a finding that reaches
    fail_on is a <failure>; a lesser one passes and shows in its <system-out> and its name),
    one passing testcase per check that ran and found nothing, a <skipped/> testcase per check
    that could not run (or was skipped), and an <error> for a node that could not be checked.
    Always valid XML: control bytes and ANSI escapes are shown escaped."""
    fail_on = report["fail_on"]
    suites = []
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    run_failures = report.get("run_failures") or []
    if run_failures:
        cases = ["    <testcase classname=\"run\" name=%s><error message=%s/></testcase>" % (_attr("run %d" % i), _attr(r))
                 for i, r in enumerate(run_failures, 1)]
        suites.append(('  <testsuite name="run" tests="%d" failures="0" errors="%d" skipped="0">\n%s\n  </testsuite>'
                       % (len(cases), len(cases), "\n".join(cases))))
        totals["tests"] += len(cases)
        totals["errors"] += len(cases)
    for name in sorted(report["nodes"]):
        entry = report["nodes"][name]
        cases = []
        counts = {"failures": 0, "errors": 0, "skipped": 0}
        if entry["status"] == NOT_CHECKED:
            counts["errors"] = 1
            cases.append("    <testcase classname=%s name=\"checked\"><error message=%s/></testcase>"
                         % (_attr(name), _attr(entry["reason"] or "not checked")))
        else:
            with_findings = set()
            for item in entry["findings"]:
                case, failed = _finding_case(name, item, fail_on)
                cases.append(case)
                counts["failures"] += 1 if failed else 0
                with_findings.add(item["check"])
            for check in sorted(set(entry["checks_run"]) - with_findings):
                cases.append("    <testcase classname=%s name=%s/>" % (_attr("%s.%s" % (name, check)), _attr(check)))
            for check, why in sorted(entry.get("checks_skipped", {}).items()):
                counts["skipped"] += 1
                cases.append("    <testcase classname=%s name=%s><skipped message=%s/></testcase>"
                             % (_attr("%s.%s" % (name, check)), _attr(check), _attr(why)))
        totals["tests"] += len(cases)
        for key in counts:
            totals[key] += counts[key]
        props = "    <properties><property name=\"status\" value=%s/><property name=\"containerd_version\" value=%s/></properties>" % (
            _attr(entry["status"]), _attr(entry.get("containerd_version") or ""))
        suites.append('  <testsuite name=%s tests="%d" failures="%d" errors="%d" skipped="%d">\n%s\n%s\n  </testsuite>'
                      % (_attr(name), len(cases), counts["failures"], counts["errors"], counts["skipped"], props,
                         "\n".join(cases)))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="gpurt.runtime_gate audit" tests="%d" '
            'failures="%d" errors="%d" skipped="%d">\n%s\n</testsuites>\n'
            % (totals["tests"], totals["failures"], totals["errors"], totals["skipped"], "\n".join(suites)))


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
