# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runner: every registered check of a mode against one node's context, each run only when
what it needs is there, else skipped with the reason (never counted as passed)."""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks import registry
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.context import Context
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.model import NotRun, sort_findings


def run_checks(ctx, mode="hosts", skip=()):
    """(sorted findings, [ids that ran], {id: why it was skipped}) for one node.

    A check runs only when everything it needs is there; otherwise, or when it raises NotRun,
    it is skipped with the reason, never counted as passed.
    """
    skip = set(skip or [])
    found, ran, skipped = [], [], {}
    for check in registry.REGISTRY:
        if mode not in check.modes:
            continue
        if check.id in skip:
            skipped[check.id] = "skip_checks"
            continue
        why = None
        for need in check.needs:
            why = registry.NEEDS[need](ctx)
            if why:
                break
        if why:
            skipped[check.id] = why
            continue
        try:
            items = check.run(ctx)
        except NotRun as exc:
            skipped[check.id] = str(exc)
            continue
        for item in items:
            if item["check"] != check.id or item["severity"] not in check.severities:
                raise AssertionError("check %s produced a %s finding of %s" % (check.id, item["severity"], item["check"]))
        found += items
        ran.append(check.id)
    return sort_findings(found), ran, skipped


def check_node(node, gathered, runtimeclasses, labels=None, allocatable=None, options=None):
    """Every per-node check against what containerd_config_info gathered: (findings, ran, skipped)."""
    options = options or {}
    ctx = Context(node, gathered, runtimeclasses, labels, allocatable, options)
    return run_checks(ctx, "hosts", options.get("skip_checks"))


def check_reported_node(node, runtimeclasses, pod_requests=None, skip=None):
    """Cluster-only mode: judge a Node object by its status.runtimeHandlers.

    Returns (checked, findings, ran, skipped). A Node that reports no handlers cannot be judged.
    """
    name = node["name"]
    ctx = Context(name, {"node_object": node}, runtimeclasses, node.get("labels") or {}, node.get("allocatable"),
                  {"pod_requests": pod_requests}, handlers=node.get("runtime_handlers"),
                  source="the status.runtimeHandlers of Node %s" % name)
    found, ran, skipped = run_checks(ctx, "cluster", skip)
    return node.get("runtime_handlers") is not None, found, ran, skipped
