# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report as JUnit XML: a testsuite per node, a testcase per finding, per clean check and per
skipped check, errors and failures for nodes not judged or turned down, and a coverage suite."""

from xml.sax.saxutils import escape, quoteattr

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.model import (
    FAILED, NOT_CHECKED, NOT_PROCESSED, NOT_VALIDATED, REFUSED, coverage_warnings)


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
