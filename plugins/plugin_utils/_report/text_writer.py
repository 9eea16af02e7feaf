# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report as text: one line per node, its findings under it, the coverage, the totals; and what
the judging actions return of a report (the summary lines the callback prints among it)."""

import re

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.model import (
    MODE_STATUSES, NOT_CHECKED, OK, OTHER_STATUSES, coverage_warnings, mode_key)


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
    others = "".join(", %d %s" % (s[mode_key(status)], status.lower()) for status in MODE_STATUSES.get(report["mode"], ()))
    line = "%s %d of %d node(s): %d OK, %d with findings, %d not checked%s; %d failing (fail_on=%s)" % (
        verb, s["checked"], s["nodes"], s["ok"], s["with_findings"], s["not_checked"], others, s["failing"],
        report["fail_on"])
    if report["mode"] == "remediation":
        files = s.get("files_written") or 0
        line = "remediation: %d changed%s, %d unchanged; %s" % (
            s["changed"], " (%d file%s %s)" % (files, "" if files == 1 else "s", "would be written" if report.get(
                "check_mode") else "written") if files else "", s["unchanged"], line)
    return line


def _detail_lines(entry, severities, skipped):
    """A node's lines under its own: refusals, its findings of `severities` (all when None),
    grouped by severity (errors first: the entry keeps them sorted so), each once with its fix, and
    with `skipped` the checks it skipped and why."""
    lines = ["  refused: %s" % checks.one_line(reason) for reason in (entry.get("remediation") or {}).get("reasons") or []]
    lines.extend("  " + checks.finding_line(item) for item in entry["findings"]
                 if severities is None or item["severity"] in severities)
    if skipped:
        lines.extend("  skipped %s: %s" % (check, checks.one_line(why))
                     for check, why in sorted(entry.get("checks_skipped", {}).items()) if why != "skip_checks")
    return lines


def summary_lines(report, details=True, severities=None, readable=False):
    """One line per node, its findings indented under it (those of `severities`, all when None),
    then what the run says about the cluster's Nodes, its notes, why the run failed, and the totals.
    `readable` (what a person reads of a run): a failing node's line ends with its MISSING handlers,
    the checks skipped are left to -v, and a line says how many findings -v would add."""
    lines = []
    hidden = 0
    for name in sorted(report["nodes"]):
        entry = report["nodes"][name]
        line = node_line(entry)
        if readable and entry.get("missing"):
            line += "; " + " ".join(checks.one_line(m) for m in entry["missing"])
        lines.append(line)
        if details:
            lines.extend(_detail_lines(entry, severities, skipped=not readable or severities is None))
            hidden += sum(1 for item in entry["findings"] if severities is not None and item["severity"] not in severities)
    if hidden:
        lines.append("%d info finding(s) and the checks each node skipped not shown: run with -v to see them" % hidden)
    lines.extend(coverage_warnings(report.get("coverage")))
    lines.extend(checks.one_line(note) for note in report.get("notes", []))
    for reason in report.get("run_failures", []):
        lines.append("FAILED: %s" % checks.one_line(reason))
    lines.append(totals_line(report))
    return lines


# Where a node's own name stood in a finding found alike on many nodes (never printed).
_NODE = "\x00"


def _alike(text, node):
    """text with the node's own name put aside: a finding found alike on many nodes is one finding."""
    return re.sub(r"(?<![\w./-])%s(?![\w./-])" % re.escape(node), _NODE, str(text or ""))


def _grouped(rows):
    """rows: (node, key, text) -> [(key, text, nodes)]: each distinct text once, with the nodes it applies to
    (the node's own name in it put aside), in the order first seen."""
    groups = {}
    for node, key, text in rows:
        groups.setdefault((key, _alike(text, node)), []).append(node)
    return [(key, text.replace(_NODE, nodes[0]) if len(nodes) == 1
             else text.replace("Node " + _NODE, "each Node").replace(_NODE, "each node"), nodes)
            for (key, text), nodes in groups.items()]


def distinct_lines(report, severities=None, skipped=False, refusals=True):
    """Each distinct refusal (unless not `refusals`: the refused nodes' own lines say them), finding (of
    `severities`, all when None; errors first) and, with `skipped`, skipped check once, with the nodes it applies
    to: a count and a few names, the rest in the reports."""
    entries = [report["nodes"][name] for name in sorted(report["nodes"])]
    lines = ["refused %s: %s" % (checks.on_nodes(nodes), checks.one_line(text)) for _key, text, nodes in _grouped(
        (e["node"], None, reason) for e in entries if refusals
        for reason in (e.get("remediation") or {}).get("reasons") or [])]
    rank = dict((s, i) for i, s in enumerate(checks.SEVERITIES))
    items = sorted(((e["node"], item) for e in entries for item in e["findings"]
                    if severities is None or item["severity"] in severities),
                   key=lambda pair: (rank[pair[1]["severity"]], pair[1]["check"]))
    found = _grouped((node, (item["severity"], item["check"]), "%s\x01%s\x01%s" % (
        item["message"], item["fix"], item["subject"])) for node, item in items)
    for (severity, check), text, nodes in found:
        message, fix = text.split("\x01")[:2]
        lines.append(checks.finding_line({"severity": severity, "check": check, "message": message, "fix": fix},
                                         nodes=nodes))
    if skipped:
        lines.extend("skipped %s %s: %s" % (check, checks.on_nodes(nodes), checks.one_line(why))
                     for check, why, nodes in _grouped(
                         (e["node"], check, why) for e in entries
                         for check, why in sorted(e.get("checks_skipped", {}).items()) if why != "skip_checks"))
    return lines


def readable_node_line(entry):
    """A node's line as a person reads it: its verdict, then its MISSING handlers."""
    line = node_line(entry)
    if entry.get("missing"):
        line += "; " + " ".join(checks.one_line(m) for m in entry["missing"])
    return line


def readable_lines(report, verbose=False, own_lines=False):
    """What a person reads of a run, at any fleet size: one line per node (with its MISSING handlers),
    then each distinct error and warning once with the nodes it applies to (info and the skipped checks
    too when verbose), then the coverage, notes and totals. own_lines: the failing nodes' lines are
    printed elsewhere (each node's failed task): the findings name a few of them and the totals count them."""
    lines = [readable_node_line(entry) for entry in (report["nodes"][name] for name in sorted(report["nodes"]))
             if not (own_lines and entry["failing"] and not entry["unreachable"])]
    severities = None if verbose else ("error", "warning")
    # A refused node fails: with own_lines its line, which holds its reasons, is printed elsewhere.
    lines.extend(distinct_lines(report, severities, skipped=verbose, refusals=not own_lines))
    hidden = 0 if verbose else sum(1 for e in report["nodes"].values() for item in e["findings"]
                                   if item["severity"] not in severities)
    if hidden:
        lines.append("%d info finding(s) and the checks each node skipped not shown: run with -v to see them" % hidden)
    lines.extend(coverage_warnings(report.get("coverage")))
    lines.extend(checks.one_line(note) for note in report.get("notes", []))
    lines.extend("FAILED: %s" % checks.one_line(reason) for reason in report.get("run_failures", []))
    lines.append(totals_line(report))
    return lines


def result_of(built, written, details=False, verbose=False, own_lines=False):
    """What the actions that judge a run return of its report (the summary lines for the callback too);
    verbose (-v) adds the info findings and the skipped checks to readable_lines. own_lines: the playbook
    fails each failing node with its own line (node_lines), so readable_lines only counts and names them,
    and the callback prints readable_lines (the playbook's Summary task prints them when it is not enabled)."""
    lines = summary_lines(built, details=details)
    readable = readable_lines(built, verbose, own_lines)
    out = {
        "changed": False,
        "report": built,
        "summary": built["summary"],
        "passed": built["summary"]["passed"],
        "run_failures": built["run_failures"],
        "summary_lines": lines,
        "detail_lines": summary_lines(built),
        "readable_lines": readable,
        "node_lines": dict((name, readable_node_line(entry)) for name, entry in built["nodes"].items()),
        "gpurt_summary_lines": readable if own_lines else lines,
        "failing_nodes": sorted(n for n, e in built["nodes"].items() if e["failing"]),
        "unreachable_nodes": sorted(n for n, e in built["nodes"].items() if e["unreachable"]),
        "written": written,
        "msg": lines[-1],
    }
    warnings = coverage_warnings(built.get("coverage")) if (built.get("coverage") or {}).get("nodes_listed") else []
    if warnings:
        out["warnings"] = warnings
    return out
