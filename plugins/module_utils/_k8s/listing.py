# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The read-only list modules (runtimeclass_info, node_info): their options, and their listing
from manifests or the cluster (several resources through one session) into normalized objects.
A listing is a plain function of (validated params, warn) that returns the result or raises
ListFailed, so the same code runs inside the module or, on the controller, in its action plugin."""

import time

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import objects as k8s_objects


class ListFailed(Exception):
    """A failed listing: msg, and the result so far (source, server, request counts, invalid)."""

    def __init__(self, msg, result):
        super(ListFailed, self).__init__(msg)
        self.msg = msg
        self.result = result


def argument_spec(**extra):
    spec = dict(kube.AUTH_ARG_SPEC)
    spec.update(kube.REQUEST_ARG_SPEC)
    spec.update(kube.LIST_ARG_SPEC)
    spec.update(
        src=dict(type="path"),
        on_invalid=dict(type="str", choices=["fail", "warn"], default="fail"),
    )
    spec.update(extra)
    return spec


RUNTIMECLASS_INFO_SPEC = argument_spec(list_nodes=dict(type="bool", default=False),
                                       on_none=dict(type="str", choices=["fail", "report"], default="fail"))
NODE_INFO_SPEC = argument_spec(names=dict(type="list", elements="str"), label_selector=dict(type="str"))


def new_result(**extra):
    result = dict(changed=False, source=None, api_requests=0, api_list_calls=0, invalid=[])
    result.update(extra)
    return result


def _collect(params, result, wanted, secrets):
    """{resource: [(obj, source)]} for each wanted listing: from its manifests (src) when it has
    them, else from the cluster, every cluster listing through one session."""
    out = {}
    remote = []
    for want in wanted:
        if want.get("src"):
            keep = want.get("keep")
            try:
                loaded = k8s_objects.load_manifests(want["src"], want["kind"])
            except k8s_objects.NoObjects as exc:
                if not want.get("report_none"):
                    raise
                # on_none=report: the run that needed them says why it fails, once (none_reason)
                loaded, result["none_reason"] = [], str(exc)
            out[want["resource"]] = [(obj, source) for obj, source in loaded if keep is None or keep(obj)]
        else:
            remote.append(want)
    result["source"] = wanted[0].get("src") or "cluster"
    if not remote:
        return out
    if not kube.HAS_KUBERNETES:
        raise ListFailed(missing_required_lib("kubernetes") + " (or set src to read manifests)", result)
    with kube.session_from_params(params) as session:
        secrets.append(session.secrets)
        result["server"] = session.server
        try:
            for want in remote:
                items = session.list_all(want["resource"], **(want.get("list_kwargs") or {}))
                out[want["resource"]] = [(item, "cluster") for item in items]
        finally:
            result.update(session.counts())
    return out


def list_many(params, result, wanted, warn):
    """{resource: normalized objects} for each wanted listing, a dict with kind, resource, and
    optionally src (manifests instead of the cluster), keep (a filter for manifests; the apiserver
    filters by selector itself) and list_kwargs (label_selector, field_selector). The cluster is
    listed once per resource, in one session. Raises ListFailed on any error, and on invalid
    objects unless on_invalid=warn."""
    secrets = [kube.known_secrets(params)]
    try:
        pairs = _collect(params, result, wanted, secrets)
    except ListFailed:
        raise
    except (kube.KubeError, ValueError) as exc:
        raise ListFailed(secrets[-1].scrub(str(exc)), result)
    except Exception as exc:  # a failed result, never a traceback
        raise ListFailed(secrets[-1].scrub("unexpected %s: %s" % (type(exc).__name__, exc)), result)
    listed = {}
    problems = []
    listed_at = time.time()
    for want in wanted:
        items, invalid = k8s_objects.normalize_objects(pairs[want["resource"]], want["kind"])
        if want["kind"] == "Node":
            # When the status was read: a running view older than the daemon's start is not that daemon's.
            for item in items:
                item["listed_at"] = None if want.get("src") else listed_at
        listed[want["resource"]] = items
        problems.extend(invalid)
    result["invalid"] = problems
    if problems and params["on_invalid"] == "fail":
        kinds = " or ".join(want["kind"] for want in wanted)
        sources = sorted(set(want.get("src") or "cluster" for want in wanted))
        raise ListFailed("%d invalid %s object(s) from %s: %s" % (len(problems), kinds, ", ".join(sources),
                                                                  "; ".join(problems)), result)
    for problem in problems:
        warn("left out: %s" % problem)
    return listed


def runtimeclass_info(params, warn):
    """runtimeclass_info's result: the RuntimeClasses, and with list_nodes the Nodes, in one session."""
    result = new_result()
    wanted = [dict(kind="RuntimeClass", resource="runtimeclasses", src=params["src"],
                   report_none=params["on_none"] == "report")]
    if params["list_nodes"]:
        wanted.append(dict(kind="Node", resource="nodes"))
    listed = list_many(params, result, wanted, warn)
    result["runtimeclasses"] = listed["runtimeclasses"]
    if not result["runtimeclasses"] and params["on_none"] == "report":
        result.setdefault("none_reason", "the cluster has no RuntimeClass" if not params["src"] else
                          "no RuntimeClass in %s" % params["src"])
    if params["list_nodes"]:
        result["nodes"] = listed["nodes"]
    return result


def node_info(params, warn):
    """node_info's result: the Nodes matching label_selector, and of those the ones in names."""
    result = new_result(names_not_found=[])
    selector = params["label_selector"]
    wanted = params["names"] or []

    def labelled(obj):
        labels = (obj.get("metadata") or {}).get("labels") if isinstance(obj, dict) else None
        return k8s_objects.labels_match(labels, selector)

    # One name: let the apiserver pick the Node instead of sending every Node.
    field_selector = "metadata.name=%s" % wanted[0] if len(wanted) == 1 else None
    items = list_many(params, result, [dict(kind="Node", resource="nodes", src=params["src"], keep=labelled,
                                            list_kwargs=dict(label_selector=selector, field_selector=field_selector))],
                      warn)["nodes"]
    if wanted:
        asked = set(wanted)
        found = set(item["name"] for item in items)
        items = [item for item in items if item["name"] in asked]
        result["names_not_found"] = sorted(asked - found)
        if result["names_not_found"]:
            warn("no Node named %s" % ", ".join(result["names_not_found"]))
    result["nodes"] = items
    return result


# Each list module's options and listing, by module name (its action plugin finds them here).
LISTINGS = {
    "runtimeclass_info": (RUNTIMECLASS_INFO_SPEC, runtimeclass_info),
    "node_info": (NODE_INFO_SPEC, node_info),
}


def run_module(module, listing):
    """Exit or fail module with listing(module.params, module.warn)."""
    try:
        result = listing(module.params, module.warn)
    except ListFailed as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    module.exit_json(**result)
