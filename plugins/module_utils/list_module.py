# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the read-only list modules (runtimeclass_info, node_info) share: their options, and
listing from manifests or the cluster (several resources through one session) into normalized
objects with failed results, never tracebacks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import kube
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import runtimeclasses


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


def new_result(**extra):
    result = dict(changed=False, source=None, api_requests=0, api_list_calls=0, invalid=[])
    result.update(extra)
    return result


def _collect(module, result, wanted, secrets):
    """{resource: [(obj, source)]} for each wanted listing: from its manifests (src) when it has
    them, else from the cluster, every cluster listing through one session."""
    out = {}
    remote = []
    for want in wanted:
        if want.get("src"):
            keep = want.get("keep")
            out[want["resource"]] = [(obj, source) for obj, source in runtimeclasses.load_manifests(want["src"], want["kind"])
                                     if keep is None or keep(obj)]
        else:
            remote.append(want)
    result["source"] = wanted[0].get("src") or "cluster"
    if not remote:
        return out
    if not kube.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes") + " (or set src to read manifests)", **result)
    with kube.session_from_params(module.params) as session:
        secrets.append(session.secrets)
        result["server"] = session.server
        try:
            for want in remote:
                items = session.list_all(want["resource"], **(want.get("list_kwargs") or {}))
                out[want["resource"]] = [(item, "cluster") for item in items]
        finally:
            result.update(session.counts())
    return out


def list_many(module, result, wanted):
    """{resource: normalized objects} for each wanted listing, a dict with kind, resource, and
    optionally src (manifests instead of the cluster), keep (a filter for manifests; the apiserver
    filters by selector itself) and list_kwargs (label_selector, field_selector). The cluster is
    listed once per resource, in one session. Fails the module on any error, and on invalid
    objects unless on_invalid=warn."""
    secrets = [kube.known_secrets(module.params)]
    try:
        pairs = _collect(module, result, wanted, secrets)
    except (kube.KubeError, ValueError) as exc:
        module.fail_json(msg=secrets[-1].scrub(str(exc)), **result)
    except Exception as exc:  # a failed result, never a traceback
        module.fail_json(msg=secrets[-1].scrub("unexpected %s: %s" % (type(exc).__name__, exc)), **result)
    listed = {}
    problems = []
    for want in wanted:
        items, invalid = runtimeclasses.normalize_objects(pairs[want["resource"]], want["kind"])
        listed[want["resource"]] = items
        problems.extend(invalid)
    result["invalid"] = problems
    if problems and module.params["on_invalid"] == "fail":
        kinds = " or ".join(want["kind"] for want in wanted)
        sources = sorted(set(want.get("src") or "cluster" for want in wanted))
        module.fail_json(msg="%d invalid %s object(s) from %s: %s" % (len(problems), kinds, ", ".join(sources),
                                                                      "; ".join(problems)), **result)
    for problem in problems:
        module.warn("left out: %s" % problem)
    return listed


def list_normalized(module, result, kind, resource, keep=None, **list_kwargs):
    """Normalized objects of kind from O(src) (those keep() accepts) or the cluster (list_many)."""
    return list_many(module, result, [dict(kind=kind, resource=resource, src=module.params["src"], keep=keep,
                                           list_kwargs=list_kwargs)])[resource]
