# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keeping the admission layer current: the parameter ConfigMap, the ValidatingAdmissionPolicy and its
binding (playbooks/files/), by server-side apply, in that order so the binding never points at
parameters that are not there yet. Before any write, the apiserver must serve the policy API; otherwise
the run fails and writes nothing. Mode off removes the binding and the policy."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.module_session import module_session
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.gate_names import (
    GATE_FIELD_MANAGER, PARAMS_CONFIGMAP, PARAMS_NAMESPACE, POLICY_NAME, VALIDATION_ACTIONS)

GROUP_PATH = "/apis/admissionregistration.k8s.io/v1"
NEEDED = ("validatingadmissionpolicies", "validatingadmissionpolicybindings")
# What a write can change; the rest of metadata is the apiserver's.
_COMPARED = ("spec", "data")


def argument_spec():
    spec = dict(kube.AUTH_ARG_SPEC)
    spec.update(kube.REQUEST_ARG_SPEC)
    spec.update(
        mode=dict(type="str", required=True, choices=["off", "warn", "deny"]),
        policy=dict(type="dict"),
        binding=dict(type="dict"),
        params_data=dict(type="dict", default={}),
        namespace=dict(type="str", default=PARAMS_NAMESPACE),
        field_manager=dict(type="str", default=GATE_FIELD_MANAGER),
    )
    return spec


def policy_api_missing(session):
    """Why the apiserver cannot take the policy (None when it serves both resources)."""
    status, group, _attempts = session.request("GET", GROUP_PATH, "reading the resources of admissionregistration.k8s.io/v1",
                                               "get", "validatingadmissionpolicies", accept=(404,))
    served = set(r.get("name") for r in (group.get("resources") or []) if isinstance(r, dict)) if status == 200 else set()
    missing = [r for r in NEEDED if r not in served]
    if not missing:
        return None
    return ("%s does not serve %s (admissionregistration.k8s.io/v1; ValidatingAdmissionPolicy is GA in Kubernetes "
            "1.30): nothing was written; set gpurt_admission_mode=off, or upgrade the control plane"
            % (session.server, ", ".join(missing)))


def _view(obj):
    return dict((k, obj.get(k)) for k in _COMPARED if obj and k in obj)


def _apply(session, resource, body, field_manager, check_mode, namespace=None):
    name = body["metadata"]["name"]
    before = session.get(resource, name, namespace=namespace)
    after = session.apply(resource, name, body, field_manager, dry_run=check_mode, namespace=namespace)
    return dict(kind=body["kind"], name=name, action="created" if before is None else
                "updated" if _view(before) != _view(after) else "none")


def desired(params):
    """(configmap, policy, binding) bodies; ValueError on a manifest that is not ours."""
    policy, binding = copy.deepcopy(params["policy"]), copy.deepcopy(params["binding"])
    if not policy or policy.get("kind") != "ValidatingAdmissionPolicy":
        raise ValueError("policy must be the ValidatingAdmissionPolicy of playbooks/files/runtime-gate-policy.yaml")
    if not binding or binding.get("kind") != "ValidatingAdmissionPolicyBinding":
        raise ValueError("binding must be the ValidatingAdmissionPolicyBinding of playbooks/files/runtime-gate-policy.yaml")
    spec = binding.setdefault("spec", {})
    spec["validationActions"] = VALIDATION_ACTIONS[params["mode"]]
    spec["paramRef"] = dict(spec.get("paramRef") or {}, name=PARAMS_CONFIGMAP, namespace=params["namespace"],
                            parameterNotFoundAction="Allow")
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": PARAMS_CONFIGMAP, "namespace": params["namespace"]},
                 "data": dict((str(k), str(v)) for k, v in params["params_data"].items())}
    return configmap, policy, binding


def run(module):
    params = module.params
    result = dict(changed=False, objects=[], api_requests=0)
    if params["mode"] != "off":
        try:
            configmap, policy, binding = desired(params)
        except ValueError as exc:
            module.fail_json(msg=str(exc), **result)
    with module_session(module, result) as session:
        why = policy_api_missing(session)
        manager, check = params["field_manager"], module.check_mode
        if params["mode"] == "off":
            if why is None:
                for resource in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
                    gone = session.delete(resource, POLICY_NAME, dry_run=check)
                    result["objects"].append(dict(kind=resource, name=POLICY_NAME, action="deleted" if gone else "none"))
        elif why is not None:
            module.fail_json(msg=why, **result)
        else:
            result["objects"].append(_apply(session, "configmaps", configmap, manager, check, params["namespace"]))
            result["objects"].append(_apply(session, "validatingadmissionpolicies", policy, manager, check))
            result["objects"].append(_apply(session, "validatingadmissionpolicybindings", binding, manager, check))
    result["changed"] = any(item["action"] != "none" for item in result["objects"])
    module.exit_json(**result)
