#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: runtimeclass
short_description: Create, update or delete one RuntimeClass
description:
  - Makes one RuntimeClass (C(node.k8s.io/v1)) match O(handler), O(overhead), O(node_selector),
    O(tolerations) and O(labels), or removes it with O(state=absent).
  - Reads the live object first and writes only when it differs, so a second run changes nothing.
    An update is a C(PUT) carrying the C(resourceVersion) that was read; if someone else changed the
    object in between, it is read again and compared again (up to three times).
  - O(overhead), O(node_selector) and O(tolerations) describe the whole field; leaving one out
    means the RuntimeClass must not set it. O(labels) are added to the labels the object already
    has; other labels and all annotations are kept.
  - The apiserver never checks that a node can run O(handler). Create a RuntimeClass only after
    every node it can select has loaded the handler; the C(gpurt.runtime_gate.remediate) playbook
    does exactly that with C(gpurt_manage_runtimeclasses=true).
version_added: 0.2.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  name:
    description:
      - C(metadata.name) of the RuntimeClass, the name pods give as C(runtimeClassName).
    type: str
    required: true
  state:
    description:
      - C(present) creates or updates the RuntimeClass; C(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  handler:
    description:
      - The containerd runtime name pods of this class ask the node for (a DNS label).
      - Required with O(state=present).
      - Kubernetes does not allow changing the C(handler) of an existing RuntimeClass (the field is
        immutable). When the live object has another handler the task fails, unless O(force=true).
    type: str
  force:
    description:
      - When the live RuntimeClass has a different O(handler), delete it and create it again.
      - Between the delete and the create, new pods naming this RuntimeClass are rejected by
        admission; running pods are not affected. The delete carries the C(resourceVersion) that
        was read, so a RuntimeClass changed meanwhile is not deleted.
    type: bool
    default: false
  overhead:
    description:
      - "C(overhead.podFixed), the resources every pod of this class is charged on top of its
        containers, such as C({cpu: 250m, memory: 120Mi})."
      - Quantities are compared by value, so C(0.25) matches the C(250m) the apiserver stores.
      - Left out or empty, the RuntimeClass sets no overhead.
    type: dict
  node_selector:
    description:
      - C(scheduling.nodeSelector), the labels a node must have for pods of this class to be
        scheduled there. Left out or empty, pods of this class may land on any node.
      - Boolean values are written as C(true)/C(false), as label values are strings.
    type: dict
  tolerations:
    description:
      - C(scheduling.tolerations), added to the tolerations of every pod of this class.
      - Each item may have C(key), C(operator) (C(Exists) or C(Equal)), C(value), C(effect) and
        C(tolerationSeconds). Order does not matter when comparing.
    type: list
    elements: dict
  labels:
    description:
      - Labels the RuntimeClass must carry, besides any it already has.
    type: dict
  retries:
    description:
      - How many times a request is retried after a 5xx, a 429, a timeout or a connection error,
        with exponential backoff. 401, 403, 404, 409 and 422 are never retried.
      - A retried write that finds its own effect (a create answered C(AlreadyExists), an update
        answered C(Conflict), a delete answered C(NotFound)) reads the object again instead of failing.
    type: int
    default: 3
extends_documentation_fragment:
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.k8s_auth
  - gpurt.runtime_gate.k8s_auth.request_options
attributes:
  check_mode:
    support: full
    details: Reads the live RuntimeClass and reports what would change; sends no write.
  diff_mode:
    support: full
    details: C(before) and C(after) hold the handler, overhead, scheduling and labels.
notes:
  - This module writes. It needs C(get), C(create), C(update) and C(delete) on
    C(runtimeclasses.node.k8s.io), which C(rbac/runtime-gate-remediate.yaml) grants; the read-only
    audit identity of C(rbac/runtime-gate-audit.yaml) gets a 403.
  - Run it once for a play, with C(run_once=true) and C(delegate_to=localhost).
seealso:
  - module: gpurt.runtime_gate.runtimeclass_info
"""

EXAMPLES = r"""
- name: The nvidia RuntimeClass, for GPU nodes only, with a fixed overhead
  gpurt.runtime_gate.runtimeclass:
    name: nvidia
    handler: nvidia
    overhead:
      cpu: 250m
      memory: 120Mi
    node_selector:
      nvidia.com/gpu.present: "true"
    tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
  run_once: true
  delegate_to: localhost

- name: Point nvidia-cdi at another handler (immutable, so delete and re-create)
  gpurt.runtime_gate.runtimeclass:
    name: nvidia-cdi
    handler: nvidia-cdi
    force: true
    kubeconfig: ~/.kube/admin.yaml
  run_once: true
  delegate_to: localhost

- name: Remove a RuntimeClass
  gpurt.runtime_gate.runtimeclass:
    name: kata
    state: absent
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
action:
  description:
    - What was done (or in check mode, what would be done)
    - C(created), C(updated), C(recreated) (deleted and created for a new handler), C(deleted),
      or C(none).
  returned: always
  type: str
  sample: created
runtimeclass:
  description:
    - The RuntimeClass after the task, normalized as M(gpurt.runtime_gate.runtimeclass_info)
      returns it, plus its labels and C(resource_version). In check mode, what it would be.
    - Null when it does not exist (after O(state=absent)).
  returned: always
  type: dict
  sample:
    name: nvidia
    handler: nvidia
    overhead: {"podFixed": {"cpu": "250m", "memory": "120Mi"}}
    node_selector: {"nvidia.com/gpu.present": "true"}
    tolerations: []
    labels: {}
    resource_version: "1004"
    source: cluster
server:
  description: The apiserver URL.
  returned: when the connection options could be used
  type: str
  sample: https://10.0.0.1:6443
api_requests:
  description: HTTP requests sent to the apiserver, retries included.
  returned: always
  type: int
  sample: 2
"""

import copy
import json
import re
import time

from http.client import responses as _HTTP_REASONS

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import kube
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import quantity
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import runtimeclasses

API_VERSION = "node.k8s.io/v1"
KIND = "RuntimeClass"
RESOURCE = "runtimeclasses.node.k8s.io"
CONFLICT_ROUNDS = 3
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")
TOLERATION_OPERATORS = ("Exists", "Equal")
TOLERATION_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
VERB_OF = {"read": "get", "create": "create", "replace": "update", "delete": "delete"}


def argument_spec():
    spec = dict(kube.AUTH_ARG_SPEC)
    spec.update(
        retries=dict(type="int", default=3),
        retry_delay=dict(type="float", default=0.5),
        request_timeout=dict(type="float", default=30.0),
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        handler=dict(type="str"),
        force=dict(type="bool", default=False),
        overhead=dict(type="dict"),
        node_selector=dict(type="dict"),
        tolerations=dict(type="list", elements="dict"),
        labels=dict(type="dict"),
    )
    return spec


class Retry(Exception):
    """A retried write was answered as if an earlier attempt had already done it."""


# ----- desired state ------------------------------------------------------------------

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
    """The relevant fields as they should be, validated: {handler, overhead, node_selector,
    tolerations, labels}; ValueError naming the bad option."""
    name = params["name"]
    if not _DNS_SUBDOMAIN.match(name) or len(name) > 253:
        raise ValueError("name '%s' is not a valid RuntimeClass name (a lowercase DNS subdomain: a-z, 0-9, "
                         "'-' and '.', at most 253 characters)" % name)
    handler = params.get("handler")
    if params["state"] == "absent":
        return None
    if not handler:
        raise ValueError("handler is required with state=present")
    if not _DNS_LABEL.match(handler) or len(handler) > 63:
        raise ValueError("handler '%s' is not a valid handler (a lowercase DNS label: a-z, 0-9 and '-', at most "
                         "63 characters), the way containerd runtime names must be for a RuntimeClass" % handler)
    overhead = _string_map(params.get("overhead"), "overhead")
    for resource, amount in overhead.items():
        try:
            quantity.parse(amount)
        except ValueError:
            raise ValueError("overhead.%s=%s is not a Kubernetes quantity (such as 250m, 1, 120Mi)" % (resource, amount))
    return {
        "handler": handler,
        "overhead": overhead,
        "node_selector": _string_map(params.get("node_selector"), "node_selector"),
        "tolerations": [_toleration(item, index) for index, item in enumerate(params.get("tolerations") or [])],
        "labels": _string_map(params.get("labels"), "labels"),
    }


# ----- the live object ----------------------------------------------------------------

def _mapping(value):
    return value if isinstance(value, dict) else {}


def live_fields(obj):
    """The relevant fields of a live RuntimeClass, in the shape desired_from_params returns."""
    scheduling = _mapping(obj.get("scheduling"))
    tolerations = scheduling.get("tolerations")
    return {
        "handler": obj.get("handler"),
        "overhead": dict((str(k), str(v)) for k, v in _mapping(_mapping(obj.get("overhead")).get("podFixed")).items()),
        "node_selector": dict((str(k), str(v)) for k, v in _mapping(scheduling.get("nodeSelector")).items()),
        "tolerations": [_live_toleration(item) for item in tolerations] if isinstance(tolerations, list) else [],
        "labels": dict((str(k), str(v)) for k, v in _mapping(_mapping(obj.get("metadata")).get("labels")).items()),
    }


def _live_toleration(item):
    item = _mapping(item)
    out = dict((key, item[key]) for key in TOLERATION_KEYS if item.get(key) not in (None, ""))
    return out


def _same_quantity(left, right):
    try:
        return quantity.parse(left) == quantity.parse(right)
    except ValueError:
        return left == right


def _sorted_tolerations(items):
    return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))


def differences(live, desired):
    """The names of the fields where the live object differs from the desired one."""
    out = []
    if live["handler"] != desired["handler"]:
        out.append("handler")
    if set(live["overhead"]) != set(desired["overhead"]) or not all(
            _same_quantity(live["overhead"][key], desired["overhead"][key]) for key in desired["overhead"]):
        out.append("overhead")
    if live["node_selector"] != desired["node_selector"]:
        out.append("node_selector")
    if _sorted_tolerations(live["tolerations"]) != _sorted_tolerations(desired["tolerations"]):
        out.append("tolerations")
    if any(live["labels"].get(key) != value for key, value in desired["labels"].items()):
        out.append("labels")
    return out


def apply_desired(obj, desired):
    """obj (a live RuntimeClass, or a new skeleton) changed to carry the desired fields."""
    obj = copy.deepcopy(obj)
    obj["apiVersion"] = API_VERSION
    obj["kind"] = KIND
    metadata = obj.setdefault("metadata", {})
    obj["handler"] = desired["handler"]
    if desired["overhead"]:
        obj["overhead"] = {"podFixed": dict(desired["overhead"])}
    else:
        obj.pop("overhead", None)
    scheduling = {}
    if desired["node_selector"]:
        scheduling["nodeSelector"] = dict(desired["node_selector"])
    if desired["tolerations"]:
        scheduling["tolerations"] = [dict(item) for item in desired["tolerations"]]
    if scheduling:
        obj["scheduling"] = scheduling
    else:
        obj.pop("scheduling", None)
    if desired["labels"]:
        labels = dict(_mapping(metadata.get("labels")))
        labels.update(desired["labels"])
        metadata["labels"] = labels
    return obj


def new_object(name, desired):
    return apply_desired({"metadata": {"name": name}}, desired)


def diff_view(obj):
    """The fields shown in --diff; {} for no object."""
    if obj is None:
        return {}
    fields = live_fields(obj)
    view = {"name": _mapping(obj.get("metadata")).get("name"), "handler": fields["handler"]}
    if fields["overhead"]:
        view["overhead"] = {"podFixed": fields["overhead"]}
    scheduling = {}
    if fields["node_selector"]:
        scheduling["nodeSelector"] = fields["node_selector"]
    if fields["tolerations"]:
        scheduling["tolerations"] = fields["tolerations"]
    if scheduling:
        view["scheduling"] = scheduling
    if fields["labels"]:
        view["labels"] = fields["labels"]
    return view


def summary(obj):
    if obj is None:
        return None
    item = runtimeclasses.normalize_runtimeclass(obj, "cluster")
    metadata = _mapping(obj.get("metadata"))
    item["labels"] = dict(_mapping(metadata.get("labels")))
    item["resource_version"] = metadata.get("resourceVersion")
    return item


# ----- the apiserver ------------------------------------------------------------------

def _status_of(body):
    try:
        status = json.loads(body) if body else None
    except (TypeError, ValueError):
        return {}
    return status if isinstance(status, dict) and status.get("kind") == "Status" else {}


class RuntimeClassClient(object):
    """get/create/replace/delete of one RuntimeClass with retries and token-free messages."""

    def __init__(self, api_client, name, retries=3, retry_delay=0.5, request_timeout=30.0, secrets=(),
                 sleep=time.sleep):
        if retries < 0:
            raise kube.KubeError("retries must be 0 or more (got %d)" % retries)
        if retry_delay < 0:
            raise kube.KubeError("retry_delay must be 0 or more seconds (got %s)" % retry_delay)
        if request_timeout <= 0:
            raise kube.KubeError("request_timeout must be a positive number of seconds (got %s)" % request_timeout)
        self.api_client = api_client
        self.api = kube.k8s_client.NodeV1Api(api_client)
        self.name = name
        self.retries = retries
        self.retry_delay = retry_delay
        self.request_timeout = request_timeout
        self.secrets = list(secrets)
        self.sleep = sleep
        self.api_requests = 0

    @property
    def server(self):
        return self.api_client.configuration.host

    def close(self):
        self.api_client.close()

    def _error(self, message, status=None):
        return kube.KubeError(kube.scrub(message, self.secrets), status=status, resource="runtimeclasses")

    # Public operations: each returns the decoded answer, or None for a missing object.
    def read(self):
        return self._request("read", self.api.read_runtime_class, (self.name,), missing_ok=True)

    def create(self, body):
        return self._request("create", self.api.create_runtime_class, (body,))

    def replace(self, body):
        return self._request("replace", self.api.replace_runtime_class, (self.name, body))

    def delete(self, resource_version=None):
        options = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if resource_version:
            options["preconditions"] = {"resourceVersion": resource_version}
        return self._request("delete", self.api.delete_runtime_class, (self.name,), {"body": options},
                             missing_ok=True)

    def _doing(self, operation):
        return "%s runtimeclass %s" % ({"read": "reading", "create": "creating", "replace": "updating",
                                        "delete": "deleting"}[operation], self.name)

    def _request(self, operation, method, args, kwargs=None, missing_ok=False):
        attempt = 0
        while True:
            attempt += 1
            self.api_requests += 1
            retry_after = None
            try:
                body = self._call(method, args, kwargs or {})
            except kube.ApiException as exc:
                status = exc.status or 0
                if status == 0:
                    raise self._tls_error(operation, exc)
                if status not in kube.RETRIED_STATUSES and status < 500:
                    return self._refused(operation, exc, attempt, missing_ok)
                reason = kube.status_text(exc, self.server)
                retry_after = kube.retry_after_seconds(exc)
            except kube.urllib3.exceptions.NewConnectionError as exc:
                reason = "cannot connect to %s (%s)" % (self.server, kube._connection_reason(exc))
            except kube.urllib3.exceptions.ConnectTimeoutError:
                reason = "no connection to %s within %s s (request_timeout)" % (self.server, self.request_timeout)
            except kube.urllib3.exceptions.ReadTimeoutError:
                reason = "no answer from %s within %s s (request_timeout)" % (self.server, self.request_timeout)
            except (kube.urllib3.exceptions.ProtocolError, kube.urllib3.exceptions.IncompleteRead) as exc:
                reason = "connection to %s dropped (%s)" % (self.server, kube._connection_reason(exc))
            except kube.urllib3.exceptions.HTTPError as exc:
                raise self._error("%s on %s: %s" % (self._doing(operation), self.server, type(exc).__name__))
            except (OSError, IOError) as exc:
                reason = "cannot talk to %s (%s)" % (self.server, getattr(exc, "strerror", None) or exc)
            else:
                return self._decode(operation, body)
            if attempt > self.retries:
                raise self._error("gave up after %d attempts %s: %s" % (attempt, self._doing(operation), reason))
            delay = self.retry_delay * (2 ** (attempt - 1))
            if retry_after is not None:
                delay = max(delay, retry_after)
            self.sleep(delay)

    def _call(self, method, args, kwargs):
        return kube.raw_call(self.api_client, method, self.request_timeout, *args, **kwargs)

    def _decode(self, operation, body):
        try:
            obj = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, AttributeError):
            raise self._error("%s answered %s with a body that is not JSON" % (self.server, self._doing(operation)))
        if not isinstance(obj, dict):
            raise self._error("%s answered %s with JSON that is not an object" % (self.server, self._doing(operation)))
        return obj

    def _refused(self, operation, exc, attempt, missing_ok):
        """The answer to a 4xx that is not retried: None for a missing object when that is
        fine, Retry when a retried write met its own earlier attempt, else a KubeError."""
        status = exc.status
        detail = _status_of(exc.body)
        about_this_object = _mapping(detail.get("details")).get("name") == self.name
        if status == 404 and about_this_object and (missing_ok or attempt > 1):
            if attempt > 1 and operation == "delete":
                raise Retry()
            return None
        if status == 409 and attempt > 1 and operation in ("create", "replace"):
            raise Retry()
        head = "%d %s from %s %s" % (status, _HTTP_REASONS.get(status) or exc.reason or "", self.server,
                                     self._doing(operation))
        message = kube._status_body_message(exc.body)
        if status == 401:
            why = "the bearer token or client certificate was rejected"
        elif status == 403:
            why = ("the identity may not %s %s; this module needs get, create, update and delete on it "
                   "(the read-only audit RBAC grants get and list only)" % (VERB_OF[operation], RESOURCE))
            if message:
                why += " (apiserver: %s)" % message
        elif status == 404 and not about_this_object:
            why = "/apis/node.k8s.io/v1/runtimeclasses is not served (node.k8s.io/v1 needs Kubernetes 1.20+); " \
                  "is host a Kubernetes apiserver?"
        else:
            why = message or "unexpected answer"
        raise self._error("%s: %s" % (head, why), status=status)

    def _tls_error(self, operation, exc):
        lines = [line for line in str(exc.reason or "").splitlines() if line.strip()]
        detail = lines[-1] if lines else "TLS handshake failed"
        if "CERTIFICATE_VERIFY_FAILED" in detail or "certificate verify failed" in detail:
            detail = "certificate verify failed; set ca_cert to the cluster CA, or validate_certs=false"
        return self._error("TLS error from %s %s: %s" % (self.server, self._doing(operation), detail[:300]), status=0)


def is_conflict(exc):
    return isinstance(exc, kube.KubeError) and exc.status == 409


# ----- the task -----------------------------------------------------------------------

def ensure_present(client, desired, force, check_mode):
    """(action, before, after): before is the object as last read, after the object as
    written (or as it would be)."""
    # The action of a write whose answer said an earlier attempt of it had already landed.
    landed = None
    for _round in range(CONFLICT_ROUNDS):
        live = client.read()
        if live is None:
            body = new_object(client.name, desired)
            if check_mode:
                return "created", live, body
            try:
                return "created", live, client.create(body)
            except Retry:
                landed = "created"
                continue  # our earlier attempt created it: read and compare again
            except kube.KubeError as exc:
                if is_conflict(exc):
                    continue  # created by someone else since the read
                raise
        fields = live_fields(live)
        changed = differences(fields, desired)
        if not changed:
            return landed or "none", live, live
        if "handler" in changed:
            if not force:
                raise kube.KubeError(
                    "RuntimeClass %s has handler '%s', not '%s', and Kubernetes does not allow changing the "
                    "handler of an existing RuntimeClass (the field is immutable). Set force=true to delete "
                    "and re-create it (new pods naming it are rejected in between), or pick another name"
                    % (client.name, fields["handler"], desired["handler"]))
            body = new_object(client.name, desired)
            # Keep the labels and annotations of the object being replaced.
            metadata = _mapping(live.get("metadata"))
            for key in ("labels", "annotations"):
                if metadata.get(key):
                    merged = dict(metadata[key])
                    merged.update(body["metadata"].get(key) or {})
                    body["metadata"][key] = merged
            if check_mode:
                return "recreated", live, body
            try:
                client.delete(_mapping(live.get("metadata")).get("resourceVersion"))
            except Retry:
                pass  # an earlier attempt deleted it
            except kube.KubeError as exc:
                if is_conflict(exc):
                    continue  # changed since the read: never delete what was not compared
                raise
            try:
                return "recreated", live, client.create(body)
            except Retry:
                landed = "recreated"
                continue
            except kube.KubeError as exc:
                if is_conflict(exc):
                    continue  # created again by someone else since the delete: compare that one
                raise
        body = apply_desired(live, desired)
        if check_mode:
            return "updated", live, body
        try:
            return "updated", live, client.replace(body)
        except Retry:
            landed = "updated"
            continue
        except kube.KubeError as exc:
            if exc.status in (404, 409):
                continue  # deleted or changed since the read: read again and compare again
            raise
    raise kube.KubeError("RuntimeClass %s kept changing while it was being written (%d conflicts); run again"
                         % (client.name, CONFLICT_ROUNDS))


def ensure_absent(client, check_mode):
    live = client.read()
    if live is None:
        return "none", None, None
    if check_mode:
        return "deleted", live, None
    try:
        answer = client.delete()
    except Retry:
        answer = {}
    if answer is None:
        return "none", None, None  # deleted by someone else since the read
    return "deleted", live, None


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True,
                           required_if=[("state", "present", ("handler",))])
    params = module.params
    result = dict(changed=False, action="none", runtimeclass=None, api_requests=0)
    secrets = kube.known_secrets(params)
    try:
        desired = desired_from_params(params)
    except ValueError as exc:
        module.fail_json(msg=str(exc), **result)
    if not kube.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"), **result)
    client = None
    try:
        configuration, config_secrets = kube.build_configuration(params)
        secrets.extend(config_secrets)
        client = RuntimeClassClient(kube.k8s_client.ApiClient(configuration=configuration), params["name"],
                                    retries=params["retries"], retry_delay=params["retry_delay"],
                                    request_timeout=params["request_timeout"], secrets=secrets)
        result["server"] = client.server
        if params["state"] == "present":
            action, before, after = ensure_present(client, desired, params["force"], module.check_mode)
        else:
            action, before, after = ensure_absent(client, module.check_mode)
    except kube.KubeError as exc:
        if client is not None:
            result["api_requests"] = client.api_requests
        module.fail_json(msg=kube.scrub(str(exc), secrets), **result)
    except Exception as exc:  # a failed result, never a traceback
        if client is not None:
            result["api_requests"] = client.api_requests
        module.fail_json(msg=kube.scrub("unexpected %s: %s" % (type(exc).__name__, exc), secrets), **result)
    finally:
        if client is not None:
            client.close()
    result.update(changed=action != "none", action=action, runtimeclass=summary(after),
                  api_requests=client.api_requests)
    if module._diff:
        result["diff"] = dict(before=diff_view(before), after=diff_view(after),
                              before_header="runtimeclass %s" % params["name"],
                              after_header="runtimeclass %s" % params["name"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
