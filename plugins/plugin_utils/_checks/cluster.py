# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Family: cluster. What the cluster side decides: RuntimeClass overhead against a node's
allocatable, runtimes that differ across an inventory group, Nodes that report no handlers."""

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _quantity as quantity
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.handlers import KNOWN_HANDLERS, edit_distance
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.model import (
    SHOWN_NODES, finding, names_text, sort_findings)
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.registry import check, declare, fixed_by, need, not_fixed


# --- overhead -------------------------------------------------------------------------------

@check("overhead_unschedulable", ("error", "warning"), "error; warning for a quantity that cannot be compared",
       "RuntimeClass `overhead.podFixed` + the pod request exceeds allocatable, with the arithmetic "
       "(`900m + 250m > 1000m`)",
       ("allocatable",),
       not_fixed("a RuntimeClass's overhead is the cluster's: remediate.yml writes it only as "
                 "`gpurt_runtimeclasses_desired` says"),
       modes=("hosts", "cluster"))
def check_overhead(ctx):
    """overhead_unschedulable: pod request + RuntimeClass podFixed against node allocatable."""
    out = []
    allocatable = ctx.allocatable
    requests = ctx.options.get("pod_requests") or {}
    for runtimeclass, _why in ctx.applicable:
        pod_fixed = ((runtimeclass.get("overhead") or {}).get("podFixed") or {})
        for resource in sorted(pod_fixed):
            if resource not in allocatable:
                continue
            try:
                extra = quantity.parse(pod_fixed[resource])
                request = quantity.parse(requests.get(resource, 0))
                capacity = quantity.parse(allocatable[resource])
                arithmetic = "%s + %s > %s" % (quantity.show(resource, request), quantity.show(resource, extra),
                                               quantity.show(resource, capacity))
            except ValueError as exc:
                out.append(finding(
                    ctx.node, "overhead_unschedulable", "warning", "%s:%s" % (runtimeclass["name"], resource),
                    "cannot compare %s of RuntimeClass %s: %s" % (resource, runtimeclass["name"], exc),
                    "fix the quantity", {"runtimeclass": runtimeclass["name"], "resource": resource},
                ))
                continue
            if request + extra <= capacity:
                continue
            out.append(finding(
                ctx.node, "overhead_unschedulable", "error", "%s:%s" % (runtimeclass["name"], resource),
                "pods of RuntimeClass %s cannot be scheduled here: %s request + overhead %s "
                "(%s allocatable)" % (runtimeclass["name"], resource, arithmetic, resource),
                "lower overhead.podFixed.%s of RuntimeClass %s or the pod request, or keep the "
                "RuntimeClass off this node with scheduling.nodeSelector" % (resource, runtimeclass["name"]),
                {"runtimeclass": runtimeclass["name"], "resource": resource, "arithmetic": arithmetic,
                 "pod_request": str(requests.get(resource, 0)), "overhead": str(pod_fixed[resource]),
                 "allocatable": str(allocatable[resource])},
            ))
    return out


# --- node_drift: across an inventory group ----------------------------------------------------

declare(
    "node_drift", ("warning",), "warning",
    "a node lacks a runtime that another node of its inventory group loads; a loaded name that is a likely typo "
    "of another one the group loads (`nvida` beside `nvidia`) is reported on the nodes that load it, never as "
    "a runtime the others lack",
    (),
    fixed_by("the role registers the same runtimes on every node it runs on, so a run over the whole group "
             "converges it"),
    modes=("group",))


def likely_typos(members, runtime_sets):
    """{typo: intended} among the runtimes a group loads: two names at most two edits apart, one of
    them a real runtime's name (nvidia) and the other not (nvida), or else the one fewer members
    load. A typo is reported as such on the nodes that load it, not as a runtime the others lack."""
    count = {}
    for member in members:
        for name in runtime_sets[member]:
            count[name] = count.get(name, 0) + 1
    out = {}
    for a in sorted(count):
        for b in sorted(count):
            if a >= b or not a or not b or edit_distance(a, b) > 2 or min(len(a), len(b)) < 4:
                continue
            if (a in KNOWN_HANDLERS) != (b in KNOWN_HANDLERS):
                typo, intended = (b, a) if a in KNOWN_HANDLERS else (a, b)
            elif a in KNOWN_HANDLERS or count[a] == count[b]:
                continue  # nvidia and nvidia-cdi are two runtimes; a tie names no typo
            else:
                typo, intended = (a, b) if count[a] < count[b] else (b, a)
            out.setdefault(typo, intended)
    return out


def _peers(nodes):
    """The nodes of a group that load a runtime, as a drift message names them: a count and a few names,
    the same text on every node that lacks it (the evidence lists all)."""
    if len(nodes) <= SHOWN_NODES:
        return ", ".join(nodes)
    return "%d nodes: %s" % (len(nodes), names_text(nodes, SHOWN_NODES))


def check_drift(groups, runtime_sets):
    """node_drift: within each group, nodes lacking a runtime that another member loads.

    Judged against the union rather than the majority: after a half-failed rollout the
    broken nodes can be the majority, and the node that has the runtime is the right one.
    A runtime that is a likely typo of another one the group loads (nvida beside nvidia) is
    reported on the nodes that load it, never as a runtime the other nodes lack.
    groups: {group: [node, ...]}; runtime_sets: {node: [runtime names]} for checked nodes.
    """
    out = []
    for group in sorted(groups):
        members = sorted(n for n in groups[group] if n in runtime_sets)
        if len(members) < 2:
            continue
        typos = likely_typos(members, runtime_sets)
        union = set()
        for member in members:
            union.update(runtime_sets[member])
        union -= set(typos)
        for member in members:
            have = set(runtime_sets[member])
            lacks = sorted(union - have)
            misspelt = sorted(n for n in have if n in typos)
            if not lacks and not misspelt:
                continue
            loaded_by = dict((name, [m for m in members if name in runtime_sets[m]]) for name in lacks)
            parts = []
            if misspelt:
                parts.append("loads %s, likely a typo of %s" % (
                    ", ".join(misspelt), ", ".join("%s (loaded by %s)" % (typos[n], _peers(
                        [m for m in members if typos[n] in runtime_sets[m]]) or "no other node") for n in misspelt)))
            if lacks:
                parts.append("lacks runtime(s) %s that other nodes of group %s load (%s)" % (
                    ", ".join(lacks), group,
                    "; ".join("%s on %s" % (name, _peers(nodes)) for name, nodes in sorted(loaded_by.items()))))
            fix = "converge the group with the gpurt.runtime_gate.containerd_runtime role"
            if misspelt:
                fix = "rename %s in the node's containerd config, then %s" % (
                    ", ".join("'%s' to '%s'" % (n, typos[n]) for n in misspelt), fix)
            out.append(finding(
                member, "node_drift", "warning", group, "; ".join(parts), fix,
                {"group": group, "runtimes": sorted(have), "lacks": lacks, "loaded_by": loaded_by,
                 "likely_typos": dict((n, typos[n]) for n in misspelt)},
            ))
    return sort_findings(out)


# --- cluster-only mode ---------------------------------------------------------------------------

@check("handlers_not_reported", ("warning",), "warning",
       "cluster-only mode: the Node has no `status.runtimeHandlers` (it is NOT CHECKED)",
       ("node_object",),
       not_fixed("nothing on the node to fix: audit it with host access (playbooks/audit.yml)"),
       modes=("cluster",))
def check_handlers_reported(ctx):
    if ctx.handlers is not None:
        return []
    node = ctx.gathered.get("node_object") or {}
    return [finding(
        ctx.node, "handlers_not_reported", "warning", ctx.node,
        "Node %s does not report status.runtimeHandlers (Kubernetes 1.30+ with containerd 2.x "
        "report them); its handlers cannot be checked from the cluster" % ctx.node,
        "audit it with host access (playbooks/audit.yml) or upgrade kubelet/containerd",
        {"kubelet_version": node.get("kubelet_version"), "container_runtime_version": node.get("container_runtime_version")},
    )]


@need("allocatable")
def need_allocatable(ctx):
    return None if ctx.allocatable else "node allocatable unknown (no Node object, no gpurt_node_allocatable)"


@need("node_object")
def need_node_object(ctx):
    return None if "node_object" in ctx.gathered else "not a Node object"
