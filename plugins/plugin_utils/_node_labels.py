# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which handler labels a judged node earns (pure planning; module_utils/_k8s/node_labels writes them).

A handler is verified on a node when the loaded config has it AND the running daemon confirms it:
`crictl info` where the CRI socket answered, else the Node's status.runtimeHandlers (which the kubelet
read from the running containerd). With neither, nothing is verified. A node the run could not check
earns no label, so its labels are removed: a label is a claim the last run proved."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import re
import time

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.gate_names import LABEL_PREFIX, TIME_FORMAT
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.model import NOT_CHECKED

# The name part of a label key (after the prefix): 1-63 characters, alphanumeric at both ends.
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_AGE = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def label_key(handler):
    """runtime-gate.gpurt.io/<handler>; ValueError when the handler cannot be a label name."""
    if not isinstance(handler, str) or len(handler) > 63 or not _LABEL_NAME.match(handler):
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
    """The labels each Node of the run earns: [{name, host, handlers, labels, source, reason}], for
    the hosts of the report that have a Node object. ValueError (before anything is written) naming
    every verified handler that cannot form a label key."""
    if cluster_nodes is None:
        raise ValueError("gpurt_label_nodes needs the cluster's Nodes (a kubeconfig, not gpurt_runtimeclasses_src)")
    by_name = dict((n.get("name"), n) for n in cluster_nodes)
    out, bad = [], []
    for host in sorted(report_nodes or {}):
        entry = report_nodes[host]
        name = entry.get("node_name") or host
        node = by_name.get(name)
        if node is None:
            continue  # no Node object: nothing to label (the report warns already)
        handlers, source, reason = verified_handlers(entry, node)
        labels = {}
        for handler in handlers:
            try:
                labels[label_key(handler)] = "true"
            except ValueError as exc:
                bad.append("%s: %s" % (name, exc))
        out.append(dict(name=name, host=host, handlers=handlers, labels=labels, source=source, reason=reason))
    if bad:
        raise ValueError("no label written: " + "; ".join(bad) + " (rename the runtime, or run without "
                         "gpurt_label_nodes)")
    return out


def age_seconds(value, variable="gpurt_label_max_age"):
    """'24h', '90m', '2d', '3600' or an int: seconds. ValueError naming the variable otherwise."""
    if isinstance(value, bool):
        raise ValueError("%s must be a duration such as 24h, 90m or 2d (got %r)" % (variable, value))
    match = _AGE.match(str(value))
    if not match or int(match.group(1)) <= 0:
        raise ValueError("%s must be a positive duration such as 24h, 90m or 2d (got %r)" % (variable, value))
    return int(match.group(1)) * _UNITS[match.group(2)]


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
        try:
            at = calendar.timegm(time.strptime(checked, TIME_FORMAT)) if checked else None
        except (TypeError, ValueError):
            at = None
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


def result_line(result, plan, check_mode=False):
    """One line per Node of a node_labels result: what its labels became, and why (the plan's source
    or reason)."""
    planned = dict((item["name"], item) for item in plan or [])
    item = planned.get(result["node"], {})
    verb = "would be" if check_mode else ""
    if result["action"] == "no node":
        return "%s: no Node object, no label written" % result["node"]
    handlers = ", ".join(item.get("handlers") or []) or "none"
    why = ("confirmed by %s" % item["source"]) if item.get("source") else (item.get("reason") or "")
    changes = ["+" + handler_of(k) for k in result["added"]] + ["-" + handler_of(k) for k in result["removed"]]
    line = "%s: verified handlers %s (%s)" % (result["node"], handlers, why)
    if changes:
        line += "; labels %s%s %s" % (verb, " changed:" if verb else "changed:", " ".join(changes))
    else:
        line += "; labels unchanged"
    if result.get("kept_by_others"):
        line += "; kept, set by another manager: %s" % ", ".join(result["kept_by_others"])
    return line
