# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The check the apiserver never makes: may this RuntimeClass be written yet?

A RuntimeClass handler is a plain string to the apiserver. Once the class exists, pods ask
for it and are scheduled on any Node its scheduling.nodeSelector matches and whose taints its
tolerations tolerate; a Node that has not loaded the handler fails them at container creation.
So a RuntimeClass is written only when every Node of the cluster it can select is known to have
the handler: the Nodes of this run by their re-audit (the loaded config), every other Node by
the handlers its kubelet reports (status.runtimeHandlers). A Node with neither is unknown, and
blocks the class like a Node that lacks the handler, unless the user forces it.

Pure Python, no kubernetes import.
"""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.context import selector_matches

SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")
# Taints the control plane sets and lifts by itself (not-ready, unreachable, cordoned,
# pressure): the Node comes back, so they do not make a class unable to land there.
TRANSIENT_TAINT_PREFIX = "node.kubernetes.io/"
REAUDIT = "re-audit"
REPORTED = "status.runtimeHandlers"


class GateError(ValueError):
    """The input is not a usable list of RuntimeClasses or of Nodes."""


def _check_desired(desired):
    if not isinstance(desired, (list, tuple)):
        raise GateError("desired RuntimeClasses must be a list, not %s" % type(desired).__name__)
    seen = set()
    for index, entry in enumerate(desired):
        if not isinstance(entry, dict):
            raise GateError("desired RuntimeClass #%d is not a mapping but %s" % (index + 1, type(entry).__name__))
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            raise GateError("desired RuntimeClass #%d has no name" % (index + 1))
        handler = entry.get("handler")
        if not isinstance(handler, str) or not handler:
            raise GateError("desired RuntimeClass %s has no handler" % name)
        if name in seen:
            raise GateError("desired RuntimeClass %s is listed twice" % name)
        selector = entry.get("node_selector")
        if selector is not None and not isinstance(selector, dict):
            raise GateError("desired RuntimeClass %s: node_selector must be a mapping" % name)
        tolerations = entry.get("tolerations")
        if tolerations is not None and (not isinstance(tolerations, list)
                                        or not all(isinstance(item, dict) for item in tolerations)):
            raise GateError("desired RuntimeClass %s: tolerations must be a list of mappings" % name)
        seen.add(name)
    return list(desired)


def _check_run_nodes(run_nodes):
    if run_nodes is None:
        return {}
    if not isinstance(run_nodes, dict):
        raise GateError("run_nodes must be a mapping of Node name to {labels, runtimes, why_not_checked}, not %s"
                        % type(run_nodes).__name__)
    for name, node in run_nodes.items():
        if not isinstance(node, dict):
            raise GateError("run node %s is not a mapping but %s" % (name, type(node).__name__))
        if node.get("labels") is not None and not isinstance(node["labels"], dict):
            raise GateError("run node %s: labels must be a mapping or null" % name)
        if node.get("runtimes") is not None and not isinstance(node["runtimes"], (list, tuple)):
            raise GateError("run node %s: runtimes must be a list or null" % name)
    return run_nodes


def _check_cluster_nodes(cluster_nodes):
    if cluster_nodes is None:
        return None
    if not isinstance(cluster_nodes, (list, tuple)):
        raise GateError("cluster_nodes must be the list node_info returns, not %s" % type(cluster_nodes).__name__)
    out = {}
    for index, node in enumerate(cluster_nodes):
        if not isinstance(node, dict) or not isinstance(node.get("name"), str) or not node["name"]:
            raise GateError("cluster Node #%d has no name" % (index + 1))
        handlers = node.get("runtime_handlers")
        if handlers is not None and not isinstance(handlers, (list, tuple)):
            raise GateError("cluster Node %s: runtime_handlers must be a list or null" % node["name"])
        out[node["name"]] = node
    return out


# ----- taints and tolerations ---------------------------------------------------------

def tolerates(toleration, taint):
    """Whether one toleration tolerates one taint, as the scheduler matches them."""
    effect = toleration.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    operator = toleration.get("operator") or "Equal"
    key = toleration.get("key") or ""
    if not key:
        return operator == "Exists"  # an empty key with Exists tolerates every taint
    if key != taint.get("key"):
        return False
    return operator == "Exists" or str(toleration.get("value") or "") == str(taint.get("value") or "")


def blocking_taints(tolerations, taints):
    """The taints that keep pods with these tolerations off a Node: NoSchedule and NoExecute
    taints no toleration tolerates, except the transient node.kubernetes.io/ ones."""
    out = []
    for taint in taints or []:
        if not isinstance(taint, dict) or taint.get("effect") not in SCHEDULING_EFFECTS:
            continue
        if str(taint.get("key") or "").startswith(TRANSIENT_TAINT_PREFIX):
            continue
        if not any(tolerates(item, taint) for item in tolerations or []):
            out.append(taint)
    return out


def _taint_text(taint):
    value = taint.get("value")
    return "%s%s:%s" % (taint.get("key"), "=%s" % value if value not in (None, "") else "", taint.get("effect"))


# ----- the Nodes ----------------------------------------------------------------------

def nodes_view(run_nodes, cluster_nodes):
    """{Node name: {labels, taints, runtimes, evidence, why_unknown, in_run, in_cluster}} over
    the Nodes of the cluster and the hosts of this run.

    Labels: the run's (gpurt_node_labels) when given, else the Node object's, else None
    (unknown). Runtimes: a Node of this run by its re-audit, and by nothing else (a host that
    failed is unknown, whatever its kubelet reports); any other Node by status.runtimeHandlers.
    """
    run_nodes = _check_run_nodes(run_nodes)
    cluster = _check_cluster_nodes(cluster_nodes) or {}
    view = {}
    for name in sorted(set(run_nodes) | set(cluster)):
        run = run_nodes.get(name)
        node = cluster.get(name)
        labels = (run or {}).get("labels")
        if labels is None and node is not None:
            labels = node.get("labels") or {}
        entry = {"labels": labels, "taints": list((node or {}).get("taints") or []), "in_run": run is not None,
                 "in_cluster": node is not None, "runtimes": None, "evidence": None, "why_unknown": None}
        if run is not None:
            if run.get("runtimes") is not None:
                entry.update(runtimes=sorted(str(item) for item in run["runtimes"]), evidence=REAUDIT)
            else:
                entry["why_unknown"] = run.get("why_not_checked") or "not re-audited in this run"
        elif node.get("runtime_handlers") is not None:
            entry.update(runtimes=sorted(str(item) for item in node["runtime_handlers"]), evidence=REPORTED)
        else:
            entry["why_unknown"] = "not in this run and its kubelet reports no status.runtimeHandlers"
        view[name] = entry
    return view


# ----- the gate -----------------------------------------------------------------------

def _selector_text(selector):
    return ",".join("%s=%s" % (key, value) for key, value in sorted((selector or {}).items())) or "none"


def _head(result):
    return "RuntimeClass %s (handler %s, nodeSelector %s)" % (
        result["name"], result["handler"], _selector_text(result["node_selector"]))


def _blockers(result):
    parts = []
    if result["lacking"]:
        parts.append("lacking handler %s: %s" % (result["handler"], ", ".join(
            "%s (%s: %s)" % (node, result["evidence"][node], ", ".join(result["loaded"][node]) or "none")
            for node in result["lacking"])))
    if result["unknown"]:
        parts.append("unknown: %s" % ", ".join(
            "%s (%s)" % (node, result["why_unknown"][node]) for node in result["unknown"]))
    return parts


def _message(result, total):
    head = _head(result)
    if result["decision"] == "left_alone":
        return "%s: left alone: %s" % (head, result["left_alone_because"])
    if result["cluster_unknown"]:
        why = "the cluster's Nodes were not listed, so the Nodes outside this run are unknown"
    elif not result["selected"]:
        why = ("it selects none of the %d Node(s), so nothing shows the handler is loaded where its pods will land"
               % total)
    else:
        why = None
    if result["safe"]:
        by = {}
        for node in result["selected"]:
            by.setdefault(result["evidence"][node], []).append(node)
        shown = "; ".join("%s by %s" % (", ".join(nodes), evidence) for evidence, nodes in sorted(by.items()))
        return "%s: safe to write: all %d selectable Node(s) have the handler (%s)" % (
            head, len(result["selected"]), shown)
    detail = why or "of %d selectable Node(s), %s" % (len(result["selected"]), "; ".join(_blockers(result)))
    if result["decision"] == "write":
        return "%s: written despite the gate (force): %s" % (head, detail)
    return "%s: not safe to write: %s" % (head, detail)


def _left_alone(entry, live):
    """Why a default entry must not be written, or None: the default list never creates or
    rewrites a RuntimeClass the user did not name."""
    if live is None:
        return "the cluster's RuntimeClasses were not listed, so the default list cannot tell what exists"
    for item in live:
        if item.get("name") == entry["name"]:
            return "RuntimeClass %s exists (handler %s); the default list does not rewrite it" % (
                item["name"], item.get("handler"))
    for item in live:
        if item.get("handler") == entry["handler"]:
            return "RuntimeClass %s already serves handler %s; the default list does not add another" % (
                item.get("name"), entry["handler"])
    return None


def gate(desired, run_nodes=None, cluster_nodes=None, live_runtimeclasses=None, defaults=False, force=False):
    """One result per desired RuntimeClass, in the given order.

    desired: [{name, handler, node_selector, tolerations, ...}]; run_nodes: {Node name:
    {"labels": dict or None, "runtimes": list or None, "why_not_checked": str}} for the hosts
    of this run (runtimes None: not re-audited); cluster_nodes: the Nodes as node_info returns
    them (None: not listed, so every Node outside the run is unknown); live_runtimeclasses: the
    cluster's RuntimeClasses as runtimeclass_info returns them; defaults: desired is the default
    list, whose entries are left alone when the cluster has their name or handler already;
    force: write even when the gate refuses (the result says what it overrode).

    Each result: name, handler, node_selector, selected (Nodes the class can select; unknown
    labels count as selectable), assumed_selectable, tainted_out ({Node: [taints]} it cannot
    land on), lacking, unknown, evidence ({Node: re-audit or status.runtimeHandlers}), loaded
    ({Node: runtimes} of the lacking), why_unknown, safe, decision (write, refused or
    left_alone) and message.
    """
    desired = _check_desired(desired)
    nodes = nodes_view(run_nodes, cluster_nodes)
    cluster_unknown = cluster_nodes is None
    results = []
    for entry in desired:
        selector = dict(entry.get("node_selector") or {})
        tolerations = list(entry.get("tolerations") or [])
        result = {
            "name": entry["name"], "handler": entry["handler"], "node_selector": selector,
            "selected": [], "assumed_selectable": [], "tainted_out": {}, "lacking": [], "unknown": [],
            "evidence": {}, "loaded": {}, "why_unknown": {}, "cluster_unknown": cluster_unknown,
            "left_alone_because": _left_alone(entry, live_runtimeclasses) if defaults else None,
        }
        for node_name, node in sorted(nodes.items()):
            applies, _unused = selector_matches(selector, node["labels"])
            if not applies:
                continue
            taints = blocking_taints(tolerations, node["taints"])
            if taints:
                result["tainted_out"][node_name] = [_taint_text(taint) for taint in taints]
                continue
            result["selected"].append(node_name)
            if selector and node["labels"] is None:
                result["assumed_selectable"].append(node_name)
            if node["runtimes"] is None:
                result["unknown"].append(node_name)
                result["why_unknown"][node_name] = node["why_unknown"]
                continue
            result["evidence"][node_name] = node["evidence"]
            if entry["handler"] not in node["runtimes"]:
                result["lacking"].append(node_name)
                result["loaded"][node_name] = node["runtimes"]
        result["safe"] = (not cluster_unknown and bool(result["selected"]) and not result["lacking"]
                          and not result["unknown"])
        if result["left_alone_because"]:
            result["decision"] = "left_alone"
        else:
            result["decision"] = "write" if result["safe"] or force else "refused"
        result["message"] = _message(result, len(nodes))
        results.append(result)
    return results
