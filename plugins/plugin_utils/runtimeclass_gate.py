# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The check the apiserver never makes: may this RuntimeClass be created yet?

A RuntimeClass handler is a plain string to the apiserver. Once the class exists, pods ask
for it and are scheduled on any node its scheduling.nodeSelector matches; a node that has
not loaded the handler fails them at container creation. So a RuntimeClass is safe to create
only when every node it can select was checked and has the handler loaded.

Pure Python, no kubernetes import.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils.findings import selector_matches


class GateError(ValueError):
    """The input is not a usable list of RuntimeClasses or node map."""


def _check_desired(desired):
    if not isinstance(desired, (list, tuple)):
        raise GateError("desired RuntimeClasses must be a list, not %s" % type(desired).__name__)
    seen = set()
    out = []
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
        seen.add(name)
        out.append(entry)
    return out


def _check_nodes(nodes):
    if not isinstance(nodes, dict):
        raise GateError("nodes must be a mapping of node name to {labels, runtimes}, not %s" % type(nodes).__name__)
    for name, node in nodes.items():
        if not isinstance(node, dict):
            raise GateError("node %s is not a mapping but %s" % (name, type(node).__name__))
        labels = node.get("labels")
        if labels is not None and not isinstance(labels, dict):
            raise GateError("node %s: labels must be a mapping or null" % name)
        runtimes = node.get("runtimes")
        if runtimes is not None and not isinstance(runtimes, (list, tuple)):
            raise GateError("node %s: runtimes must be a list or null" % name)
    return nodes


def _selector_text(selector):
    return ",".join("%s=%s" % (key, value) for key, value in sorted((selector or {}).items())) or "none"


def _message(result, total):
    head = "RuntimeClass %s (handler %s, nodeSelector %s)" % (
        result["name"], result["handler"], _selector_text(result["node_selector"]))
    if not result["selected"]:
        return "%s: not safe to create: it selects none of the %d node(s) checked, so nothing proves the " \
               "handler is loaded where its pods will land" % (head, total)
    parts = []
    if result["lacking"]:
        parts.append("lacking handler %s: %s" % (result["handler"], ", ".join(
            "%s (loaded: %s)" % (node, ", ".join(result["loaded"][node]) or "none") for node in result["lacking"])))
    if result["not_checked"]:
        parts.append("not checked: %s" % ", ".join(
            "%s (%s)" % (node, result["why_not_checked"][node]) for node in result["not_checked"]))
    if parts:
        return "%s: not safe to create: of %d selectable node(s), %s" % (head, len(result["selected"]), "; ".join(parts))
    return "%s: safe to create: all %d selectable node(s) have the handler loaded (%s)" % (
        head, len(result["selected"]), ", ".join(result["selected"]))


def gate(desired, nodes):
    """One result per desired RuntimeClass, in the given order.

    desired: [{name, handler, node_selector, ...}]; nodes: {node: {"labels": dict or None,
    "runtimes": list or None, "why_not_checked": optional str}}. runtimes None means the node
    was not checked (its remediation failed or was skipped).

    Each result: name, handler, node_selector, selected (nodes the class can select; unknown
    labels count as selectable), assumed_selectable (selected only because the labels are
    unknown), lacking (checked, handler not loaded), not_checked, loaded (runtimes of the
    lacking nodes), why_not_checked, safe and message.
    """
    desired = _check_desired(desired)
    nodes = _check_nodes(nodes)
    results = []
    for entry in desired:
        selector = dict(entry.get("node_selector") or {})
        result = {
            "name": entry["name"], "handler": entry["handler"], "node_selector": selector,
            "selected": [], "assumed_selectable": [], "lacking": [], "not_checked": [],
            "loaded": {}, "why_not_checked": {},
        }
        for node_name in sorted(nodes):
            node = nodes[node_name]
            applies, _unused = selector_matches(selector, node.get("labels"))
            if not applies:
                continue
            result["selected"].append(node_name)
            if selector and node.get("labels") is None:
                result["assumed_selectable"].append(node_name)
            runtimes = node.get("runtimes")
            if runtimes is None:
                result["not_checked"].append(node_name)
                result["why_not_checked"][node_name] = node.get("why_not_checked") or "not checked"
            elif entry["handler"] not in runtimes:
                result["lacking"].append(node_name)
                result["loaded"][node_name] = sorted(str(name) for name in runtimes)
        result["safe"] = bool(result["selected"]) and not result["lacking"] and not result["not_checked"]
        result["message"] = _message(result, len(nodes))
        results.append(result)
    return results
