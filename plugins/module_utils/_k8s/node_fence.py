# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fence: remove a Node's verified handler labels at once, without node access. One JSON patch
pinned to the Node that was judged (a `test` of its uid, and of each label's value), so a Node
re-created under the same name is never written, and a label is removed whoever set it. The check
time annotation is left as it is: a fence proves nothing, so it must not make other labels look fresh."""

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.errors import KubeError
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.gate_names import LABEL_PREFIX

JSON_PATCH = "application/json-patch+json"


def _pointer(key):
    return "/metadata/labels/" + key.replace("~", "~0").replace("/", "~1")


def fence_patch(node, handlers):
    """The JSON patch removing the labels of handlers that node carries, or None when it carries none."""
    metadata = node.get("metadata") or {}
    labels = metadata.get("labels") or {}
    keys = sorted(LABEL_PREFIX + h for h in set(handlers) if (LABEL_PREFIX + h) in labels)
    if not keys:
        return None
    ops = [{"op": "test", "path": "/metadata/uid", "value": metadata.get("uid")}]
    for key in keys:
        ops.append({"op": "test", "path": _pointer(key), "value": labels[key]})
        ops.append({"op": "remove", "path": _pointer(key)})
    return ops


def fence(session, node, handlers, dry_run=False):
    """Remove the labels of handlers from node (the object as listed or watched).
    {node, action, removed, detail}: action 'fenced', 'already' (no such label), 'recreated' (the Node
    under that name is another object now: not written) or 'gone' (deleted)."""
    name = (node.get("metadata") or {}).get("name")
    for attempt in (1, 2):
        ops = fence_patch(node, handlers)
        if ops is None:
            return dict(node=name, action="already", removed=[], detail="carries none of those labels")
        query = [("dryRun", "All")] if dry_run else None
        status, _obj, _attempts = session.request(
            "PATCH", session._object_path("nodes", name), "fencing node %s" % name, "patch", "nodes", query=query,
            body=ops, content_type=JSON_PATCH, accept=(404, 422), name=name)
        if status not in (404, 422):
            removed = [op["path"].rsplit("/", 1)[1].replace("~1", "/").replace("~0", "~") for op in ops
                       if op["op"] == "remove"]
            return dict(node=name, action="fenced", removed=removed, detail="")
        current = session.get("nodes", name)
        if current is None:
            return dict(node=name, action="gone", removed=[], detail="the Node was deleted")
        if (current.get("metadata") or {}).get("uid") != (node.get("metadata") or {}).get("uid"):
            return dict(node=name, action="recreated", removed=[],
                        detail="the Node was re-created under this name since it was judged: not written")
        node = current  # a label changed in between: judge the labels it has now, once more
    raise KubeError("fencing node %s: its labels kept changing while it was fenced" % name)


def argument_spec():
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
    spec = dict(kube.AUTH_ARG_SPEC)
    spec.update(kube.REQUEST_ARG_SPEC)
    spec.update(
        nodes=dict(type="list", elements="str", required=True),
        hosts=dict(type="list", elements="str", default=[]),
        node_names=dict(type="dict", default={}),
    )
    return spec


def live_handlers(node):
    """The named handlers of a Node's status.runtimeHandlers (the kubelet's copy of what the running
    containerd lists), or None when it lists none at all (containerd 1.x, a kubelet older than 1.30):
    no live signal. containerd 2.x lists "" for its default too."""
    entries = (node.get("status") or {}).get("runtimeHandlers")
    if not isinstance(entries, list) or not entries:
        return None
    return frozenset(e.get("name") for e in entries if isinstance(e, dict) and e.get("name"))


def claimed_handlers(node):
    """The handlers a Node's verified labels claim."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    return frozenset(k[len(LABEL_PREFIX):] for k, v in labels.items() if k.startswith(LABEL_PREFIX) and v == "true")


def host_map(hosts, node_names):
    """{node name: [hosts]}: a host maps to the Node of its own name unless node_names (its
    gpurt_node_name) says otherwise, as the audit maps them."""
    out = {}
    for host in hosts or []:
        node = (node_names or {}).get(host)
        out.setdefault(node if isinstance(node, str) and node else host, []).append(host)
    return out


def fence_one(session, name, hosts, check_mode):
    """One Node: fence what its live handlers no longer list; a Node no single host maps to loses every
    verified label (no run can prove them). {node, action, removed, hosts, line}."""
    node = session.get("nodes", name)
    if node is None:
        return dict(node=name, action="gone", removed=[], hosts=[], line="%s: no Node object, nothing to fence" % name)
    live, claimed = live_handlers(node), claimed_handlers(node)
    if len(hosts) == 1:
        lost = sorted(claimed - live) if live is not None else []
        why = "not in its live handlers (%s)" % (", ".join(sorted(live)) or "none") if lost else ""
    else:
        lost = sorted(claimed)
        why = ("no inventory host maps to it, so nothing can re-prove them" if not hosts else
               "hosts %s all map to it, so no one host can prove its labels" % ", ".join(hosts))
    result = fence(session, node, lost, dry_run=check_mode) if lost else dict(action="kept", removed=[], detail="")
    verb = "would be removed" if check_mode else "removed"
    if result["action"] == "fenced":
        line = "%s: labels %s %s: %s" % (name, verb, ", ".join(result["removed"]), why)
    elif result["action"] in ("recreated", "gone"):
        line = "%s: %s" % (name, result["detail"])
    else:
        line = "%s: verified labels kept (%s)" % (name, ", ".join(sorted(claimed)) or "none") if len(hosts) == 1 \
            else "%s: no verified label to remove; %s" % (name, why)
    if len(hosts) != 1:
        line += "; not re-audited"
    return dict(node=name, action=result["action"], removed=result.get("removed", []),
                hosts=hosts if len(hosts) == 1 else [], line=line)


def run(module):
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.module_session import module_session
    result = dict(changed=False, nodes=[], hosts=[], lines=[], api_requests=0)
    mapping = host_map(module.params["hosts"], module.params["node_names"])
    names = []
    for name in module.params["nodes"]:
        if name not in names:
            names.append(name)
    with module_session(module, result) as session:
        for name in names:
            item = fence_one(session, name, mapping.get(name, []), module.check_mode)
            result["nodes"].append(item)
            result["lines"].append(item["line"])
            result["hosts"].extend(item["hosts"])
    result["changed"] = any(item["action"] == "fenced" for item in result["nodes"])
    module.exit_json(**result)
