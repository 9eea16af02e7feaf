# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the read-only list modules (runtimeclass_info, node_info) share: their options, and
listing from manifests or the cluster into normalized objects with failed results, never
tracebacks."""

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


def _collect(module, result, kind, resource, keep, list_kwargs, secrets):
    params = module.params
    if params["src"]:
        result["source"] = params["src"]
        return [(obj, source) for obj, source in runtimeclasses.load_manifests(params["src"], kind)
                if keep is None or keep(obj)]
    result["source"] = "cluster"
    if not kube.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes") + " (or set src to read manifests)", **result)
    with kube.session_from_params(params) as session:
        secrets.append(session.secrets)
        result["server"] = session.server
        try:
            items = session.list_all(resource, **list_kwargs)
        finally:
            result.update(session.counts())
    return [(item, "cluster") for item in items]


def list_normalized(module, result, kind, resource, keep=None, **list_kwargs):
    """Normalized objects of kind from O(src) (those keep() accepts) or the cluster; fails the
    module on any error, and on invalid objects unless on_invalid=warn."""
    secrets = [kube.known_secrets(module.params)]
    try:
        pairs = _collect(module, result, kind, resource, keep, list_kwargs, secrets)
    except (kube.KubeError, ValueError) as exc:
        module.fail_json(msg=secrets[-1].scrub(str(exc)), **result)
    except Exception as exc:  # a failed result, never a traceback
        module.fail_json(msg=secrets[-1].scrub("unexpected %s: %s" % (type(exc).__name__, exc)), **result)
    items, problems = runtimeclasses.normalize_objects(pairs, kind)
    result["invalid"] = problems
    if problems and module.params["on_invalid"] == "fail":
        module.fail_json(msg="%d invalid %s object(s) from %s: %s" % (len(problems), kind, result["source"],
                                                                      "; ".join(problems)), **result)
    for problem in problems:
        module.warn("left out: %s" % problem)
    return items
