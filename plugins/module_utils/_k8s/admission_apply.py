# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keeping the admission layer current: the parameter ConfigMap, the ValidatingAdmissionPolicy and its
binding (playbooks/files/), by server-side apply, in that order so the binding never points at
parameters that are not there yet.

- Before any write, the apiserver must serve the policy API, and every object is dry-run (a missing
  namespace or a refused verb fails the run with nothing written).
- The three objects are the gate's alone: a field another manager changed is taken back (forced apply),
  and a ConfigMap key the labels do not prove (added by hand) is removed; the result names both, and who
  had set them.
- The ConfigMap carries a revision (a digest of its other keys) that the policy's message quotes.
- After the writes, enforcement is proven: a dry-run create of a RuntimeClass whose handler no Node loads
  must be refused (deny) or warned about (warn) by the policy, quoting the revision just written; otherwise
  the run fails naming the admission plugin that is off, or the apiserver's stale copy of the parameters.
- Mode off removes the binding and the policy."""

import copy
import hashlib
import json
import os
import time

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import label_syntax
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.module_session import module_session
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.gate_names import (
    GATE_FIELD_MANAGER, PARAMS_CONFIGMAP, PARAMS_NAMESPACE, POLICY_NAME, VALIDATION_ACTIONS)
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.runtimeclass_apply import fields_paths

GROUP_PATH = "/apis/admissionregistration.k8s.io/v1"
NEEDED = ("validatingadmissionpolicies", "validatingadmissionpolicybindings")
# What a write can change; the rest of metadata is the apiserver's.
_COMPARED = ("spec", "data")
# The enforcement probe: a RuntimeClass no Node can run, created with dryRun=All only.
PROBE_HANDLER = "gpurt-enforcement-probe"
PROBE_PREFIX = "gpurt-runtime-gate-probe-"
PROBE_INTERVAL = 0.5
# The ConfigMap key of the parameters' revision, which the policy's message quotes as "(parameters REVISION)".
REVISION_KEY = "revision"
# kube-apiserver's admission stops its informer for a built-in paramKind (ConfigMap) once no binding uses it, and
# keeps judging with its last copy until it restarts: mode off (no binding) is enough to cause it.
STALE_PARAMS_BUG = "https://github.com/kubernetes/kubernetes/issues/130887"


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
        enforcement_timeout=dict(type="float", default=30.0),
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


def _mapping(value):
    return value if isinstance(value, dict) else {}


def owners(obj, path):
    """{field path under path: [managers]} from obj's managedFields, every operation."""
    out = {}
    for entry in _mapping(obj).get("metadata", {}).get("managedFields") or []:
        if not isinstance(entry, dict):
            continue
        for found in fields_paths(entry.get("fieldsV1")):
            if found[:len(path)] == path and len(found) > len(path):
                out.setdefault(found[len(path)], set()).add(entry.get("manager") or "(unnamed manager)")
    return dict((k, sorted(v)) for k, v in out.items())


def params_changes(live, wanted, field_manager):
    """(foreign, taken): the ConfigMap keys of live that wanted does not hold, and the keys of wanted whose
    live value another manager set; each as [{key, managers}]."""
    if not live:
        return [], []
    by_key = owners(live, ("data",))
    by_key.update(("binaryData." + k, v) for k, v in owners(live, ("binaryData",)).items())
    data = _mapping(live.get("data"))
    foreign = [dict(key=k, managers=by_key.get(k, [])) for k in sorted(data) if k not in wanted]
    foreign += [dict(key="binaryData." + k, managers=by_key.get("binaryData." + k, []))
                for k in sorted(_mapping(live.get("binaryData")))]
    taken = [dict(key=k, managers=[m for m in by_key.get(k, []) if m != field_manager])
             for k in sorted(wanted) if k in data and data[k] != wanted[k]]
    return foreign, [t for t in taken if t["managers"]]


def _spec_taken(live, wanted, field_manager):
    """The managers other than ours that own a spec field whose live value differs from ours."""
    if not live or _view(live).get("spec") == wanted.get("spec"):
        return []
    managers = set()
    for _key, names in owners(live, ("spec",)).items():
        managers.update(m for m in names if m != field_manager)
    return sorted(managers)


def desired(params):
    """(configmap, policy, binding) bodies; ValueError on a manifest that is not ours or a bad namespace."""
    namespace = params["namespace"]
    if not isinstance(namespace, str) or len(namespace) > 63 or not label_syntax.DNS_LABEL.match(namespace):
        raise ValueError("namespace %r is not a namespace name (a lowercase DNS label: a-z, 0-9 and '-', at most 63 "
                         "characters); set gpurt_admission_namespace" % (namespace,))
    policy, binding = copy.deepcopy(params["policy"]), copy.deepcopy(params["binding"])
    if not policy or policy.get("kind") != "ValidatingAdmissionPolicy":
        raise ValueError("policy must be the ValidatingAdmissionPolicy of playbooks/files/runtime-gate-policy.yaml")
    if not binding or binding.get("kind") != "ValidatingAdmissionPolicyBinding":
        raise ValueError("binding must be the ValidatingAdmissionPolicyBinding of playbooks/files/runtime-gate-policy.yaml")
    spec = binding.setdefault("spec", {})
    spec["validationActions"] = VALIDATION_ACTIONS[params["mode"]]
    spec["paramRef"] = dict(spec.get("paramRef") or {}, name=PARAMS_CONFIGMAP, namespace=namespace,
                            parameterNotFoundAction="Allow")
    data = dict((str(k), str(v)) for k, v in params["params_data"].items() if str(k) != REVISION_KEY)
    data[REVISION_KEY] = revision(data)
    configmap = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": PARAMS_CONFIGMAP, "namespace": namespace}, "data": data}
    return configmap, policy, binding


def revision(data):
    """A digest of the parameters: the same data has the same revision, so an unchanged run writes nothing."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def quoted_revision(text):
    """The revision the policy's message quotes in text ("(parameters REVISION)"), or None."""
    start = text.rfind("(parameters ")
    if start < 0:
        return None
    end = text.find(")", start)
    return text[start + len("(parameters "):end] if end > 0 else None


class _Writer(object):
    """The three objects' reads, dry runs and writes through one session."""

    def __init__(self, session, params, check_mode, result):
        self.session = session
        self.namespace = params["namespace"]
        self.manager = params["field_manager"]
        self.check = check_mode
        self.result = result

    def _apply(self, resource, body, dry_run):
        name = body["metadata"]["name"]
        namespace = self.namespace if resource == "configmaps" else None
        try:
            return self.session.apply(resource, name, body, self.manager, force=True, dry_run=dry_run,
                                      namespace=namespace)
        except kube.KubeError as exc:
            if exc.status == 404 and resource == "configmaps":
                raise self.session.error(
                    "namespace %s (gpurt_admission_namespace) does not exist, so the parameter ConfigMap %s cannot "
                    "be written: nothing was written; create it (kubectl create namespace %s; "
                    "rbac/runtime-gate-prevent.yaml makes gpurt-runtime-gate) or set gpurt_admission_namespace"
                    % (self.namespace, name, self.namespace), status=404, resource=resource)
            if exc.status == 422 and "paramKind: Forbidden" in str(exc):
                raise self.session.error(
                    "%s (the apiserver lets only an identity that may get every ConfigMap create a policy whose "
                    "parameters are ConfigMaps: rbac/runtime-gate-prevent.yaml grants get on configmaps)" % exc,
                    status=422, resource=resource)
            raise

    def run(self, bodies):
        configmap = bodies[0]
        live = [self.session.get("configmaps", PARAMS_CONFIGMAP, namespace=self.namespace),
                self.session.get("validatingadmissionpolicies", POLICY_NAME),
                self.session.get("validatingadmissionpolicybindings", POLICY_NAME)]
        foreign, taken = params_changes(live[0], configmap["data"], self.manager)
        # every object dry-run first: nothing is written unless all of them would be. Not the binding of a policy
        # that does not exist yet: the apiserver judges a binding's paramRef by its policy (without one it asks
        # for get on every resource), so it is dry-run after the policy is written.
        resources = ("configmaps", "validatingadmissionpolicies", "validatingadmissionpolicybindings")
        planned = [(resource, body, self._apply(resource, body, True) if live[1] or index < 2 else None)
                   for index, (resource, body) in enumerate(zip(resources, bodies))]
        if foreign:
            self._remove(foreign, live[0], True)
        for (resource, body, dry), before in zip(planned, live):
            if dry is None:
                dry = self._apply(resource, body, True)
            after = dry if self.check else self._apply(resource, body, False)
            if resource == "configmaps" and foreign:
                if self.check:  # the dry-run apply with the foreign keys gone, as the dry-run removal said
                    after = dict(after, data=dict((k, v) for k, v in _mapping(after.get("data")).items()
                                                  if k in body["data"]))
                    after.pop("binaryData", None)
                else:
                    after = self._remove(foreign, after, False)
            action = "created" if before is None else "updated" if _view(before) != _view(after) else "none"
            self.result["objects"].append(dict(kind=body["kind"], name=body["metadata"]["name"], action=action))
            if resource != "configmaps":
                others = _spec_taken(before, body, self.manager)
                if others:
                    self.result["lines"].append("%s %s: %s the fields %s had changed" % (
                        body["kind"], POLICY_NAME, "would take back" if self.check else "took back", ", ".join(others)))
        verb = "would be" if self.check else "was"
        for item in foreign:
            self.result["params_removed"].append(item)
            self.result["lines"].append("parameter %s %s removed from %s/%s: no verified label proves it (set by %s)"
                                        % (item["key"], verb, self.namespace, PARAMS_CONFIGMAP,
                                           ", ".join(item["managers"]) or "an unknown manager"))
        for item in taken:
            self.result["params_taken_over"].append(item)
            self.result["lines"].append("parameter %s %s taken back from %s: its value is derived from the verified "
                                        "labels only" % (item["key"], verb, ", ".join(item["managers"])))

    def _remove(self, foreign, obj, dry_run):
        """A merge patch removing the foreign keys, pinned to obj's resourceVersion."""
        data = dict((f["key"], None) for f in foreign if not f["key"].startswith("binaryData."))
        binary = dict((f["key"][len("binaryData."):], None) for f in foreign if f["key"].startswith("binaryData."))
        body = {"metadata": {"resourceVersion": _mapping(obj.get("metadata")).get("resourceVersion")}}
        if data:
            body["data"] = data
        if binary:
            body["binaryData"] = binary
        try:
            patched = self.session.merge_patch("configmaps", PARAMS_CONFIGMAP, body, self.manager, dry_run=dry_run,
                                               namespace=self.namespace)
        except kube.KubeError as exc:
            if exc.status == 409:
                raise self.session.error(
                    "the parameter ConfigMap %s/%s changed while this run removed the keys no label proves (%s): "
                    "run again" % (self.namespace, PARAMS_CONFIGMAP, ", ".join(f["key"] for f in foreign)),
                    status=409, resource="configmaps")
            raise
        if patched is None:
            raise self.session.error("the parameter ConfigMap %s/%s was deleted while this run removed the keys no "
                                     "label proves: run again" % (self.namespace, PARAMS_CONFIGMAP),
                                     resource="configmaps")
        return patched


def probe_handler(params_data):
    """A handler no verified Node loads (not a handler.* key of the parameters)."""
    handler, index = PROBE_HANDLER, 0
    while "handler." + handler in params_data:
        index += 1
        handler = "%s-%d" % (PROBE_HANDLER, index)
    return handler


def probe_runtimeclass(handler):
    """A RuntimeClass of handler under a fresh name, sent only as a dry-run create (the enforcement probes)."""
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": PROBE_PREFIX + os.urandom(4).hex()},
            "handler": handler}


def enforced(session, mode, handler, field_manager, written):
    """(True, what the apiserver said) when our policy refused (deny) or warned about (warn) a dry-run create of
    a RuntimeClass with handler, quoting the parameters' revision written; else (False, what it said, the
    revision it quoted when that was another one)."""
    try:
        session.create("runtimeclasses", probe_runtimeclass(handler), field_manager, dry_run=True)
    except kube.KubeError as exc:
        if not (exc.status in (400, 403, 422) and POLICY_NAME in str(exc)):
            raise
        ok, said, text = mode == "deny", "refused: %s" % exc, str(exc)
    else:
        ours = [w for w in session.last_warnings if POLICY_NAME in w]
        if not ours:
            return False, "admitted without a warning", None
        ok, said, text = mode == "warn", "admitted with the warning: %s" % ours[0], ours[0]
    seen = quoted_revision(text)
    if seen != written:
        return False, said, seen or "(none)"
    return ok, said, None


def prove_enforcement(session, mode, params_data, field_manager, timeout, sleep=time.sleep, clock=time.monotonic):
    """None when the policy is enforced with the parameters written (params_data) within timeout (both reach
    admission through informers); else why not."""
    handler = probe_handler(params_data)
    written = params_data.get(REVISION_KEY)
    started = clock()
    while True:
        ok, said, seen = enforced(session, mode, handler, field_manager, written)
        if ok:
            return None
        if clock() - started >= timeout:
            break
        sleep(PROBE_INTERVAL)
    waited = ("%.1f" % timeout).rstrip("0").rstrip(".")
    if seen is not None:
        return ("the policy %s is enforced with parameters this run did not write: for %s s a dry-run create of a "
                "RuntimeClass with handler '%s' was judged with revision %s of the parameters, and this run wrote "
                "revision %s to %s. kube-apiserver keeps a stale copy of a ConfigMap parameter once its informer "
                "stopped, which happens when no binding used it for a moment (gpurt_admission_mode=off, or the "
                "binding deleted; %s): restart kube-apiserver, then run prevent.yml again"
                % (POLICY_NAME, waited, handler, seen, written, PARAMS_CONFIGMAP, STALE_PARAMS_BUG))
    expected = "refused" if mode == "deny" else "admitted with a warning"
    return ("the policy %s is written but not enforced: a dry-run create of a RuntimeClass with handler '%s', which "
            "no Node loads, was %s for %s s, not %s. The apiserver's ValidatingAdmissionPolicy admission plugin is "
            "off: enable it (kube-apiserver --enable-admission-plugins=...,ValidatingAdmissionPolicy, and not in "
            "--disable-admission-plugins), or set gpurt_admission_mode=off"
            % (POLICY_NAME, handler, said, waited, expected))


def run(module):
    params = module.params
    result = dict(changed=False, objects=[], api_requests=0, lines=[], params_removed=[], params_taken_over=[],
                  enforcement=None)
    if not params["enforcement_timeout"] >= 0:
        module.fail_json(msg="enforcement_timeout (prevent.yml: gpurt_admission_enforcement_timeout) must be a number of "
                             "seconds, 0 or more (got %r)" % (params["enforcement_timeout"],), **result)
    if params["mode"] != "off":
        try:
            bodies = desired(params)
        except ValueError as exc:
            module.fail_json(msg=str(exc), **result)
    with module_session(module, result) as session:
        why = policy_api_missing(session)
        manager, check = params["field_manager"], module.check_mode
        if params["mode"] == "off":
            if why is None:
                deleted = {}
                for resource in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
                    deleted[resource] = session.delete(resource, POLICY_NAME, dry_run=check)
                    result["objects"].append(dict(kind=resource, name=POLICY_NAME,
                                                  action="deleted" if deleted[resource] else "none"))
                if deleted["validatingadmissionpolicybindings"]:
                    result["lines"].append(
                        "with no binding, kube-apiserver may stop reading the parameter ConfigMap until it restarts "
                        "(%s); the next warn or deny run proves whether admission judges with what it writes"
                        % STALE_PARAMS_BUG)
        elif why is not None:
            module.fail_json(msg=why, **result)
        else:
            _Writer(session, params, check, result).run(bodies)
            if check:
                result["enforcement"] = "not proven in check mode (nothing was written)"
            else:
                timeout = min(params["enforcement_timeout"], max(session.remaining() - 1.0, 0.0))
                failed = prove_enforcement(session, params["mode"], bodies[0]["data"], manager, timeout)
                result["changed"] = any(item["action"] != "none" for item in result["objects"])
                if failed:
                    result["api_requests"] = session.api_requests
                    module.fail_json(msg=failed, **result)
                result["enforcement"] = "proven: %s, judged with revision %s of the parameters" % (
                    "a RuntimeClass with a handler no Node loads is refused" if params["mode"] == "deny"
                    else "a RuntimeClass with a handler no Node loads is admitted with a warning",
                    bodies[0]["data"][REVISION_KEY])
    result["changed"] = any(item["action"] != "none" for item in result["objects"])
    module.exit_json(**result)
