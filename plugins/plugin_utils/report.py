# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit report: per-node status, a human summary, JSON and JUnit XML.

Output is stable: no timestamps, nodes and findings sorted, so two runs diff cleanly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from xml.sax.saxutils import escape, quoteattr

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import findings as checks

OK = "OK"
FINDINGS = "FINDINGS"
NOT_CHECKED = "NOT CHECKED"
REPORT_FORMAT = 1


def node_entry(name, findings=None, not_checked_reason=None, fail_on="error", checks_run=None, runtimes=None):
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
        "runtimes": sorted(runtimes) if runtimes is not None else None,
    }


def gate_lines(items, failing, not_checked_reason):
    """Why a node fails: MISSING=<handler> lines first, then each failing finding with its fix."""
    lines = checks.missing_lines(items)
    lines += ["[%s] %s: %s (fix: %s)" % (f["severity"], f["check"], f["message"], f["fix"]) for f in failing]
    if not_checked_reason is not None:
        lines.append("NOT CHECKED: %s" % not_checked_reason)
    return lines


def build(entries, fail_on="error", mode="hosts", runtimeclasses=None):
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
    return {
        "format": REPORT_FORMAT,
        "tool": "gpurt.runtime_gate",
        "mode": mode,
        "fail_on": fail_on,
        "summary": summary,
        "runtimeclasses": sorted((rc["name"], rc["handler"]) for rc in (runtimeclasses or [])),
        "nodes": dict((e["node"], e) for e in ordered),
    }


def node_line(entry):
    if entry["status"] == NOT_CHECKED:
        return "%s: NOT CHECKED (%s)" % (entry["node"], entry["reason"])
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
                lines.append("  [%s] %s: %s" % (item["severity"], item["check"], item["message"]))
                lines.append("      fix: %s" % item["fix"])
    s = report["summary"]
    lines.append("checked %d of %d node(s): %d OK, %d with findings, %d not checked; %d failing (fail_on=%s)"
                 % (s["checked"], s["nodes"], s["ok"], s["with_findings"], s["not_checked"], s["failing"], report["fail_on"]))
    return lines


def to_json(report):
    return json.dumps(report, indent=2, sort_keys=True) + "\n"


def to_junit(report):
    """JUnit XML: one testsuite per node, one testcase per check that ran; a finding that
    reaches fail_on is a <failure>, a lesser one goes to <system-out>, and a node that
    could not be checked is an <error>."""
    suites = []
    total_tests = total_failures = total_errors = 0
    for name in sorted(report["nodes"]):
        entry = report["nodes"][name]
        cases = []
        failures = errors = 0
        if entry["status"] == NOT_CHECKED:
            errors = 1
            cases.append('    <testcase classname=%s name="checked"><error message=%s/></testcase>'
                         % (quoteattr(name), quoteattr(entry["reason"] or "not checked")))
        else:
            by_check = {}
            for item in entry["findings"]:
                by_check.setdefault(item["check"], []).append(item)
            for check in sorted(set(entry["checks_run"]) | set(by_check)):
                items = by_check.get(check, [])
                failing = [f for f in items if checks.reaches(f["severity"], report["fail_on"])]
                body = ""
                if failing:
                    failures += 1
                    text = "\n".join("%s: %s\nfix: %s" % (f["subject"], f["message"], f["fix"]) for f in failing)
                    body += "<failure message=%s type=%s>%s</failure>" % (
                        quoteattr(failing[0]["message"]), quoteattr(failing[0]["severity"]), escape(text))
                rest = [f for f in items if f not in failing]
                if rest:
                    body += "<system-out>%s</system-out>" % escape(
                        "\n".join("[%s] %s: %s" % (f["severity"], f["subject"], f["message"]) for f in rest))
                cases.append("    <testcase classname=%s name=%s>%s</testcase>" % (quoteattr(name), quoteattr(check), body))
        total_tests += len(cases)
        total_failures += failures
        total_errors += errors
        suites.append('  <testsuite name=%s tests="%d" failures="%d" errors="%d">\n%s\n  </testsuite>'
                      % (quoteattr(name), len(cases), failures, errors, "\n".join(cases)))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="gpurt.runtime_gate audit" tests="%d" '
            'failures="%d" errors="%d">\n%s\n</testsuites>\n' % (total_tests, total_failures, total_errors, "\n".join(suites)))
