# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Glue shared by the runtime_check and audit_report action plugins: from task
results and host variables to report entries. Controller only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import findings as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import loaded_config
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import report

# Checks that need more than the loaded config; they run only when the node reported the data.
_NEEDS = {
    "dead_imports_glob": "imports",
    "orphan_dropin": "files",
    "ignored_plugin_section": "files",
    "file_loaded_drift": "files",
    "config_unreadable": "files",
    "runtime_binary": "paths",
    "cdi_stale_spec": "cdi_specs",
    "cgroup_driver": "kubelet_config",
}
# node_drift compares nodes of a group; handlers_not_reported is of cluster-only mode.
_HOST_CHECKS = tuple(c for c in checks.CHECKS if c not in ("node_drift", "handlers_not_reported"))


class AuditInputError(ValueError):
    pass


def gathered_from_dump(text, source="dump"):
    """A minimal gathered result for a bare dump text (the seed lab's one-file contract)."""
    try:
        return {"loaded": loaded_config.summarize_dump(text, source)}
    except loaded_config.DumpError as exc:
        raise AuditInputError(str(exc))


def node_facts(name, nodes=None, labels=None, allocatable=None):
    """(labels, allocatable) for a node: explicit values win, then its Node object."""
    node = None
    for candidate in nodes or []:
        if candidate.get("name") == name:
            node = candidate
            break
    if labels is None and node is not None:
        labels = node.get("labels") or {}
    if allocatable is None and node is not None:
        allocatable = node.get("allocatable")
    return labels, allocatable


def not_checked_reason(result):
    """Why a gather result cannot be judged, or None when it can."""
    if result is None:
        return "no result: the host did not run the gather task"
    if not isinstance(result, dict):
        return "unexpected gather result"
    if result.get("unreachable"):
        return "unreachable: %s" % (result.get("msg") or "connection failed")
    if result.get("skipped"):
        return "gather skipped: %s" % (result.get("skip_reason") or "condition false")
    if result.get("failed"):
        return result.get("msg") or "gather failed"
    if not isinstance(result.get("loaded"), dict):
        return "gather result has no parsed config"
    return None


def checks_run(gathered, skip, with_allocatable):
    run = []
    for check in _HOST_CHECKS:
        if check in skip:
            continue
        if check in _NEEDS and _NEEDS[check] not in gathered:
            continue
        if check == "overhead_unschedulable" and not with_allocatable:
            continue
        run.append(check)
    return run


def audit_host(name, gathered, runtimeclasses, labels=None, allocatable=None, options=None):
    """A report entry for one host from its gather result."""
    options = options or {}
    fail_on = options.get("fail_on", "error")
    reason = not_checked_reason(gathered)
    if reason is not None:
        return report.node_entry(name, not_checked_reason=reason, fail_on=fail_on)
    skip = set(options.get("skip_checks") or [])
    found = checks.check_node(name, gathered, runtimeclasses, labels, allocatable, options)
    return report.node_entry(name, found, fail_on=fail_on, checks_run=checks_run(gathered, skip, bool(allocatable)),
                             runtimes=gathered["loaded"].get("runtime_names", []))


def add_drift(entries, groups, fail_on="error", skip=None):
    """Entries with cross-node drift findings added for nodes compared within a group."""
    if "node_drift" in set(skip or []):
        return entries
    runtime_sets = dict((e["node"], e["runtimes"]) for e in entries if e.get("runtimes") is not None)
    compared = set()
    for members in groups.values():
        checked = [m for m in members if m in runtime_sets]
        if len(checked) >= 2:
            compared.update(checked)
    drift = checks.check_drift(groups, runtime_sets)
    out = []
    for entry in entries:
        name = entry["node"]
        if name not in compared:
            out.append(entry)
            continue
        mine = [f for f in drift if f["node"] == name]
        out.append(report.node_entry(name, entry["findings"] + mine, fail_on=fail_on,
                                     checks_run=entry["checks_run"] + ["node_drift"], runtimes=entry["runtimes"]))
    return out
