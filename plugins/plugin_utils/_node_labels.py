# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which handler labels a judged node earns (pure planning; module_utils/_k8s/node_labels writes them).

A handler is verified on a node when the loaded config has it AND the running daemon confirms it:
`crictl info` where the CRI socket answered, else the Node's status.runtimeHandlers (which the kubelet
read from the running containerd). With neither, nothing is verified. A node the run could not check
earns no label, so its labels are removed: a label is a claim the last run proved. The prefix is ours:
every label under it on a judged Node is the run's proof, whoever set it. A problem of one Node (a
handler that cannot form a label name, two hosts claiming it) is that Node's; the others are planned."""

import time

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import label_syntax
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.gate_names import LABEL_PREFIX
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.node_labels import age_seconds, checked_time, ours
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.model import NOT_CHECKED


def label_key(handler):
    """runtime-gate.gpurt.io/<handler>; ValueError when the handler cannot be a label name."""
    if not isinstance(handler, str) or len(handler) > label_syntax.MAX_NAME or not label_syntax.NAME.match(handler):
        raise ValueError("handler %r cannot form the label key %s<handler>: a label name is 1-63 characters of "
                         "letters, digits, '-', '_' and '.', beginning and ending with a letter or digit"
                         % (handler, LABEL_PREFIX))
    return LABEL_PREFIX + handler


def handler_of(key):
    return key[len(LABEL_PREFIX):] if key.startswith(LABEL_PREFIX) else None


def verified_handlers(entry, node):
    """(handlers, source, reason): the handlers the report entry's loaded config has and every running
    view confirms: crictl where it answered, and the Node's status.runtimeHandlers where the kubelet lists
    any (the live signal the event-driven fence acts on: a label it would remove at once is not written).
    source says which views confirmed them; reason why none could be verified (or None)."""
    if not isinstance(entry, dict) or entry.get("status") == NOT_CHECKED or entry.get("runtimes") is None:
        return [], None, "not checked in this run: %s" % ((entry or {}).get("reason") or "no loaded config")
    loaded = set(entry["runtimes"])
    running = entry.get("running") if isinstance(entry.get("running"), dict) else {}
    status = None
    if isinstance(node, dict) and isinstance(node.get("runtime_handlers"), list) and node["runtime_handlers"]:
        status = set(h for h in node["runtime_handlers"] if h)
    if running.get("source") == "crictl" and isinstance(running.get("runtimes"), list):
        confirmed = loaded & set(running["runtimes"])
        if status is None:
            return sorted(confirmed), "crictl", None
        behind = sorted(confirmed - status)
        if behind:
            return sorted(confirmed & status), "crictl and node status; the Node's status does not list %s yet" % (
                ", ".join(behind)), None
        return sorted(confirmed), "crictl and node status", None
    if status is not None:
        return sorted(loaded & status), "node status", None
    return [], None, ("no running view: crictl info did not answer and the Node reports no "
                      "status.runtimeHandlers, so no handler is verified")


def plan(report_nodes, cluster_nodes):
    """The labels each Node of the run earns: [{name, host, hosts, handlers, labels, source, reason, uid,
    current, problems}], one per Node that hosts of the report map to, sorted by name. uid and current
    (its labels under our prefix, check time and who set each, as listed) pin the write to the Node
    judged, with no read before it. problems: why the Node is not labeled as its proof says (a handler
    that cannot form a label key is left out; a Node two hosts map to earns nothing): the run fails on
    them after writing every Node."""
    if cluster_nodes is None:
        raise ValueError("gpurt_label_nodes needs the cluster's Nodes (a kubeconfig, not gpurt_runtimeclasses_src)")
    by_name = dict((n.get("name"), n) for n in cluster_nodes)
    hosts_of = {}
    for host in sorted(report_nodes or {}):
        name = report_nodes[host].get("node_name") or host
        if name in by_name:  # no Node object: nothing to label (the report warns already)
            hosts_of.setdefault(name, []).append(host)
    out = []
    for name in sorted(hosts_of):
        node, hosts = by_name[name], hosts_of[name]
        item = dict(name=name, host=hosts[0], hosts=hosts, handlers=[], labels={}, source=None, reason=None,
                    problems=[])
        if node.get("uid"):
            item.update(uid=node["uid"], current=dict(labels=ours(node.get("labels")),
                                                      checked_at=node.get("labels_checked_at"),
                                                      set_by=node.get("verified_label_managers") or {}))
        if len(hosts) > 1:
            item["reason"] = "hosts %s all map to it" % ", ".join(hosts)
            item["problems"].append("inventory hosts %s all map to this Node (gpurt_node_name): no one host's proof "
                                    "is its proof, so it earns no label; map each host to its own Node"
                                    % " and ".join(hosts))
        else:
            item["handlers"], item["source"], item["reason"] = verified_handlers(report_nodes[hosts[0]], node)
            for handler in item["handlers"]:
                try:
                    item["labels"][label_key(handler)] = "true"
                except ValueError as exc:
                    item["problems"].append("not labeled for a verified runtime: %s" % exc)
        out.append(item)
    return out


def stale(cluster_nodes, max_age, now=None):
    """Lines for the Nodes whose verified labels are older than max_age, or carry labels without a
    check time: those labels claim more than any recent run proved."""
    limit = age_seconds(max_age)
    now = time.time() if now is None else now
    lines = []
    for node in cluster_nodes or []:
        keys = sorted(k for k in (node.get("labels") or {}) if k.startswith(LABEL_PREFIX))
        if not keys:
            continue
        checked = node.get("labels_checked_at")
        at = checked_time(checked)
        if at is None:
            lines.append("%s: verified labels (%s) carry no readable check time (%r)" % (
                node.get("name"), ", ".join(keys), checked))
        elif now - at > limit:
            lines.append("%s: verified labels (%s) were checked at %s, %s ago, older than gpurt_label_max_age %s; "
                         "run the audit with gpurt_label_nodes=true" % (
                             node.get("name"), ", ".join(keys), checked, _human(now - at), max_age))
    return lines


def _human(seconds):
    seconds = int(seconds)
    if seconds >= 86400:
        return "%dd%dh" % (seconds // 86400, seconds % 86400 // 3600)
    if seconds >= 3600:
        return "%dh%dm" % (seconds // 3600, seconds % 3600 // 60)
    return "%dm" % (seconds // 60)


def result_lines(result, plan, check_mode=False):
    """The lines of a whole node_labels result, in one pass: one per Node (result_line), then how many
    Nodes were written and with how many requests."""
    result = result if isinstance(result, dict) else {}
    planned = dict((item["name"], item) for item in plan or [])
    lines = [_line(entry, planned.get(entry["node"], {}), check_mode) for entry in result.get("nodes") or []]
    lines.append("%s %d of %d judged Node(s), %d apiserver request(s)" % (
        "would write" if check_mode else "wrote", result.get("written") or 0, len(plan or []),
        result.get("api_requests") or 0))
    return lines


def result_line(result, plan, check_mode=False):
    """One line per Node of a node_labels result: what its labels became, and why (the plan's source
    or reason, who had set each label removed, what could not be labeled)."""
    item = next((entry for entry in plan or [] if entry["name"] == result["node"]), {})
    return _line(result, item, check_mode)


def _line(result, item, check_mode):
    problems = list(item.get("problems") or [])
    if result["action"] == "no node":
        line = "%s: no Node object (deleted since it was listed), no label written" % result["node"]
    elif result["action"] in ("recreated", "failed"):
        line = "%s: %s" % (result["node"], result.get("problem"))
    else:
        handlers = ", ".join(item.get("handlers") or []) or "none"
        why = ("confirmed by %s" % item["source"]) if item.get("source") else (item.get("reason") or "")
        set_by = result.get("set_by") or {}
        changes = ["+" + handler_of(k) for k in result["added"]] + [
            "-" + handler_of(k) + (" (set by %s)" % ", ".join(set_by[k]) if set_by.get(k) else "")
            for k in result["removed"]]
        line = "%s: verified handlers %s (%s)" % (result["node"], handlers, why)
        if changes:
            line += "; labels %s %s" % ("would be changed:" if check_mode else "changed:", " ".join(changes))
        else:
            line += "; labels unchanged"
            if result["action"] == "refreshed":
                line += ", check time %s" % ("would be refreshed" if check_mode else "refreshed")
    return "; ".join([line] + problems)


def failures(result):
    """The lines that fail the run, from node_labels' registered result (failed or not): each Node not
    labeled as proven (the plan's problems, which the module reports, and its own), why it stopped, or
    why it failed before writing. Empty when every judged Node carries its proof."""
    result = result if isinstance(result, dict) else {}
    lines = list(result.get("problems") or [])
    if result.get("stopped"):
        lines.append("labeling " + result["stopped"])
    elif result.get("msg") and not lines:
        lines.append("labeling failed: %s" % result["msg"])
    return lines
