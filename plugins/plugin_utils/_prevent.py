# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What playbooks/prevent.yml writes, planned from the cluster as listed (pure; no API call):

- the RuntimeClass gate: each gated RuntimeClass's scheduling.nodeSelector gains our verified label of
  its handler (merged with the selector it has), refused when no Node would then match;
- the admission policy's parameters: per verified handler, the label sets of the Nodes that verified it,
  so the policy can tell whether a RuntimeClass's selector can select a Node that loaded its handler.

The verified labels on the Nodes (written by audit.yml/remediate.yml) are the one source of truth."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.gate_names import LABEL_PREFIX
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._node_labels import handler_of, label_key

ADMISSION_MODES = ("off", "warn", "deny")
# ConfigMap data keys: "handler.<handler>" -> one line per Node that verified it ("k=v,k=v"), and
# "loaded" -> the verified handlers, for the policy's message. Label keys and values hold no ',' '=' or newline.
HANDLER_KEY = "handler."
LOADED_KEY = "loaded"


class PreventError(ValueError):
    pass


def verified_nodes(nodes):
    """{handler: [Node names]} from our labels on the listed Nodes."""
    out = {}
    for node in nodes or []:
        for key, value in (node.get("labels") or {}).items():
            handler = handler_of(key)
            if handler and value == "true" and key != LABEL_PREFIX + "checked-at":
                out.setdefault(handler, []).append(node.get("name"))
    return dict((h, sorted(names)) for h, names in out.items())


def _matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def gate(runtimeclasses, nodes, names=None):
    """One decision per gated RuntimeClass: {name, handler, node_selector (the merged one), added,
    matching, decision ('write', 'unchanged' or 'refused'), message}. names: gpurt_gate_runtimeclasses;
    None gates every class whose handler is verified on at least one Node."""
    by_name = dict((rc["name"], rc) for rc in runtimeclasses or [])
    verified = verified_nodes(nodes)
    if names is None:
        names = sorted(n for n, rc in by_name.items() if rc.get("handler") in verified)
    out = []
    for name in names:
        rc = by_name.get(name)
        if rc is None:
            out.append(dict(name=name, handler=None, node_selector=None, added=None, matching=[], decision="refused",
                            message="%s: no such RuntimeClass in the cluster (gpurt_gate_runtimeclasses)" % name))
            continue
        handler = rc.get("handler")
        selector = dict(rc.get("node_selector") or {})
        try:
            key = label_key(handler)
        except ValueError as exc:
            out.append(dict(name=name, handler=handler, node_selector=selector, added=None, matching=[],
                            decision="refused", message="%s: %s" % (name, exc)))
            continue
        merged = dict(selector, **{key: "true"})
        matching = sorted(n.get("name") for n in nodes or [] if _matches(merged, n.get("labels") or {}))
        entry = dict(name=name, handler=handler, node_selector=merged, added=None if key in selector else key,
                     matching=matching)
        if selector.get(key) not in (None, "true"):
            entry.update(decision="refused", message="%s: its nodeSelector already sets %s=%s; remove it first"
                         % (name, key, selector[key]))
        elif not matching:
            entry.update(decision="refused", message=(
                "%s: no Node would match nodeSelector %s, so every pod of the class would stay Pending; "
                "handler '%s' is verified on %s; run audit.yml with gpurt_label_nodes=true on the nodes that "
                "load it, or leave the class out of gpurt_gate_runtimeclasses" % (
                    name, _selector_text(merged), handler, ", ".join(verified.get(handler, [])) or "no Node")))
        elif key in selector:
            entry.update(decision="unchanged", message="%s: already gated on %s; %d Node(s) match: %s" % (
                name, key, len(matching), ", ".join(matching)))
        else:
            entry.update(decision="write", message="%s: nodeSelector %s; %d Node(s) match: %s" % (
                name, _selector_text(merged), len(matching), ", ".join(matching)))
        out.append(entry)
    return out


def admission_params(nodes):
    """The data of the policy's parameter ConfigMap."""
    data = {}
    verified = verified_nodes(nodes)
    by_name = dict((n.get("name"), n) for n in nodes or [])
    for handler, names in sorted(verified.items()):
        lines = []
        for name in names:
            labels = by_name[name].get("labels") or {}
            lines.append(",".join("%s=%s" % (k, v) for k, v in sorted(labels.items())))
        data[HANDLER_KEY + handler] = "\n".join(sorted(lines))
    data[LOADED_KEY] = ", ".join(sorted(verified))
    return data


def validate_inputs(mode, names):
    """Play-start validation of prevent.yml's own inputs; PreventError naming the variable."""
    if mode not in ADMISSION_MODES:
        raise PreventError("gpurt_admission_mode must be one of %s (got %r)" % (", ".join(ADMISSION_MODES), mode))
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise PreventError("gpurt_gate_runtimeclasses must be a list of RuntimeClass names (got %r)" % (names,))


def _selector_text(selector):
    return "{%s}" % ", ".join("%s=%s" % (k, v) for k, v in sorted(selector.items()))
