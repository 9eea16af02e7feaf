# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a Node object says to the gate: the handlers its running containerd lists (the kubelet's copy
in status.runtimeHandlers; none on containerd 1.x), the handlers our labels claim, the check time,
and the changes between two versions of it that call for a re-audit."""

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.gate_names import CHECKED_AT
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.node_labels import checked_time
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.node_fence import claimed_handlers, live_handlers

# status.nodeInfo fields whose change means the node's runtime may have changed under its labels.
NODE_INFO_FIELDS = ("bootID", "containerRuntimeVersion", "kubeletVersion")


class NodeView(object):
    """The parts of a Node the gate reads, from the object as listed or watched."""

    __slots__ = ("name", "uid", "live", "claimed", "checked_at", "node_info", "ready", "obj")

    def __init__(self, obj):
        metadata = obj.get("metadata") or {}
        status = obj.get("status") or {}
        self.obj = obj
        self.name = metadata.get("name")
        self.uid = metadata.get("uid")
        self.live = live_handlers(obj)
        self.claimed = claimed_handlers(obj)
        self.checked_at = (metadata.get("annotations") or {}).get(CHECKED_AT)
        info = status.get("nodeInfo") if isinstance(status.get("nodeInfo"), dict) else {}
        self.node_info = tuple((field, info.get(field)) for field in NODE_INFO_FIELDS)
        self.ready = _ready(status)

    @property
    def lost(self):
        """The handlers our labels claim that the running containerd no longer lists; none without a
        live signal (silence proves nothing, so it never fences)."""
        if self.live is None:
            return frozenset()
        return self.claimed - self.live


def _ready(status):
    for condition in status.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return None


def change_reasons(old, new):
    """Why a Node's change calls for a re-audit: handlers listed again or newly, a changed bootID,
    containerd or kubelet version, Ready again after not Ready. Empty when nothing of that changed."""
    reasons = []
    if new.live is not None:
        added = sorted(new.live - (old.live or frozenset()))
        if added:
            reasons.append("lists handler%s %s" % ("s" if len(added) > 1 else "", ", ".join(added)))
    for (field, before), (_same, after) in zip(old.node_info, new.node_info):
        if before != after and (before or after):
            reasons.append("%s changed (%s -> %s)" % (field, before or "none", after or "none"))
    if new.ready and old.ready is False:
        reasons.append("Ready again")
    return reasons


def checked_seconds(view):
    """The check time as seconds since the epoch, or None when absent or unreadable."""
    return checked_time(view.checked_at)
