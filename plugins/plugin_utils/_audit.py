# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Glue shared by the runtime_check and audit_report action plugins: from task
results and host variables to report entries. Controller only."""

from collections.abc import Mapping

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _report as report


class AuditInputError(ValueError):
    pass


def gathered_from_dump(text, source="dump"):
    """A minimal gathered result for a bare dump text (the seed lab's one-file contract)."""
    try:
        return {"loaded": parse_gathered.summarize_dump(text, source)}
    except parse_gathered.DumpError as exc:
        raise AuditInputError(str(exc))


def node_object(name, nodes):
    """The listed Node object named name, or None."""
    for candidate in nodes or []:
        if candidate.get("name") == name:
            return candidate
    return None


def node_facts(name, nodes=None, labels=None, allocatable=None):
    """(labels, allocatable) for a node: explicit values win, then its Node object."""
    node = node_object(name, nodes)
    if labels is None and node is not None:
        labels = node.get("labels") or {}
    if allocatable is None and node is not None:
        allocatable = node.get("allocatable")
    return labels, allocatable


def node_reported(name, nodes):
    """What the Node object of a node says of its running containerd (its status.runtimeHandlers as the
    kubelet read them, and when the cluster was listed), for restart_pending; None without one."""
    node = node_object(name, nodes)
    if node is None:
        return None
    return {"name": name, "runtime_handlers": node.get("runtime_handlers"), "listed_at": node.get("listed_at")}


def not_checked_reason(result):
    """Why a gather result cannot be judged, or None when it can. A gather that failed
    because containerd refused the config can be judged: that is the config_refused finding."""
    if result is None:
        return "no result: the host did not run the gather task"
    if not isinstance(result, dict):
        return "unexpected gather result"
    if result.get("unreachable"):
        return "unreachable: %s" % (result.get("msg") or "connection failed")
    if result.get("skipped"):
        return "gather skipped: %s" % (result.get("skip_reason") or "condition false")
    if isinstance(result.get("refused"), dict):
        return None
    if result.get("failed"):
        return result.get("msg") or "gather failed"
    if not isinstance(result.get("loaded"), dict):
        # failed_when: false (the audit's gather) keeps a failure's message but not its failed flag
        return result.get("msg") or "gather result has no parsed config"
    return None


def audit_host(name, gathered, runtimeclasses, labels=None, allocatable=None, options=None):
    """A report entry for one host from its gather result (as returned, or packed: parse_gathered.pack())."""
    options = options or {}
    try:
        gathered = parse_gathered.unpack(gathered)
    except ValueError as exc:
        raise AuditInputError("%s: %s" % (name, exc))
    fail_on = options.get("fail_on", "error")
    reason = not_checked_reason(gathered)
    if reason is not None:
        return report.node_entry(name, not_checked_reason=reason, fail_on=fail_on, node_info=node_info(gathered))
    found, ran, skipped = checks.check_node(name, gathered, runtimeclasses, labels, allocatable, options)
    loaded = gathered.get("loaded")
    return report.node_entry(name, found, fail_on=fail_on, checks_run=ran, checks_skipped=skipped,
                             runtimes=loaded.get("runtime_names", []) if isinstance(loaded, dict) else None,
                             node_info=node_info(gathered))


def node_info(gathered):
    """What the report carries about a node besides findings: its containerd and running view."""
    if not isinstance(gathered, dict):
        return {}
    return {"containerd_version": gathered.get("version"), "running": gathered.get("running"),
            "unreachable": bool(gathered.get("unreachable"))}


def add_drift(entries, groups, fail_on="error", skip=None):
    """Entries with the node_drift check judged for every checked node: run where the node
    is compared within a group, skipped (with the reason) where it is not. Each entry is updated
    (report.add_findings), not built again."""
    skip = set(skip or [])
    runtime_sets = dict((e["node"], e["runtimes"]) for e in entries if e.get("runtimes") is not None)
    compared = set()
    for members in groups.values():
        checked = [m for m in members if m in runtime_sets]
        if len(checked) >= 2:
            compared.update(checked)
    drift = [] if "node_drift" in skip else checks.check_drift(groups, runtime_sets)
    for entry in entries:
        name = entry["node"]
        if entry["status"] == report.NOT_CHECKED:
            continue
        ran, skipped = [], {}
        if "node_drift" in skip:
            skipped["node_drift"] = "skip_checks"
        elif name in compared:
            ran.append("node_drift")
        elif entry.get("runtimes") is None:
            skipped["node_drift"] = "no loaded runtimes to compare"
        else:
            skipped["node_drift"] = "not in an inventory group with another checked node"
        report.add_findings(entry, [f for f in drift if f["node"] == name], fail_on, ran, skipped)
    return list(entries)


_PLAIN_SCALARS = (int, float, bool, type(None))
_TEMPLATE_MARKS = ("{{", "{%", "{#")


def plain_data(value):
    """True when value is only dicts, lists and JSON scalars, and no string in it could be a
    template: what templating would return unchanged. A task result ansible stored as the module
    returned it is that; not one with ansible's own objects in it (ansible-core 2.19 keeps a warning
    as a WarningSummary, which templating turns into data), nor a variable written with templates."""
    stack = [value]
    seen = set()  # a container met twice (data from JSON never shares one) could be a cycle
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "{" in item and any(mark in item for mark in _TEMPLATE_MARKS):
                return False
        elif isinstance(item, (dict, list)):
            if id(item) in seen:
                return False
            seen.add(id(item))
            if isinstance(item, list):
                stack.extend(item)
            elif all(isinstance(key, str) for key in item):
                stack.extend(item.values())
            else:
                return False
        elif not isinstance(item, _PLAIN_SCALARS):
            return False
    return True


def host_vars(hostvars, host, names, raw=None):
    """Several variables of one host (ansible's hostvars), None for one that is unset or null.

    A variable is taken as the host sets it when it is plain_data() (templating would return it unchanged,
    after walking all of it: on ansible-core 2.19, most of the judge's time at N=200), else templated in the
    host's context. The host's variables are computed again only when one needs templating. raw: the host's
    untemplated variables when the caller has them already (hostvars.raw_get computes them all)."""
    if raw is None:
        raw = hostvars.raw_get(host) if host in hostvars else None
    if not isinstance(raw, Mapping):
        return dict((name, None) for name in names)
    out = {}
    templated = None
    for name in names:
        value = raw.get(name)
        if value is not None and not plain_data(value):
            if templated is None:
                templated = hostvars[host]  # computes the host's variables again: only when needed
            value = templated.get(name)
        out[name] = value
    return out


def host_result_item(hostvars, host, name, *keys):
    """hostvars[host][name][keys...] of a task result the host registered, None where it is missing. Only
    that item is walked (and templated, when it is not plain_data()): a run_once task registers its whole
    result on every host of its batch, so walking all of it for each host costs O(hosts^2)."""
    def item(value):
        for key in keys:
            if not isinstance(value, Mapping):
                return None
            value = value.get(key)
        return value
    raw = hostvars.raw_get(host) if host in hostvars else None
    value = item(raw.get(name)) if isinstance(raw, Mapping) else None
    if value is None or plain_data(value):
        return value
    return item(hostvars[host].get(name))


def node_names(nodes):
    """The names of listed Node objects, or None when the cluster's Nodes were not listed."""
    return None if nodes is None else [n.get("name") for n in nodes if n.get("name")]


def inventory_coverage(run_nodes, listed, hostvars=None, groups=None):
    """report.coverage() of a run: run_nodes maps each host of the run to its Node name, listed
    the Node names the cluster listed (None: not listed). The inventory's hosts outside the run
    are looked up only when some Node is covered by no host of the run."""
    if listed is not None and set(listed) - set(run_nodes.values()):
        outside = [h for h in (groups or {}).get("all", []) if h not in run_nodes]
        inventory = [host_vars(hostvars or {}, h, ("gpurt_node_name",))["gpurt_node_name"] or h for h in outside]
    else:
        inventory = []
    return report.coverage(run_nodes, listed, inventory)


def runtimeclass_coverage(runtimeclasses, entries, cluster_nodes, run_labels=None):
    """Each RuntimeClass against the Nodes its pods can land on (_runtimeclass_gate.gate): the Nodes of
    the run by their loaded config, every other listed Node by its status.runtimeHandlers.
    {class name: {handler, status, serving, lacking, unknown, safe, message}}; status: served (a Node it
    selects loads the handler), not served (none does, and every Node it selects is known), unknown
    (none is known to, some are unknown, or the cluster's Nodes were not listed). run_labels: {Node
    name: labels} the hosts of the run were judged with (gpurt_node_labels); else the Node's."""
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _runtimeclass_gate as rc_gate
    run_labels = run_labels or {}
    run_nodes = {}
    for entry in entries:
        name = entry.get("node_name") or entry["node"]
        run_nodes[name] = {"labels": run_labels.get(name), "runtimes": entry.get("runtimes"),
                           "why_not_checked": entry.get("reason")}
    desired = [dict(rc, node_selector=rc.get("node_selector") or {}) for rc in runtimeclasses or []]
    out = {}
    for result in rc_gate.gate(desired, run_nodes, cluster_nodes):
        lacking = set(result["lacking"])
        serving = [n for n in result["selected"] if n in result["evidence"] and n not in lacking]
        if serving:
            status = "served"
        elif result["unknown"] or result["cluster_unknown"]:
            status = "unknown"
        else:
            status = "not served"
        out[result["name"]] = {"handler": result["handler"], "status": status, "serving": serving,
                               "lacking": result["lacking"], "unknown": result["unknown"], "safe": result["safe"],
                               "message": result["message"]}
    return out


def runtimeclass_notes(classes):
    """A line for each RuntimeClass no Node of the fleet is known to serve."""
    return ["RuntimeClass %s (handler %s): %s: %s" % (name, item["handler"], item["status"].upper(), item["message"])
            for name, item in sorted((classes or {}).items()) if item["status"] != "served"]
