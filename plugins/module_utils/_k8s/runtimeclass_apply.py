# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing one RuntimeClass the way Kubernetes merges: server-side apply.

The fields the user gives become an applied configuration, PATCHed with
application/apply-patch+yaml as field manager `gpurt`. The apiserver keeps every field other
managers set (scheduling, overhead, labels, annotations of a live object), removes only the
fields this manager applied before and no longer applies, and refuses (409) to change a field
another manager owns with another value unless force. Check mode sends the same request with
dryRun=All, so it reports what the apiserver would do, conflicts and refusals included.
"""

import copy

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _quantity as quantity
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import label_syntax
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import objects as k8s_objects
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._nested import get_in

API_VERSION = "node.k8s.io/v1"
KIND = "RuntimeClass"
RESOURCE = "runtimeclasses"
FIELD_MANAGER = "gpurt"
TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")
TOLERATION_OPERATORS = ("Exists", "Equal")
TOLERATION_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def argument_spec():
    spec = dict(kube.AUTH_ARG_SPEC)
    spec.update(kube.REQUEST_ARG_SPEC)
    spec.update(
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        handler=dict(type="str"),
        overhead=dict(type="dict"),
        node_selector=dict(type="dict"),
        tolerations=dict(type="list", elements="dict"),
        labels=dict(type="dict"),
        force=dict(type="bool", default=False),
        recreate=dict(type="bool", default=False),
        field_manager=dict(type="str", default=FIELD_MANAGER),
        uid=dict(type="str"),
    )
    return spec


# ----- what the user asked for ---------------------------------------------------------

def _string_value(value):
    # YAML turns an unquoted true into a bool; label values are the strings "true"/"false".
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _string_map(value, option):
    out = {}
    for key, item in (value or {}).items():
        if item is None:
            raise ValueError("%s.%s has no value" % (option, key))
        out[str(key)] = _string_value(item)
    return out


def _toleration(item, index):
    unknown = sorted(set(item) - set(TOLERATION_KEYS))
    if unknown:
        raise ValueError("tolerations[%d] has unknown key(s) %s (known: %s)"
                         % (index, ", ".join(unknown), ", ".join(TOLERATION_KEYS)))
    out = {}
    for key in ("key", "operator", "value", "effect"):
        if item.get(key) not in (None, ""):
            out[key] = _string_value(item[key])
    if out.get("operator") not in (None,) + TOLERATION_OPERATORS:
        raise ValueError("tolerations[%d].operator must be Exists or Equal, not %s" % (index, out["operator"]))
    if out.get("effect") not in (None,) + TOLERATION_EFFECTS:
        raise ValueError("tolerations[%d].effect must be one of %s, not %s"
                         % (index, ", ".join(TOLERATION_EFFECTS), out["effect"]))
    if item.get("tolerationSeconds") is not None:
        try:
            out["tolerationSeconds"] = int(item["tolerationSeconds"])
        except (TypeError, ValueError):
            raise ValueError("tolerations[%d].tolerationSeconds must be an integer" % index)
    return out


def desired_from_params(params):
    """The fields the user gave, validated: {handler, overhead, node_selector, tolerations,
    labels}, each empty when not given; None for state=absent. ValueError names the bad option."""
    name = params["name"]
    if not label_syntax.DNS_SUBDOMAIN.match(name) or len(name) > 253:
        raise ValueError("name '%s' is not a valid RuntimeClass name (a lowercase DNS subdomain: a-z, 0-9, "
                         "'-' and '.', at most 253 characters)" % name)
    if params["state"] == "absent":
        return None
    handler = params.get("handler")
    if not handler:
        raise ValueError("handler is required with state=present")
    if not label_syntax.DNS_LABEL.match(handler) or len(handler) > 63:
        raise ValueError("handler '%s' is not a valid handler (a lowercase DNS label: a-z, 0-9 and '-', at most "
                         "63 characters), the way containerd runtime names must be for a RuntimeClass" % handler)
    overhead = _string_map(params.get("overhead"), "overhead")
    for resource, amount in overhead.items():
        try:
            quantity.parse(amount)
        except ValueError:
            raise ValueError("overhead.%s=%s is not a Kubernetes quantity (such as 250m, 1, 120Mi)" % (resource, amount))
    field_manager = params.get("field_manager") or FIELD_MANAGER
    if len(field_manager) > 128 or not field_manager.isprintable():
        raise ValueError("field_manager must be at most 128 printable characters")
    return {
        "handler": handler,
        "overhead": overhead,
        "node_selector": _string_map(params.get("node_selector"), "node_selector"),
        "tolerations": [_toleration(item, index) for index, item in enumerate(params.get("tolerations") or [])],
        "labels": _string_map(params.get("labels"), "labels"),
    }


def applied_configuration(name, desired):
    """The applied configuration: only the fields the user gave."""
    body = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}, "handler": desired["handler"]}
    if desired["labels"]:
        body["metadata"]["labels"] = dict(desired["labels"])
    if desired["overhead"]:
        body["overhead"] = {"podFixed": dict(desired["overhead"])}
    scheduling = {}
    if desired["node_selector"]:
        scheduling["nodeSelector"] = dict(desired["node_selector"])
    if desired["tolerations"]:
        scheduling["tolerations"] = [dict(item) for item in desired["tolerations"]]
    if scheduling:
        body["scheduling"] = scheduling
    return body


def applied_paths(desired):
    """The field paths the applied configuration sets, as managedFields names them
    (nodeSelector and tolerations are atomic: owned whole)."""
    paths = set([("handler",)])
    paths.update(("metadata", "labels", key) for key in desired["labels"])
    paths.update(("overhead", "podFixed", key) for key in desired["overhead"])
    if desired["node_selector"]:
        paths.add(("scheduling", "nodeSelector"))
    if desired["tolerations"]:
        paths.add(("scheduling", "tolerations"))
    return paths


# ----- the live object ----------------------------------------------------------------

def _mapping(value):
    return value if isinstance(value, dict) else {}


def view(obj):
    """What --diff shows and what counts as a change: the object without the fields the
    apiserver maintains (managedFields, resourceVersion, uid, timestamps). {} for none."""
    if not obj:
        return {}
    out = {"apiVersion": obj.get("apiVersion") or API_VERSION, "kind": obj.get("kind") or KIND}
    metadata = _mapping(obj.get("metadata"))
    shown = {"name": metadata.get("name")}
    for key in ("labels", "annotations"):
        if metadata.get(key):
            shown[key] = dict(metadata[key])
    out["metadata"] = shown
    for key in ("handler", "overhead", "scheduling"):
        if obj.get(key) not in (None, {}):
            out[key] = copy.deepcopy(obj[key])
    return out


def fields_paths(tree, prefix=()):
    paths = set()
    for key, child in _mapping(tree).items():
        if not key.startswith("f:"):
            continue
        path = prefix + (key[2:],)
        nested = dict((k, v) for k, v in _mapping(child).items() if k.startswith("f:"))
        paths |= fields_paths(nested, path) if nested else set([path])
    return paths


def owned_paths(obj, field_manager):
    """The paths field_manager's Apply entry owns in obj's managedFields."""
    paths = set()
    for entry in _mapping(obj.get("metadata")).get("managedFields") or []:
        if isinstance(entry, dict) and entry.get("manager") == field_manager and entry.get("operation") == "Apply":
            paths |= fields_paths(entry.get("fieldsV1"))
    return paths


def _same(path, live, wanted):
    if path[0] == "overhead":
        try:
            return quantity.parse(live) == quantity.parse(wanted)
        except ValueError:
            return live == wanted
    return live == wanted


def apply_is_noop(live, name, desired, field_manager):
    """True when applying would change nothing: field_manager already owns exactly these
    fields and the live object has the wanted values (quantities compared by value)."""
    paths = applied_paths(desired)
    if owned_paths(live, field_manager) != paths:
        return False
    body = applied_configuration(name, desired)
    return all(_same(path, get_in(live, *path), get_in(body, *path)) for path in paths)


def conflict_message(name, exc):
    """The refusal of an apply that would take fields over from other managers."""
    fields = []
    for cause in exc.causes:
        if cause.get("reason") == "FieldManagerConflict" or cause.get("field"):
            fields.append("%s (%s)" % (cause.get("field"), cause.get("message") or "another field manager"))
    listed = "; ".join(fields) or str(exc)
    return ("RuntimeClass %s: not written: other field managers own fields this task would change: %s. Leave those "
            "options out to keep their values, or set force=true to take the fields over (as kubectl apply "
            "--server-side --force-conflicts does)" % (name, listed))


def _carried_over(live, desired):
    """What a re-created object keeps from the one it replaces: labels, annotations, overhead
    and scheduling, except the parts the user gives (those come from the apply)."""
    metadata = _mapping(live.get("metadata"))
    body = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": metadata.get("name")},
            "handler": desired["handler"]}
    labels = dict((k, v) for k, v in _mapping(metadata.get("labels")).items() if k not in desired["labels"])
    if labels:
        body["metadata"]["labels"] = labels
    if metadata.get("annotations"):
        body["metadata"]["annotations"] = dict(metadata["annotations"])
    pod_fixed = dict((k, v) for k, v in _mapping(_mapping(live.get("overhead")).get("podFixed")).items()
                     if k not in desired["overhead"])
    if pod_fixed:
        body["overhead"] = {"podFixed": pod_fixed}
    scheduling = _mapping(live.get("scheduling"))
    kept = {}
    if scheduling.get("nodeSelector") and not desired["node_selector"]:
        kept["nodeSelector"] = dict(scheduling["nodeSelector"])
    if scheduling.get("tolerations") and not desired["tolerations"]:
        kept["tolerations"] = copy.deepcopy(scheduling["tolerations"])
    if kept:
        body["scheduling"] = kept
    return body


def _merged(base, applied):
    """base with the applied configuration laid over it, as the apiserver would merge them
    (maps key by key, nodeSelector and tolerations whole)."""
    out = copy.deepcopy(base)
    for key in ("labels",):
        if applied["metadata"].get(key):
            out["metadata"].setdefault(key, {}).update(applied["metadata"][key])
    out["handler"] = applied["handler"]
    if applied.get("overhead"):
        out.setdefault("overhead", {}).setdefault("podFixed", {}).update(applied["overhead"]["podFixed"])
    for key, value in _mapping(applied.get("scheduling")).items():
        out.setdefault("scheduling", {})[key] = copy.deepcopy(value)
    return out


# ----- the task -----------------------------------------------------------------------

def ensure_present(session, name, desired, force=False, recreate=False, field_manager=FIELD_MANAGER,
                   check_mode=False, uid=None):
    """(action, before, after): before is the live object, after the object as the apiserver
    stored it (in check mode: as its dry run says it would, or as computed for a re-create).
    uid pins the write to the object judged: one deleted or re-created since is reported, never written."""
    live = session.get(RESOURCE, name)
    body = applied_configuration(name, desired)
    if uid:
        _pinned(name, uid, live)
        # the apiserver refuses an apply whose uid matches no object (409) or another one (422)
        body["metadata"]["uid"] = uid
    if live is not None and live.get("handler") != desired["handler"]:
        if not recreate:
            raise kube.KubeError(
                "RuntimeClass %s has handler '%s', not '%s', and Kubernetes does not allow changing the handler of "
                "an existing RuntimeClass (the field is immutable). Set recreate=true to delete and re-create it "
                "(new pods naming it are rejected in between; its other labels, annotations, overhead and "
                "scheduling are kept), or pick another name" % (name, live.get("handler"), desired["handler"]))
        carried = _carried_over(live, desired)
        if check_mode:
            return "recreated", live, _merged(carried, body)
        session.delete(RESOURCE, name, resource_version=_mapping(live.get("metadata")).get("resourceVersion"))
        session.create(RESOURCE, carried, field_manager + "-recreate")
        return "recreated", live, _apply(session, name, body, field_manager, force, False)
    if live is not None and apply_is_noop(live, name, desired, field_manager):
        return "none", live, live
    after = _apply(session, name, body, field_manager, force, check_mode)
    if live is None:
        return "created", None, after
    return ("updated" if view(after) != view(live) else "none"), live, after


def _pinned(name, uid, live):
    if live is None:
        raise kube.KubeError("RuntimeClass %s was deleted since it was judged (uid %s): not re-created" % (name, uid),
                             resource=RESOURCE)
    now = _mapping(live.get("metadata")).get("uid")
    if now != uid:
        raise kube.KubeError("RuntimeClass %s was re-created since it was judged (uid %s, now %s): not written"
                             % (name, uid, now), resource=RESOURCE)


def _apply(session, name, body, field_manager, force, dry_run):
    uid = body["metadata"].get("uid")
    try:
        return session.apply(RESOURCE, name, body, field_manager, force=force, dry_run=dry_run)
    except kube.KubeError as exc:
        moved = (exc.status == 409 and "uid mismatch" in str(exc)) or (exc.status == 422 and "metadata.uid" in str(exc))
        if uid and moved:
            raise kube.KubeError("RuntimeClass %s was deleted or re-created since it was judged (uid %s): not "
                                 "written" % (name, uid), status=exc.status, resource=RESOURCE)
        if exc.status == 409 and exc.reason == "Conflict" and exc.causes:
            raise kube.KubeError(session.secrets.scrub(conflict_message(name, exc)), status=409,
                                 resource=RESOURCE, reason="Conflict", causes=exc.causes)
        raise


def ensure_absent(session, name, check_mode=False):
    live = session.get(RESOURCE, name)
    if live is None:
        return "none", None, None
    deleted = session.delete(RESOURCE, name, resource_version=_mapping(live.get("metadata")).get("resourceVersion"),
                             dry_run=check_mode)
    if not deleted:
        return "none", None, None  # deleted by someone else since the read
    return "deleted", live, None


def summary(obj):
    """The RuntimeClass as runtimeclass_info returns it, plus labels, annotations and
    resource_version; None for none."""
    if not obj:
        return None
    item = k8s_objects.normalize_runtimeclass(obj, "cluster")
    metadata = _mapping(obj.get("metadata"))
    item["labels"] = dict(_mapping(metadata.get("labels")))
    item["annotations"] = dict(_mapping(metadata.get("annotations")))
    item["resource_version"] = metadata.get("resourceVersion")
    return item


def run(module):
    """The module's work: exit_json or fail_json, never a traceback."""
    params = module.params
    result = dict(changed=False, action="none", runtimeclass=None, api_requests=0, conflicts=[])
    try:
        desired = desired_from_params(params)
    except ValueError as exc:
        module.fail_json(msg=str(exc), **result)
    if not kube.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"), **result)
    secrets = kube.known_secrets(params)
    session = None
    try:
        session = kube.session_from_params(params)
        secrets = session.secrets
        result["server"] = session.server
        if params["state"] == "present":
            action, before, after = ensure_present(session, params["name"], desired, params["force"],
                                                   params["recreate"], params["field_manager"], module.check_mode,
                                                   params["uid"])
        else:
            action, before, after = ensure_absent(session, params["name"], module.check_mode)
    except kube.KubeError as exc:
        if session is not None:
            result["api_requests"] = session.api_requests
        result["conflicts"] = [dict(field=c.get("field"), manager=c.get("message")) for c in exc.causes
                               if c.get("reason") == "FieldManagerConflict"]
        module.fail_json(msg=secrets.scrub(str(exc)), **result)
    except Exception as exc:  # a failed result, never a traceback
        if session is not None:
            result["api_requests"] = session.api_requests
        module.fail_json(msg=secrets.scrub("unexpected %s: %s" % (type(exc).__name__, exc)), **result)
    finally:
        if session is not None:
            session.close()
    result.update(changed=action != "none", action=action, runtimeclass=summary(after),
                  api_requests=session.api_requests)
    if module._diff:
        result["diff"] = dict(before=view(before), after=view(after),
                              before_header="runtimeclass %s" % params["name"],
                              after_header="runtimeclass %s" % params["name"])
    module.exit_json(**result)
