# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report model: one entry per node (status, findings, verdict), the run's summary and outcome,
and its coverage (the hosts of the run against the cluster's Nodes). Stable: no timestamps, nodes
and findings sorted, so two runs diff cleanly. The writers beside it render it."""

import difflib
import json
import os
import re

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._collection import COLLECTION_ROOT


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
# plugins/plugin_utils/_report/model.py: four levels below the collection


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
    if status is not None and status not in OTHER_STATUSES:
        raise ValueError("unknown node status %r" % (status,))
    info = node_info or {}
    entry = {
        "node": name,
        "status": status,
        "reason": not_checked_reason,
        "findings": [],
        "checks_run": [],
        "checks_skipped": {},
        "runtimes": sorted(runtimes) if runtimes is not None else None,
        "containerd_version": info.get("containerd_version"),
        "running": info.get("running"),
        "unreachable": bool(info.get("unreachable")),
    }
    entry.update(extra or {})
    return add_findings(entry, findings or [], fail_on, checks_run or [], checks_skipped or {})


def add_findings(entry, findings, fail_on, checks_run=(), checks_skipped=None):
    """The entry with more findings and checks (node_drift, judged across a group once every node is),
    its status and verdict judged again; the entry itself is updated, never built again."""
    items = checks.sort_findings(entry["findings"] + list(findings))
    status = entry["status"]
    if status not in OTHER_STATUSES:
        status = NOT_CHECKED if entry["reason"] is not None else FINDINGS if items else OK
    failing = [f for f in items if checks.reaches(f["severity"], fail_on)]
    entry.update(
        status=status,
        findings=items,
        counts=dict((s, sum(1 for f in items if f["severity"] == s)) for s in checks.SEVERITIES),
        failing=bool(failing) or status not in (OK, FINDINGS),
        missing=checks.missing_lines(items),
        gate_lines=gate_lines(items, failing, entry["reason"], status=status),
        checks_run=sorted(entry["checks_run"] + list(checks_run)),
    )
    entry["checks_skipped"].update(checks_skipped or {})
    return entry


def gate_lines(items, failing, not_checked_reason, detail_missing=True, status=None, node=None):
    """Why a node fails: MISSING=<handler> lines first, then each failing finding with its fix
    (missing handlers too, with their suggestion, unless detail_missing is false); each line
    prefixed with the node's name when node is given."""
    lines = checks.missing_lines(items)
    if status in OTHER_STATUSES:
        last = ["%s: %s" % (status, checks.one_line(not_checked_reason))]
    elif not_checked_reason is not None:
        last = [checks.not_checked_line(not_checked_reason)]
    else:
        last = []
    if node is not None:
        lines = [checks.on_node(node, line) for line in lines]
        last = [checks.on_node(node, line) for line in last]
    lines += [checks.finding_line(f, with_node=node is not None) for f in failing
              if detail_missing or f["check"] != "missing_handler"]
    return lines + last


# Statuses besides the audit's that a mode can report, counted in its summary.
MODE_STATUSES = {"bootstrap": (NOT_VALIDATED,), "remediation": (REFUSED, FAILED, NOT_PROCESSED)}
NOT_JUDGED_REASON = ("not judged: this report was written when the run started and the run ended before judging "
                     "(bad input, no access to the cluster, a controller that cannot run the collection, ...); "
                     "the run's output says why")
# Names shown in a summary line before "and N more" (the report lists all).
SHOWN_NAMES = 20


def mode_key(status):
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
        summary[mode_key(status)] = sum(1 for e in ordered if e["status"] == status)
    if mode == "remediation":
        # A host whose files were written counts as changed even when a later step (the restart, its proof)
        # failed: the node's files are not what they were.
        summary["changed"] = sum(1 for e in ordered if (e.get("remediation") or {}).get("outcome") == "changed"
                                 or (e.get("remediation") or {}).get("changed"))
        summary["unchanged"] = sum(1 for e in ordered if (e.get("remediation") or {}).get("outcome") == "unchanged")
        # The files those hosts wrote (in check mode, would write), counted even where a later step failed.
        summary["files_written"] = sum(len(rem.get("changed_files") or rem.get("files") or []) for rem in (
            e.get("remediation") or {} for e in ordered) if rem.get("changed"))
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
    return checks.names_text(names, shown)


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
