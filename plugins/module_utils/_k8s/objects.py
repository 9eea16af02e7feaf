# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Normalize RuntimeClass and Node objects, from the apiserver or from manifests.

Pure Python plus PyYAML (a dependency of ansible-core); no kubernetes import, so the
manifest path (`src`) works without the kubernetes client.

Invalid objects (a RuntimeClass without metadata.name or handler, a Node without
metadata.name) raise ValueError naming the object and where it came from.
normalize_objects() collects every such error so a module can report them all at once.
"""

import json
import os

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._value_types import type_name
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import label_syntax
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.gate_names import CHECKED_AT, LABEL_PREFIX

try:
    import yaml
except ImportError:  # ansible-core needs PyYAML, but a bare target interpreter may lack it
    yaml = None

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
LIST_KINDS = ("List",)


def _mapping(value):
    return dict(value) if isinstance(value, dict) else {}


def _describe(obj, kind, source):
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    label = "%s '%s'" % (kind, name) if name else "%s without metadata.name" % kind
    return "%s (from %s)" % (label, source) if source else label


def _object_name(obj, kind, source):
    if not isinstance(obj, dict):
        raise ValueError("%s from %s is not a mapping but %s" % (kind, source or "input", type(obj).__name__))
    name = _mapping(obj.get("metadata")).get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("%s has no metadata.name" % _describe(obj, kind, source))
    return name


def runtimeclass_type_error(obj):
    """Why a RuntimeClass's field is one the apiserver would refuse (handler, overhead, tolerations
    of another type; a nodeSelector or metadata.labels outside the label syntax), or None. A wrong
    field is never read as absent, nor turned into a string: a nodeSelector value `true` would
    silently select no node."""
    handler = obj.get("handler")
    if handler is not None and not isinstance(handler, str):
        return "handler must be a string, got %s: %r" % (type_name(handler), handler)
    for field, value, kind in (("scheduling", obj.get("scheduling"), dict), ("overhead", obj.get("overhead"), dict)):
        if value is not None and not isinstance(value, kind):
            return "%s must be a mapping, got %s" % (field, type_name(value))
    scheduling = _mapping(obj.get("scheduling"))
    selector = scheduling.get("nodeSelector")
    if selector is not None:
        if not isinstance(selector, dict):
            return "scheduling.nodeSelector must be a mapping, got %s" % type_name(selector)
        wrong = label_syntax.map_error(selector, "scheduling.nodeSelector")
        if wrong:
            return wrong
    tolerations = scheduling.get("tolerations")
    if tolerations is not None and not isinstance(tolerations, list):
        return "scheduling.tolerations must be a list, got %s" % type_name(tolerations)
    pod_fixed = _mapping(obj.get("overhead")).get("podFixed")
    if pod_fixed is not None and not isinstance(pod_fixed, dict):
        return "overhead.podFixed must be a mapping, got %s" % type_name(pod_fixed)
    return labels_error(obj)


def labels_error(obj):
    """Why an object's metadata.labels is one the apiserver refuses (not a mapping, or a key or
    value outside the label syntax), or None."""
    labels = _mapping(obj.get("metadata")).get("labels")
    if labels is None:
        return None
    if not isinstance(labels, dict):
        return "metadata.labels must be a mapping, got %s" % type_name(labels)
    return label_syntax.map_error(labels, "metadata.labels")


def _refusal(wrong):
    """A field's problem as a refusal: what the apiserver does with it, unless the problem says so."""
    if "apiserver" in wrong:
        return wrong
    return "%s (the apiserver refuses it; a manifest must hold what it would store)" % wrong


def _uid(obj):
    uid = _mapping(obj.get("metadata")).get("uid")
    return uid if isinstance(uid, str) else None


def normalize_runtimeclass(obj, source):
    """A RuntimeClass object (dict) as {name, handler, overhead, node_selector, tolerations, source}.

    overhead is {"podFixed": {...}} or None when the object sets none.
    """
    name = _object_name(obj, "RuntimeClass", source)
    wrong = runtimeclass_type_error(obj)
    if wrong:
        raise ValueError("%s: %s" % (_describe(obj, "RuntimeClass", source), _refusal(wrong)))
    handler = obj.get("handler")
    if not isinstance(handler, str) or not handler:
        raise ValueError("%s has no handler" % _describe(obj, "RuntimeClass", source))
    overhead = obj.get("overhead")
    if isinstance(overhead, dict):
        overhead = {"podFixed": _mapping(overhead.get("podFixed"))}
    else:
        overhead = None
    scheduling = _mapping(obj.get("scheduling"))
    tolerations = scheduling.get("tolerations")
    return {
        "name": name,
        "handler": handler,
        "overhead": overhead,
        "node_selector": _mapping(scheduling.get("nodeSelector")),
        "tolerations": list(tolerations) if isinstance(tolerations, list) else [],
        "source": source,
        "uid": _uid(obj),  # pins a write to the object judged (None for a manifest)
    }


def normalize_node(obj, source=None):
    """A Node object (dict) as {name, labels, runtime_handlers, runtime_handler_features,
    allocatable, taints, unschedulable, kubelet_version, container_runtime_version, labels_checked_at,
    uid, verified_label_managers, source}. labels_checked_at: the runtime-gate.gpurt.io/checked-at
    annotation (verified labels); uid: metadata.uid, which pins a write to the object judged;
    verified_label_managers: who set each label under runtime-gate.gpurt.io/ (verified_label_managers()).

    runtime_handlers is the sorted list of named handlers in status.runtimeHandlers, without
    the "" entry (the default runtime, which no RuntimeClass can name); None when the status
    has no runtimeHandlers key (Kubernetes < 1.30 or the feature is off: not reported).
    runtime_handler_features maps every entry, "" included, to its features (None likewise).
    """
    name = _object_name(obj, "Node", source)
    wrong = labels_error(obj)
    if wrong:
        raise ValueError("%s: %s" % (_describe(obj, "Node", source), _refusal(wrong)))
    metadata = _mapping(obj.get("metadata"))
    spec = _mapping(obj.get("spec"))
    status = _mapping(obj.get("status"))
    node_info = _mapping(status.get("nodeInfo"))
    handlers = None
    features = None
    if "runtimeHandlers" in status:
        entries = status.get("runtimeHandlers") or []
        if not isinstance(entries, list):
            raise ValueError("%s has status.runtimeHandlers that is not a list" % _describe(obj, "Node", source))
        features = {}
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("name", ""), str):
                features[entry.get("name", "")] = _mapping(entry.get("features"))
        handlers = sorted(handler for handler in features if handler)
    taints = spec.get("taints")
    return {
        "name": name,
        "labels": _mapping(metadata.get("labels")),
        "runtime_handlers": handlers,
        "runtime_handler_features": features,
        "allocatable": _mapping(status.get("allocatable")),
        "taints": list(taints) if isinstance(taints, list) else [],
        "unschedulable": bool(spec.get("unschedulable", False)),
        "kubelet_version": node_info.get("kubeletVersion"),
        "container_runtime_version": node_info.get("containerRuntimeVersion"),
        "labels_checked_at": _mapping(metadata.get("annotations")).get(CHECKED_AT),
        "uid": metadata.get("uid") if isinstance(metadata.get("uid"), str) else None,
        "verified_label_managers": verified_label_managers(metadata),
        "source": source,
    }


def verified_label_managers(metadata):
    """{label key: ["manager (Operation)", ...]} for each label under runtime-gate.gpurt.io/ that an
    entry of metadata.managedFields owns: who set it, by name, without the rest of managedFields."""
    out = {}
    entries = metadata.get("managedFields") if isinstance(metadata, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        labels = _mapping(_mapping(_mapping(entry.get("fieldsV1")).get("f:metadata")).get("f:labels"))
        who = "%s (%s)" % (entry.get("manager") or "unnamed manager", entry.get("operation") or "unknown operation")
        for field in labels:
            if isinstance(field, str) and field.startswith("f:" + LABEL_PREFIX):
                managers = out.setdefault(field[2:], [])
                if who not in managers:
                    managers.append(who)
    return out


_NORMALIZERS = {"RuntimeClass": normalize_runtimeclass, "Node": normalize_node}


def normalize_objects(pairs, kind):
    """Normalize (obj, source) pairs of one kind.

    Returns (objects sorted by name, errors): errors is one message per invalid object and
    per name defined more than once, so a caller can fail listing all of them or skip them.
    """
    normalize = _NORMALIZERS[kind]
    by_name = {}
    errors = []
    for obj, source in pairs:
        try:
            item = normalize(obj, source)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        if item["name"] in by_name:
            first = by_name[item["name"]]
            errors.append("%s '%s' is defined twice (from %s and from %s)" % (
                kind, item["name"], first["source"], source))
            continue
        by_name[item["name"]] = item
    return [by_name[name] for name in sorted(by_name)], errors


# The API version each kind is served under: a manifest of another version (node.k8s.io/v1beta1,
# removed in Kubernetes 1.25) or none at all is refused by `kubectl apply`, so it creates nothing.
API_VERSIONS = {"RuntimeClass": "node.k8s.io/v1", "Node": "v1"}
MAX_MANIFEST_BYTES = 16 * 1024 * 1024
READ_TIMEOUT = 60


def _documents(path):
    data, error = host_paths.read_bytes(path, MAX_MANIFEST_BYTES, READ_TIMEOUT)
    if error is not None:
        raise ValueError("cannot read manifest %s: %s" % (path, error))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError("cannot read manifest %s: not UTF-8 (bad byte at offset %d)" % (path, exc.start))
    if path.endswith(".json"):
        try:
            return [json.loads(text)] if text.strip() else []
        except ValueError as exc:
            raise ValueError("manifest %s is not valid JSON: %s" % (path, exc))
    if yaml is None:
        raise ValueError("cannot read manifest %s: the PyYAML library is not installed" % path)
    try:
        return list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = " (line %d, column %d)" % (mark.line + 1, mark.column + 1) if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError("manifest %s is not valid YAML%s: %s" % (path, where, problem))


def manifest_files(path):
    """The manifest files for a src: the file itself, or every *.yaml/*.yml/*.json below a
    directory, recursively (a kustomize base/ or overlays/), sorted by path; directories whose
    name starts with a dot (.git) are left out."""
    if os.path.isdir(path):
        found = []
        for directory, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                full = os.path.join(directory, name)
                if name.endswith(MANIFEST_SUFFIXES):
                    found.append(full)  # a FIFO or device among them is refused when read, not skipped
        return sorted(found)
    if os.path.lexists(path):
        return [path]
    raise ValueError("manifest path %s does not exist" % path)


def _text(value):
    return value if isinstance(value, str) else repr(value)


def _almost(doc, kind, inherited=None):
    """Why doc is almost an object of kind (the kind but for its case, or another or no API
    version), or None when it is one, or is plainly something else."""
    doc_kind = doc.get("kind")
    if not isinstance(doc_kind, str) or doc_kind.lower() != kind.lower():
        return None
    if doc_kind != kind:
        return "kind '%s' is not '%s' (kinds are case-sensitive)" % (doc_kind, kind)
    api_version = doc.get("apiVersion", inherited)
    if api_version is None:
        return "apiVersion is missing (%s is served as %s)" % (kind, API_VERSIONS[kind])
    if api_version != API_VERSIONS[kind]:
        return "apiVersion '%s' is not %s" % (_text(api_version), API_VERSIONS[kind])
    return None


def _describe_doc(doc, where):
    return "%s: kind %s, apiVersion %s" % (where, _text(doc.get("kind", "(none)")), _text(doc.get("apiVersion", "(none)")))


class NoObjects(ValueError):
    """The manifests hold no object of the kind at all (its message lists what they hold instead)."""


def load_manifests(path, kind, others=None):
    """Objects of one kind (e.g. "RuntimeClass", "Node") from a file or directory.

    Reads multi-document YAML and JSON, unwraps `kind: List` and `<kind>List` items, and
    returns (obj, source) pairs; source names the file, and the document and item number when
    there is more than one. Documents of other kinds are described in `others` (a list, when
    given). Raises ValueError for bad YAML, for an almost-object (`kind: Runtimeclass`, or
    apiVersion node.k8s.io/v1beta1 or none: kubectl would refuse or create nothing), and when
    the source holds no object of the kind at all, listing what it holds instead.
    """
    pairs = []
    almost = []
    seen = []
    files = manifest_files(path)
    for filename in files:
        documents = _documents(filename)
        for doc_index, doc in enumerate(documents, 1):
            if doc is None:
                continue
            where = filename if len(documents) == 1 else "%s, document %d" % (filename, doc_index)
            if not isinstance(doc, dict):
                raise ValueError("%s is not a mapping but %s" % (where, type(doc).__name__))
            doc_kind = doc.get("kind")
            if doc_kind in LIST_KINDS or doc_kind == kind + "List":
                items = doc.get("items") or []
                if not isinstance(items, list):
                    raise ValueError("%s: items is not a list" % where)
                # Items of a <kind>List may omit kind and apiVersion, as the apiserver's do; with no
                # apiVersion on the list either, the list's kind is all there is to go by.
                inherited = None
                if doc_kind != "List":
                    inherited = doc.get("apiVersion", API_VERSIONS[kind])
                for item_index, item in enumerate(items, 1):
                    item_where = "%s, item %d" % (where, item_index)
                    if not isinstance(item, dict):
                        if doc_kind != "List":
                            pairs.append((item, item_where))  # normalization names what is wrong
                        continue
                    typed = item if doc_kind == "List" or "kind" in item else dict(item, kind=kind)
                    why = _almost(typed, kind, inherited)
                    if why:
                        almost.append("%s: %s" % (item_where, why))
                    elif typed.get("kind") == kind:
                        pairs.append((item, item_where))
                    else:
                        seen.append(_describe_doc(item, item_where))
                continue
            why = _almost(doc, kind)
            if why:
                almost.append("%s: %s" % (where, why))
            elif doc_kind == kind:
                pairs.append((doc, where))
            else:
                seen.append(_describe_doc(doc, where))
    if others is not None:
        others.extend(seen)
    if almost:
        raise ValueError("%d document(s) in %s look like a %s but are not one, so kubectl would create no %s "
                         "from them: %s" % (len(almost), path, kind, kind, "; ".join(almost)))
    if not pairs:
        listed = "; ".join(seen[:10]) + ("; and %d more" % (len(seen) - 10) if len(seen) > 10 else "")
        raise NoObjects("no %s (apiVersion %s) in %s: read %d file(s)%s" % (
            kind, API_VERSIONS[kind], path, len(files), ", holding %s" % listed if seen else ", holding no document"))
    return pairs


def _selector_terms(selector):
    terms = []
    for raw in (selector or "").split(","):
        term = raw.strip()
        if not term:
            continue
        for operator in ("!=", "==", "="):
            if operator in term:
                key, value = term.split(operator, 1)
                terms.append((key.strip(), "!=" if operator == "!=" else "=", value.strip()))
                break
        else:
            if " in " in term or " notin " in term or "(" in term:
                raise ValueError("label selector '%s': only equality terms (k=v, k!=v, k, !k) are "
                                 "supported for manifests" % selector)
            if term.startswith("!"):
                terms.append((term[1:].strip(), "absent", None))
            else:
                terms.append((term, "present", None))
    return terms


def labels_match(labels, selector):
    """Whether labels match an equality-based label selector ("a=b,c!=d,e,!f"), the way
    the apiserver applies labelSelector; used for manifests, where no apiserver filters."""
    labels = labels or {}
    for key, operator, value in _selector_terms(selector):
        if operator == "=" and labels.get(key) != value:
            return False
        if operator == "!=" and labels.get(key) == value:
            return False
        if operator == "present" and key not in labels:
            return False
        if operator == "absent" and key in labels:
            return False
    return True
