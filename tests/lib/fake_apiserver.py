"""A stand-in for kube-apiserver, for tests and the demo. It is NOT an apiserver.

It speaks only what the runtime gate reads and writes: GET /apis/node.k8s.io/v1/runtimeclasses
(RuntimeClassList) and GET /api/v1/nodes (NodeList), with limit/continue paging, an
equality-only labelSelector and fieldSelector=metadata.name=X, plus /healthz, /version,
/api and /apis discovery; GET of one object (/apis/node.k8s.io/v1/runtimeclasses/NAME,
/api/v1/nodes/NAME); and what gpurt.runtime_gate.runtimeclass writes: PATCH
.../runtimeclasses/NAME as a server-side apply (application/apply-patch+yaml only), POST
/apis/node.k8s.io/v1/runtimeclasses, PUT and DELETE .../runtimeclasses/NAME. Every other
path is 404 and every other method 405.

Behaviour that mirrors the real apiserver:
- list JSON with metadata.resourceVersion, metadata.continue while more pages remain,
  items carrying apiVersion, kind and metadata;
- Authorization: Bearer <token> required (except /healthz): otherwise 401 Status JSON;
- a continue token it did not issue for the current data is 410 Gone (Status, reason Expired);
- every write bumps resourceVersion (a write that changes nothing keeps it); a missing object is
  404 NotFound with details; POST of an existing name is 409 AlreadyExists; PUT with a stale
  metadata.resourceVersion (or DELETE with a stale preconditions.resourceVersion) is 409
  Conflict; changing `handler` is 422 Invalid (the field is immutable), as is a missing or
  non-DNS-label handler; dryRun=All on any write answers as the write would and stores nothing;
- field ownership in metadata.managedFields (fieldsV1 trees), for the fields a RuntimeClass has:
  POST and PUT record the fieldManager parameter (else the User-Agent's product) as an Update
  manager of what they changed; an object stored without managedFields is owned whole by
  "before-first-apply", as the apiserver does for objects older than field management;
- server-side apply (PATCH, fieldManager required): the applied fields become the manager's;
  a field another manager owns with another value is 409 Conflict, in the apiserver's Status
  shape (message "Apply failed with N conflict(s): ...", details.causes of reason
  FieldManagerConflict with field and manager) unless force=true, which takes it over; fields
  the manager applied before and no longer applies are removed unless another manager owns
  them; labels, annotations and overhead.podFixed are owned key by key, scheduling.nodeSelector
  and scheduling.tolerations whole (atomic); plain and milli quantities are stored canonically
  ("0.25" -> "250m"). Other patch types are 415.

Test controls: script(resource, [500, 500, 200]) answers the next requests with those
statuses (200 = serve normally; a dict {"status": 200, "sleep": 2} sleeps first, to test
timeouts; {"trickle": 2} sends the whole answer one byte every 2 s, a slow-loris server; "body"
(dict or bytes) replaces the answer), respond_always(resource, 403) answers every request so, and
`requests` records each request (method, path, query, resource, name (None for a list), auth
presence: never the token, content type, user agent, Impersonate-User and Impersonate-Group
values, the decoded body of writes) so tests can count list calls. Scripted steps apply to the
object requests of a resource too. list_requests() returns list requests only;
object_requests() the requests for single objects.
"""

import base64
import copy
import json
import os
import shutil
import ssl
import subprocess
import re
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import yaml

LIST_PATHS = {
    "/apis/node.k8s.io/v1/runtimeclasses": ("runtimeclasses", "RuntimeClass", "node.k8s.io/v1"),
    "/api/v1/nodes": ("nodes", "Node", "v1"),
}
KIND_OF = dict((resource, (kind, api_version)) for resource, kind, api_version in LIST_PATHS.values())
OBJECT_PREFIXES = dict((path + "/", resource) for path, (resource, _unused, _unused) in LIST_PATHS.items())
WRITABLE = ("runtimeclasses",)
API_GROUP_OF = {"runtimeclasses": "node.k8s.io", "nodes": ""}
APPLY_PATCH = "application/apply-patch+yaml"
REASONS = {
    400: "BadRequest", 415: "UnsupportedMediaType", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed",
    409: "Conflict", 410: "Expired", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
    503: "ServiceUnavailable", 504: "Timeout",
}
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DEFAULT_IDENTITY = "system:serviceaccount:gpurt-runtime-gate:runtime-gate-audit"


def status_body(code, message, reason=None, details=None):
    body = {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason or REASONS.get(code, ""), "code": code,
    }
    if details is not None:
        body["details"] = details
    return body


def _qualified(resource):
    group = API_GROUP_OF.get(resource, "")
    return "%s.%s" % (resource, group) if group else resource


def _details(resource, name):
    return {"name": name, "group": API_GROUP_OF.get(resource, ""), "kind": resource}


def _selector_terms(selector):
    terms = []
    for raw in selector.split(","):
        term = raw.strip()
        if not term:
            continue
        for operator in ("!=", "==", "="):
            if operator in term:
                key, value = term.split(operator, 1)
                terms.append((key.strip(), "!=" if operator == "!=" else "=", value.strip()))
                break
        else:
            if " " in term or "(" in term:
                raise ValueError("unsupported selector term %r (this stand-in knows equality only)" % term)
            terms.append((term.lstrip("!"), "absent" if term.startswith("!") else "present", None))
    return terms


def _matches(values, terms):
    for key, operator, value in terms:
        if operator == "=" and values.get(key) != value:
            return False
        if operator == "!=" and values.get(key) == value:
            return False
        if operator == "present" and key not in values:
            return False
        if operator == "absent" and key in values:
            return False
    return True


def _name_of(obj):
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


# ----- field ownership (server-side apply), for the fields a RuntimeClass has -----------
# managedFields entries hold fieldsV1 trees ({"f:handler": {}, "f:metadata": {"f:labels":
# {"f:team": {}}}}). Maps are owned key by key, except these, which the Kubernetes types mark
# atomic (+mapType=atomic, +listType=atomic): they are owned, and replaced, whole.
ATOMIC_PATHS = {("scheduling", "nodeSelector"), ("scheduling", "tolerations")}
OWNED_METADATA = ("labels", "annotations")
BEFORE_FIRST_APPLY = "before-first-apply"
_ABSENT = object()
_QUANTITY_MILLI = re.compile(r"^(\d+)(?:\.(\d{1,3}))?(m?)$")


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def updater(query, user_agent):
    """Who a POST or PUT is on behalf of: the fieldManager parameter, else the User-Agent's
    product name, as the apiserver derives it."""
    if query.get("fieldManager"):
        return query["fieldManager"]
    product = (user_agent or "").split("/", 1)[0].strip()
    return product or "unknown"


def _canonical_quantity(value):
    """'0.25' -> '250m', '1000m' -> '1': the apiserver stores quantities canonically. Only
    plain and milli decimal forms are canonicalized here; others are kept as written."""
    match = _QUANTITY_MILLI.match(str(value))
    if not match:
        return value
    whole, fraction, milli = match.groups()
    if milli:
        if fraction:
            return value
        amount = int(whole)
    else:
        amount = int(whole) * 1000 + int((fraction or "").ljust(3, "0") or 0)
    return str(amount // 1000) if amount % 1000 == 0 else "%dm" % amount


def _canonical(obj):
    obj = copy.deepcopy(obj)
    pod_fixed = (obj.get("overhead") or {}).get("podFixed") if isinstance(obj.get("overhead"), dict) else None
    if isinstance(pod_fixed, dict):
        for key, value in list(pod_fixed.items()):
            pod_fixed[key] = _canonical_quantity(value)
    return obj


def _leaves(obj, prefix=()):
    """{path tuple: value} of the owned fields of an object."""
    out = {}
    for key, value in (obj or {}).items():
        path = prefix + (key,)
        if not prefix and key in ("apiVersion", "kind", "status"):
            continue
        if path == ("metadata",):
            for part in OWNED_METADATA:
                if isinstance((value or {}).get(part), dict):
                    for label, text in value[part].items():
                        out[("metadata", part, label)] = text
            continue
        if isinstance(value, dict) and value and path not in ATOMIC_PATHS:
            out.update(_leaves(value, path))
        else:
            out[path] = value
    return out


def _fields_tree(paths):
    tree = {}
    for path in paths:
        node = tree
        for part in path:
            node = node.setdefault("f:" + part, {})
    return tree


def _tree_paths(tree, prefix=()):
    paths = set()
    for key, child in (tree or {}).items():
        if not key.startswith("f:"):
            continue  # ".", "k:", "v:" markers: not used by these fields
        path = prefix + (key[2:],)
        children = dict((k, v) for k, v in (child or {}).items() if k.startswith("f:"))
        if children:
            paths |= _tree_paths(children, path)
        else:
            paths.add(path)
    return paths


def _managed_entry(manager, operation, resource, paths):
    return {"manager": manager, "operation": operation, "apiVersion": KIND_OF[resource][1], "time": _now(),
            "fieldsType": "FieldsV1", "fieldsV1": _fields_tree(sorted(paths))}


def _entry_paths(entry):
    return _tree_paths(entry.get("fieldsV1") or {})


def _managed_fields(resource, obj):
    """The object's managedFields; an object without any (made before field management, or by
    this stand-in's set_objects) is owned whole by 'before-first-apply', as the apiserver does."""
    entries = ((obj.get("metadata") or {}).get("managedFields"))
    if entries:
        return [copy.deepcopy(entry) for entry in entries]
    paths = set(_leaves(obj))
    return [_managed_entry(BEFORE_FIRST_APPLY, "Update", resource, paths)] if paths else []


def _disown(entry, paths):
    kept = _entry_paths(entry) - set(paths)
    if kept == _entry_paths(entry):
        return entry
    entry = dict(entry, fieldsV1=_fields_tree(sorted(kept)), time=_now())
    return entry


def _own(entries, manager, operation, resource, paths, replace=False):
    """entries with (manager, operation) owning paths (only them with replace), empty entries dropped."""
    out = []
    found = False
    for entry in entries:
        if (entry["manager"], entry["operation"]) == (manager, operation):
            found = True
            new = set(paths) if replace else _entry_paths(entry) | set(paths)
            if new != _entry_paths(entry):
                entry = dict(entry, fieldsV1=_fields_tree(sorted(new)), time=_now())
        out.append(entry)
    if not found and paths:
        out.append(_managed_entry(manager, operation, resource, paths))
    return [entry for entry in out if _entry_paths(entry)]


def _comparable(obj):
    """obj without what changes on every write (resourceVersion, managedFields times)."""
    obj = copy.deepcopy(obj)
    metadata = obj.get("metadata") or {}
    metadata.pop("resourceVersion", None)
    for entry in metadata.get("managedFields") or []:
        entry.pop("time", None)
    return obj


def _without_system_fields(body):
    stored = copy.deepcopy(body)
    metadata = stored.setdefault("metadata", {})
    for key in ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation"):
        metadata.pop(key, None)
    return stored


def _set_path(obj, path, value):
    node = obj
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[path[-1]] = value


def _delete_path(obj, path):
    """Remove a field, and the maps its removal leaves empty (never metadata itself)."""
    trail = [obj]
    for part in path[:-1]:
        child = trail[-1].get(part)
        if not isinstance(child, dict):
            return
        trail.append(child)
    trail[-1].pop(path[-1], None)
    for depth in range(len(path) - 1, 0, -1):
        if trail[depth] or path[:depth] == ("metadata",):
            break
        trail[depth - 1].pop(path[depth - 1], None)


def _print_manager(entry):
    # The apiserver names a manager by its identity (manager, operation, apiVersion); the time is not
    # part of it, so kube-apiserver v1.37.2 prints none (test_runtimeclass_create.py checks both servers).
    text = '"%s"' % entry["manager"]
    if entry.get("operation") == "Update":
        text += " using %s" % entry.get("apiVersion")
    return text


def _conflict_status(conflicts):
    """The 409 an apply gets when it would change fields other managers own, in the
    apiserver's words (NewApplyConflict)."""
    causes = [{"reason": "FieldManagerConflict", "message": "conflict with %s" % _print_manager(entry),
               "field": "." + ".".join(path)} for entry, path in conflicts]
    if len(conflicts) == 1:
        message = "Apply failed with 1 conflict: %s: %s" % (causes[0]["message"], causes[0]["field"])
    else:
        by_manager = {}
        for entry, path in conflicts:
            by_manager.setdefault(_print_manager(entry), []).append("." + ".".join(path))
        lines = []
        for manager in sorted(by_manager):
            lines.append("conflicts with %s:" % manager)
            lines.extend("- %s" % field for field in by_manager[manager])
        message = "Apply failed with %d conflicts: %s" % (len(conflicts), "\n".join(lines))
    body = status_body(409, message, "Conflict")
    body["details"] = {"causes": causes}
    return body


class FakeApiServer(object):
    """Threaded HTTP server on 127.0.0.1 serving RuntimeClass and Node lists.

    Use as a context manager, or call start() and stop(). `url` is its address.
    """

    def __init__(self, runtimeclasses=(), nodes=(), token="fake-apiserver-token", port=0,
                 tls=False, identity=DEFAULT_IDENTITY):
        self.token = token
        self.identity = identity
        self.port = port
        self.tls = tls
        self.requests = []
        self._lock = threading.Lock()
        self._scripts = {}
        self._always = {}
        self._objects = {"runtimeclasses": [], "nodes": []}
        # resourceVersion of objects given without one, as of set_objects().
        self._given_rv = {"runtimeclasses": {}, "nodes": {}}
        self._resource_version = 1000
        self._httpd = None
        self._thread = None
        self._stopping = threading.Event()
        self._tls_dir = None
        self.ca_file = None
        self.set_objects("runtimeclasses", runtimeclasses)
        self.set_objects("nodes", nodes)

    # ----- controls -----------------------------------------------------------------
    def set_objects(self, resource, objects):
        """Replace the stored objects; bumps resourceVersion, so old continue tokens expire."""
        with self._lock:
            self._objects[resource] = [copy.deepcopy(obj) for obj in objects]
            self._resource_version += 1
            self._given_rv[resource] = dict((_name_of(obj), str(self._resource_version)) for obj in objects)

    def script(self, resource, steps):
        """Answer the next requests for resource (or None: any path) with these steps:
        an HTTP status (200 = serve normally) or {"status": N, "sleep": seconds}."""
        with self._lock:
            self._scripts.setdefault(resource, []).extend(
                step if isinstance(step, dict) else {"status": step} for step in steps)

    def respond_always(self, resource, step):
        """Answer every request for resource with this step (None clears it)."""
        with self._lock:
            if step is None:
                self._always.pop(resource, None)
            else:
                self._always[resource] = step if isinstance(step, dict) else {"status": step}

    def list_requests(self, resource):
        """Requests that reached a list path of resource, whatever their answer."""
        return [r for r in self.requests if r["resource"] == resource and r.get("name") is None]

    def object_requests(self, resource, method=None, name=None):
        """Requests for single objects of resource (GET/PUT/DELETE .../NAME and POST to the
        collection), optionally only one method or object name, whatever their answer."""
        return [r for r in self.requests if r["resource"] == resource and r.get("name") is not None
                and (method is None or r["method"] == method) and (name is None or r["name"] == name)]

    def get_object(self, resource, name):
        """The stored object (a copy, as GET would serve it), or None."""
        with self._lock:
            index = self._index(resource, name)
            return None if index is None else self._served(resource, self._objects[resource][index])

    def reset_requests(self):
        with self._lock:
            del self.requests[:]

    # ----- lifecycle ----------------------------------------------------------------
    @property
    def url(self):
        return "%s://127.0.0.1:%d" % ("https" if self.tls else "http", self.port)

    def start(self):
        self._stopping.clear()
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._httpd.daemon_threads = True
        # A handler sleeping for a timeout test must not hold up stop().
        self._httpd.block_on_close = False
        if self.tls:
            self._tls_dir = tempfile.mkdtemp(prefix="fake-apiserver-tls-")
            cert, key = make_self_signed_cert(self._tls_dir)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
            self.ca_file = cert
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self):
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._tls_dir:
            shutil.rmtree(self._tls_dir, ignore_errors=True)
            self._tls_dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    # ----- request handling (called from handler threads) --------------------------
    def _next_step(self, resource):
        with self._lock:
            for key in (resource, None):
                if self._scripts.get(key):
                    return self._scripts[key].pop(0)
            for key in (resource, None):
                if key in self._always:
                    return self._always[key]
        return {"status": 200}

    def _encode_continue(self, start, query_key):
        raw = json.dumps({"rv": self._resource_version, "start": start, "q": query_key}).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def _decode_continue(self, token, query_key):
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            state = json.loads(raw.decode())
            if state["rv"] == self._resource_version and state["q"] == query_key:
                return int(state["start"])
        except (ValueError, KeyError, TypeError):
            pass
        return None

    # ----- single objects (called with the lock held) ------------------------------
    def _index(self, resource, name):
        for index, obj in enumerate(self._objects[resource]):
            if _name_of(obj) == name:
                return index
        return None

    def _rv_of(self, resource, obj):
        rv = (obj.get("metadata") or {}).get("resourceVersion") if isinstance(obj, dict) else None
        return str(rv) if rv else self._given_rv[resource].get(_name_of(obj), str(self._resource_version))

    def _served(self, resource, obj):
        kind, api_version = KIND_OF[resource]
        item = copy.deepcopy(obj)
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", kind)
        item.setdefault("metadata", {})["resourceVersion"] = self._rv_of(resource, obj)
        return item

    def _not_found(self, resource, name):
        return 404, status_body(404, '%s "%s" not found' % (_qualified(resource), name), "NotFound",
                                _details(resource, name))

    def _invalid(self, resource, name, causes):
        kind, api_version = KIND_OF[resource]
        group = API_GROUP_OF.get(resource, "")
        message = '%s "%s" is invalid: %s' % (kind + ("." + group if group else ""), name,
                                              ", ".join("%s: %s" % cause for cause in causes))
        details = _details(resource, name)
        details["causes"] = [{"field": field, "message": text} for field, text in causes]
        return 422, status_body(422, message, "Invalid", details)

    def _validate(self, resource, body, name):
        """(code, Status) when the body cannot be stored, else None."""
        kind, api_version = KIND_OF[resource]
        if body.get("kind") not in (None, kind) or body.get("apiVersion") not in (None, api_version):
            return 400, status_body(400, "the API version in the data (%s) does not match the expected API "
                                         "version (%s) or kind (%s) is not %s"
                                    % (body.get("apiVersion"), api_version, body.get("kind"), kind))
        causes = []
        if not _DNS_SUBDOMAIN.match(name) or len(name) > 253:
            causes.append(("metadata.name", 'Invalid value: "%s": a lowercase RFC 1123 subdomain must '
                                            'consist of lower case alphanumeric characters, \'-\' or \'.\'' % name))
        handler = body.get("handler")
        if not handler:
            causes.append(("handler", "Required value"))
        elif not isinstance(handler, str) or not _DNS_LABEL.match(handler) or len(handler) > 63:
            causes.append(("handler", 'Invalid value: "%s": a lowercase RFC 1123 label must consist of lower '
                                      'case alphanumeric characters or \'-\'' % (handler,)))
        for field in ("overhead", "scheduling"):
            if body.get(field) is not None and not isinstance(body[field], dict):
                causes.append((field, "Invalid value: must be an object"))
        return self._invalid(resource, name, causes) if causes else None

    def _bump(self):
        self._resource_version += 1
        return str(self._resource_version)

    def get_one(self, resource, name):
        with self._lock:
            index = self._index(resource, name)
            if index is None:
                return self._not_found(resource, name)
            return 200, self._served(resource, self._objects[resource][index])

    def _write_context(self, resource, name, query, user_agent):
        """(field manager of a non-apply write, dry run?, (code, Status) for a bad query or None)."""
        dry_run = query.get("dryRun")
        if dry_run not in (None, "All"):
            return None, False, (400, status_body(400, 'dryRun: Unsupported value: "%s": supported values: "All"'
                                                  % dry_run))
        return updater(query, user_agent), dry_run == "All", None

    def create(self, resource, body, query=None, user_agent=None):
        query = query or {}
        manager, dry_run, bad = self._write_context(resource, _name_of(body), query, user_agent)
        if bad:
            return bad
        name = _name_of(body)
        if not name:
            return 422, status_body(422, "%s is invalid: metadata.name: Required value: name or generateName "
                                         "is required" % KIND_OF[resource][0], "Invalid")
        problem = self._validate(resource, body, name)
        if problem:
            return problem
        if body["metadata"].get("resourceVersion"):
            # The real apiserver refuses this too: a create must not carry a version.
            return 500, status_body(500, "resourceVersion should not be set on objects to be created")
        with self._lock:
            if self._index(resource, name) is not None:
                return 409, status_body(409, '%s "%s" already exists' % (_qualified(resource), name),
                                        "AlreadyExists", _details(resource, name))
            stored = _without_system_fields(body)
            stored["metadata"]["managedFields"] = [_managed_entry(manager, "Update", resource, _leaves(stored))]
            stored["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=_now())
            stored["metadata"]["resourceVersion"] = str(self._resource_version + 1) if dry_run else self._bump()
            if not dry_run:
                self._objects[resource].append(stored)
            return 201, self._served(resource, stored)

    def replace(self, resource, name, body, query=None, user_agent=None):
        query = query or {}
        manager, dry_run, bad = self._write_context(resource, name, query, user_agent)
        if bad:
            return bad
        if _name_of(body) != name:
            return 400, status_body(400, "the name of the object (%s) does not match the name on the URL (%s)"
                                    % (_name_of(body), name))
        problem = self._validate(resource, body, name)
        if problem:
            return problem
        with self._lock:
            missing = self._index(resource, name) is None
        if missing and not (body.get("metadata") or {}).get("resourceVersion"):
            # as the apiserver does for a RuntimeClass: a PUT without resourceVersion creates it (measured: 201)
            return self.create(resource, body, query, user_agent)
        with self._lock:
            index = self._index(resource, name)
            if index is None:
                return self._not_found(resource, name)
            current = self._objects[resource][index]
            current_rv = self._rv_of(resource, current)
            asked_rv = body["metadata"].get("resourceVersion")
            if asked_rv and str(asked_rv) != current_rv:
                return 409, status_body(409, 'Operation cannot be fulfilled on %s "%s": the object has been '
                                             'modified; please apply your changes to the latest version and try '
                                             'again' % (_qualified(resource), name), "Conflict",
                                        _details(resource, name))
            if body.get("handler") != current.get("handler"):
                return self._invalid(resource, name, [("handler", "Invalid value: null: field is immutable")])
            stored = _without_system_fields(body)
            for key in ("uid", "creationTimestamp"):  # system fields survive a replace
                if (current.get("metadata") or {}).get(key):
                    stored["metadata"][key] = current["metadata"][key]
            kind, api_version = KIND_OF[resource]
            stored.setdefault("apiVersion", api_version)
            stored.setdefault("kind", kind)
            # The updater owns what it changed; nobody owns what it removed.
            before, after = _leaves(current), _leaves(stored)
            changed = set(path for path in set(before) | set(after) if before.get(path) != after.get(path))
            managers = [_disown(entry, changed) for entry in _managed_fields(resource, current)]
            managers = _own(managers, manager, "Update", resource, changed & set(after))
            stored["metadata"]["managedFields"] = managers
            return self._store(resource, index, current, stored, dry_run, 200)

    def _store(self, resource, index, current, stored, dry_run, code):
        """Store stored in place of current (unless dry_run); a write that changes nothing keeps
        the resourceVersion, as etcd sees no write."""
        current_rv = self._rv_of(resource, current)
        unchanged = _comparable(self._served(resource, current)) == _comparable(stored)
        if unchanged:
            stored["metadata"]["resourceVersion"] = current_rv
        else:
            stored["metadata"]["resourceVersion"] = str(self._resource_version + 1) if dry_run else self._bump()
        if not dry_run:
            self._objects[resource][index] = stored
        return code, self._served(resource, stored)

    def apply(self, resource, name, body, query):
        """Server-side apply (PATCH application/apply-patch+yaml) with field ownership: the
        fields of body become owned by the fieldManager; a field another manager owns with
        another value is a 409 conflict unless force=true (which takes it over); fields this
        manager applied before and no longer applies are removed unless someone else owns them."""
        manager = query.get("fieldManager")
        if not manager:
            return 422, status_body(422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                                         'is required for apply patch', "Invalid")
        _unused, dry_run, bad = self._write_context(resource, name, query, None)
        if bad:
            return bad
        force = query.get("force") == "true"
        kind, api_version = KIND_OF[resource]
        if not body.get("apiVersion") or not body.get("kind"):
            return 400, status_body(400, "%s must be set" % ("apiVersion" if not body.get("apiVersion") else "kind"),
                                    "BadRequest")
        if body.get("apiVersion") != api_version or body.get("kind") != kind:
            return 400, status_body(400, "the API version in the data (%s) does not match the expected API version "
                                         "(%s)" % (body.get("apiVersion"), api_version), "BadRequest")
        if _name_of(body) != name:
            return 400, status_body(400, "the name of the object (%s) does not match the name on the URL (%s)"
                                    % (_name_of(body), name), "BadRequest")
        applied = _leaves(_canonical(body))
        with self._lock:
            index = self._index(resource, name)
            if index is None:
                problem = self._validate(resource, body, name)
                if problem:
                    return problem
                stored = _without_system_fields(_canonical(body))
                stored["metadata"]["managedFields"] = [_managed_entry(manager, "Apply", resource, applied)]
                stored["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=_now())
                stored["metadata"]["resourceVersion"] = str(self._resource_version + 1) if dry_run else self._bump()
                if not dry_run:
                    self._objects[resource].append(stored)
                return 201, self._served(resource, stored)
            current = self._objects[resource][index]
            live = _leaves(current)
            managers = _managed_fields(resource, current)

            def mine(entry):
                return (entry["manager"], entry["operation"]) == (manager, "Apply")
            conflicts = []
            for entry in managers:
                if mine(entry):
                    continue
                owned = _entry_paths(entry)
                for path, value in sorted(applied.items()):
                    if path in owned and live.get(path, _ABSENT) != value:
                        conflicts.append((entry, path))
            if conflicts and not force:
                return 409, _conflict_status(conflicts)
            taken = set(path for _entry, path in conflicts)
            managers = [entry if mine(entry) else _disown(entry, taken) for entry in managers]
            previous = set().union(*[_entry_paths(entry) for entry in managers if mine(entry)])
            others = set().union(*[_entry_paths(entry) for entry in managers if not mine(entry)])
            stored = copy.deepcopy(current)
            for path in sorted(previous - set(applied) - others, key=len, reverse=True):
                _delete_path(stored, path)
            for path, value in applied.items():
                _set_path(stored, path, copy.deepcopy(value))
            problem = self._validate(resource, stored, name)
            if problem:
                return problem
            if stored.get("handler") != current.get("handler"):
                return self._invalid(resource, name, [("handler", "Invalid value: null: field is immutable")])
            stored["metadata"]["managedFields"] = _own(managers, manager, "Apply", resource, set(applied),
                                                       replace=True)
            return self._store(resource, index, current, stored, dry_run, 200)

    def delete(self, resource, name, body, query=None):
        query = query or {}
        preconditions = (body or {}).get("preconditions") or {} if isinstance(body, dict) else {}
        if isinstance(body, dict) and body:
            # as the apiserver does: DeleteOptions from the body when there is one, the query ignored
            query = {"dryRun": "All"} if body.get("dryRun") == ["All"] else {}
        _unused, dry_run, bad = self._write_context(resource, name, query, None)
        if bad:
            return bad
        with self._lock:
            index = self._index(resource, name)
            if index is None:
                return self._not_found(resource, name)
            current = self._objects[resource][index]
            asked_rv = preconditions.get("resourceVersion")
            if asked_rv and str(asked_rv) != self._rv_of(resource, current):
                return 409, status_body(409, 'Operation cannot be fulfilled on %s "%s": Precondition failed: '
                                             'ResourceVersion: Precondition failed: %s'
                                        % (_qualified(resource), name, asked_rv), "Conflict",
                                        _details(resource, name))
            if not dry_run:
                del self._objects[resource][index]
                self._bump()
            details = _details(resource, name)
            details["uid"] = (current.get("metadata") or {}).get("uid", "")
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                         "details": details}

    def list_page(self, resource, query):
        """(code, body) for one list request."""
        kind, api_version = KIND_OF[resource]
        try:
            label_terms = _selector_terms(query.get("labelSelector", ""))
            field_terms = _selector_terms(query.get("fieldSelector", ""))
        except ValueError as exc:
            return 400, status_body(400, str(exc))
        for key, _unused, _unused in field_terms:
            if key != "metadata.name":
                return 400, status_body(400, 'field label not supported: %s' % key)
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            return 400, status_body(400, "limit must be an integer")
        with self._lock:
            objects = sorted(self._objects[resource], key=_name_of)
            resource_version = self._resource_version
            query_key = [query.get("labelSelector", ""), query.get("fieldSelector", "")]
            start = 0
            if query.get("continue"):
                start = self._decode_continue(query["continue"], query_key)
                if start is None:
                    return 410, status_body(410, "The provided continue parameter is too old to display a "
                                                 "consistent list result. You can start a new list without "
                                                 "the continue parameter.")
            matching = []
            for obj in objects:
                labels = ((obj.get("metadata") or {}).get("labels") or {}) if isinstance(obj, dict) else {}
                if _matches(labels, label_terms) and _matches({"metadata.name": _name_of(obj)}, field_terms):
                    matching.append(obj)
            end = start + limit if limit > 0 else len(matching)
            page = matching[start:end]
            metadata = {"resourceVersion": str(resource_version)}
            if end < len(matching):
                metadata["continue"] = self._encode_continue(end, query_key)
                metadata["remainingItemCount"] = len(matching) - end
        items = []
        for obj in page:
            item = copy.deepcopy(obj)
            if isinstance(item, dict):
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
            items.append(item)
        return 200, {"kind": kind + "List", "apiVersion": api_version, "metadata": metadata, "items": items}


class _Handler(BaseHTTPRequestHandler):
    fake = None  # set on the subclass made per server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep test output clean
        pass

    def _send(self, code, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass  # the client gave up (timeout test)

    def _send_trickle(self, code, body, interval):
        """The whole answer, status line and headers included, one byte every interval
        seconds: a slow-loris server, whose every read comes well within any read timeout."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        raw = ("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
               % (code, self.responses.get(code, ("",))[0], len(data))).encode() + data
        self.close_connection = True
        try:
            for index in range(len(raw)):
                self.wfile.write(raw[index:index + 1])
                self.wfile.flush()
                if self.fake._stopping.wait(interval):
                    return
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass

    def _auth_state(self):
        header = self.headers.get("Authorization")
        if not header:
            return "missing"
        return "ok" if header == "Bearer %s" % self.fake.token else "wrong"

    def _parse(self):
        parts = urlsplit(self.path)
        query = dict((key, values[-1]) for key, values in parse_qs(parts.query).items())
        path = parts.path.rstrip("/") or "/"
        return path, query

    def _object_target(self, path):
        """(resource, name) for .../RESOURCE/NAME paths, else (None, None)."""
        for prefix, resource in OBJECT_PREFIXES.items():
            if path.startswith(prefix) and "/" not in path[len(prefix):]:
                return resource, path[len(prefix):]
        return None, None

    def _read_body(self):
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        raw = self.rfile.read(length) if length > 0 else b""
        if not raw:
            return None, None
        if self._content_type() == APPLY_PATCH:
            # An applied configuration is YAML (JSON is YAML too).
            try:
                return yaml.safe_load(raw.decode("utf-8")), None
            except (UnicodeDecodeError, yaml.YAMLError) as exc:
                return None, "request body is not YAML: %s" % str(exc).splitlines()[0]
        try:
            return json.loads(raw.decode("utf-8")), None
        except (UnicodeDecodeError, ValueError) as exc:
            return None, "request body is not JSON: %s" % exc

    def _content_type(self):
        return (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()

    def _begin(self, method, path, query, resource, name, body=None):
        """Record the request; (code, Status) when it is refused before reaching the data."""
        fake = self.fake
        record = {"method": method, "path": path, "query": query, "resource": resource, "name": name,
                  "auth": self._auth_state(), "status": None, "time": time.time(),
                  "content_type": self._content_type() or None, "user_agent": self.headers.get("User-Agent"),
                  "impersonate_user": self.headers.get("Impersonate-User"),
                  "impersonate_groups": self.headers.get_all("Impersonate-Group") or []}
        if method in ("POST", "PUT", "DELETE", "PATCH"):
            record["body"] = copy.deepcopy(body)
        with fake._lock:
            fake.requests.append(record)
        return record

    def _finish(self, record, code, body):
        record["status"] = code
        if record.get("trickle"):
            self._send_trickle(code, body, record["trickle"])
        else:
            self._send(code, body)

    def _scripted(self, record, resource):
        """The answer of a scripted step other than "serve normally", or None."""
        if record["auth"] != "ok":
            # The apiserver authenticates before anything else; scripted steps stay queued.
            return 401, status_body(401, "Unauthorized")
        step = self.fake._next_step(resource) if resource else {"status": 200}
        if step.get("sleep"):
            time.sleep(step["sleep"])
        if step.get("trickle"):
            record["trickle"] = step["trickle"]
        code = step.get("status", 200)
        if step.get("body") is not None:
            return code, step["body"]
        if code != 200:
            verb = {"POST": "create", "PUT": "update", "DELETE": "delete", "PATCH": "patch"}.get(
                record["method"], "list" if record["name"] is None else "get")
            return code, self._scripted_body(code, resource, verb)
        return None

    def do_GET(self):
        fake = self.fake
        path, query = self._parse()
        if path in ("/healthz", "/livez", "/readyz"):
            return self._send(200, b"ok", "text/plain")
        resource = LIST_PATHS.get(path, (None,))[0]
        name = None
        if resource is None:
            resource, name = self._object_target(path)
        record = self._begin("GET", path, query, resource, name)
        answer = self._scripted(record, resource)
        if answer is None:
            if name is not None:
                answer = fake.get_one(resource, name)
            elif resource:
                answer = fake.list_page(resource, query)
            else:
                answer = self._discovery(path)
        self._finish(record, *answer)

    def _write(self, method):
        fake = self.fake
        path, query = self._parse()
        body, bad_body = self._read_body()
        if method == "POST" and path in LIST_PATHS:
            resource = LIST_PATHS[path][0]
            name = _name_of(body) or ""
        else:
            resource, name = self._object_target(path)
        if resource not in WRITABLE or (method == "POST" and path not in LIST_PATHS):
            return self._refuse()
        record = self._begin(method, path, query, resource, name, body)
        answer = self._scripted(record, resource)
        user_agent = self.headers.get("User-Agent")
        if answer is None:
            if method == "PATCH" and self._content_type() != APPLY_PATCH:
                answer = 415, status_body(415, "this stand-in serves only apply patches (%s), not %s"
                                          % (APPLY_PATCH, self._content_type() or "no Content-Type"),
                                          "UnsupportedMediaType")
            elif bad_body or (method != "DELETE" and not isinstance(body, dict)):
                answer = 400, status_body(400, bad_body or "request body must be a JSON object")
            elif method == "POST":
                answer = fake.create(resource, body, query, user_agent)
            elif method == "PUT":
                answer = fake.replace(resource, name, body, query, user_agent)
            elif method == "PATCH":
                answer = fake.apply(resource, name, body, query)
            else:
                answer = fake.delete(resource, name, body, query)
        self._finish(record, *answer)

    def do_POST(self):
        self._write("POST")

    def do_PUT(self):
        self._write("PUT")

    def do_DELETE(self):
        self._write("DELETE")

    def do_PATCH(self):
        self._write("PATCH")

    def _scripted_body(self, code, resource, verb="list"):
        if code == 403:
            group = API_GROUP_OF.get(resource, "")
            full = "%s.%s" % (resource, group) if group else resource
            identity = self.headers.get("Impersonate-User") or self.fake.identity
            return status_body(403, '%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s" '
                                    'at the cluster scope' % (full, identity, verb, resource, group))
        return status_body(code, "scripted %d from the fake apiserver" % code)

    def _discovery(self, path):
        if path == "/version":
            return 200, {"major": "1", "minor": "33", "gitVersion": "v1.33.0-fake", "platform": "linux/amd64"}
        if path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if path == "/apis":
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
                "name": "node.k8s.io",
                "versions": [{"groupVersion": "node.k8s.io/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "node.k8s.io/v1", "version": "v1"}}]}
        return 404, status_body(404, "the server could not find the requested resource")

    def _refuse(self):
        self._send(405, status_body(405, "this fake apiserver only answers GET, and POST/PUT/PATCH/DELETE of "
                                         "runtimeclasses"))


def make_self_signed_cert(directory):
    """(cert, key) paths of a self-signed cert for 127.0.0.1, made with the openssl CLI."""
    openssl = shutil.which("openssl")
    if not openssl:
        raise RuntimeError("openssl CLI not found")
    cert = os.path.join(directory, "tls.crt")
    key = os.path.join(directory, "tls.key")
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=fake-apiserver", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", key, "-out", cert], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return cert, key


def write_kubeconfig(path, server, token=None, contexts=None, current_context=None,
                     certificate_authority=None, insecure_skip_tls_verify=None):
    """Write a kubeconfig; contexts maps context name -> token (default {"fake": token}).
    Each context gets its own cluster and user entry, all pointing at `server`."""
    contexts = contexts if contexts is not None else {"fake": token}
    config = {"apiVersion": "v1", "kind": "Config", "preferences": {},
              "clusters": [], "users": [], "contexts": []}
    for name, context_token in contexts.items():
        cluster = {"server": server}
        if certificate_authority:
            cluster["certificate-authority"] = certificate_authority
        if insecure_skip_tls_verify is not None:
            cluster["insecure-skip-tls-verify"] = insecure_skip_tls_verify
        config["clusters"].append({"name": name + "-cluster", "cluster": cluster})
        config["users"].append({"name": name + "-user", "user": {"token": context_token} if context_token else {}})
        config["contexts"].append({"name": name, "context": {"cluster": name + "-cluster", "user": name + "-user"}})
    if current_context is None and contexts:
        current_context = next(iter(contexts))
    if current_context:
        config["current-context"] = current_context
    _write_atomically(path, yaml.safe_dump(config, default_flow_style=False))
    return path


def _write_atomically(path, text):
    # Readers poll these files; they must never see half of one.
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)
