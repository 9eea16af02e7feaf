# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verified handler labels on Nodes, written with server-side apply under a field manager of their
own: `runtime-gate.gpurt.io/<handler>: "true"` for each handler a run verified on the Node (loaded and
running), and the time of that check in one annotation. Applying the whole set each time makes the
apiserver drop the labels this manager applied before and no longer applies; every other label, and
ours where another manager set it, is left alone. The plan (which handlers are verified) is made on the
controller (plugin_utils/_node_labels); this file only writes it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.module_session import module_session

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.gate_names import (
    CHECKED_AT, LABEL_FIELD_MANAGER as FIELD_MANAGER, LABEL_PREFIX, TIME_FORMAT)


def argument_spec():
    spec = dict(kube.AUTH_ARG_SPEC)
    spec.update(kube.REQUEST_ARG_SPEC)
    spec.update(
        nodes=dict(type="list", elements="dict", required=True),
        field_manager=dict(type="str", default=FIELD_MANAGER),
    )
    return spec


def ours(labels):
    return dict((k, v) for k, v in (labels or {}).items() if k.startswith(LABEL_PREFIX))


def _wanted(item):
    name = item.get("name")
    labels = item.get("labels")
    if not isinstance(name, str) or not name:
        raise ValueError("nodes[]: every entry needs a name (the Node's)")
    if not isinstance(labels, dict) or any(not str(k).startswith(LABEL_PREFIX) or v != "true"
                                           for k, v in labels.items()):
        raise ValueError("nodes[%s].labels: only %s<handler>: \"true\" labels are written" % (name, LABEL_PREFIX))
    return name, dict(labels)


def label_node(session, name, labels, checked_at, field_manager, check_mode):
    """One Node's result: {node, action, added, removed, kept_by_others}. action: 'labeled' (labels
    changed), 'refreshed' (only the check time), or 'no node' (nothing written: a Node that does not
    exist would be created by an apply)."""
    node = session.get("nodes", name)
    if node is None:
        return dict(node=name, action="no node", added=[], removed=[], kept_by_others=[])
    before = ours((node.get("metadata") or {}).get("labels"))
    body = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": (node.get("metadata") or {}).get("uid"),
                         "labels": labels, "annotations": {CHECKED_AT: checked_at}}}
    after_obj = session.apply("nodes", name, body, field_manager, dry_run=check_mode)
    after = ours((after_obj.get("metadata") or {}).get("labels"))
    added = sorted(k for k in after if k not in before)
    removed = sorted(k for k in before if k not in after)
    return dict(node=name, action="labeled" if added or removed else "refreshed", added=added, removed=removed,
                # ours in name, not in the verified set, still there: another manager set it
                kept_by_others=sorted(k for k in after if k not in labels))


def run(module):
    params = module.params
    result = dict(changed=False, nodes=[], api_requests=0, checked_at=None)
    try:
        wanted = [_wanted(item) for item in params["nodes"]]
    except ValueError as exc:
        module.fail_json(msg=str(exc), **result)
    checked_at = time.strftime(TIME_FORMAT, time.gmtime())
    result["checked_at"] = checked_at
    with module_session(module, result) as session:
        for name, labels in wanted:
            result["nodes"].append(label_node(session, name, labels, checked_at, params["field_manager"],
                                              module.check_mode))
    result["changed"] = any(item["action"] == "labeled" for item in result["nodes"])
    module.exit_json(**result)
