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

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

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


def normalize_runtimeclass(obj, source):
    """A RuntimeClass object (dict) as {name, handler, overhead, node_selector, tolerations, source}.

    overhead is {"podFixed": {...}} or None when the object sets none.
    """
    name = _object_name(obj, "RuntimeClass", source)
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
    }


def normalize_node(obj, source=None):
    """A Node object (dict) as {name, labels, runtime_handlers, runtime_handler_features,
    allocatable, taints, unschedulable, kubelet_version, container_runtime_version, source}.

    runtime_handlers is the sorted list of named handlers in status.runtimeHandlers, without
    the "" entry (the default runtime, which no RuntimeClass can name); None when the status
    has no runtimeHandlers key (Kubernetes < 1.30 or the feature is off: not reported).
    runtime_handler_features maps every entry, "" included, to its features (None likewise).
    """
    name = _object_name(obj, "Node", source)
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
        "source": source,
    }


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


def _documents(path):
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError("cannot read manifest %s: %s" % (path, exc))
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
    """The manifest files for a src: the file itself, or a directory's *.yaml/*.yml/*.json
    (sorted, not recursive)."""
    if os.path.isdir(path):
        return [
            os.path.join(path, name) for name in sorted(os.listdir(path))
            if name.endswith(MANIFEST_SUFFIXES) and os.path.isfile(os.path.join(path, name))
        ]
    if os.path.isfile(path):
        return [path]
    raise ValueError("manifest path %s does not exist" % path)


def load_manifests(path, kind):
    """Objects of one kind (e.g. "RuntimeClass", "Node") from a file or directory.

    Reads multi-document YAML and JSON, unwraps `kind: List` and `<kind>List` items and
    skips other kinds. Returns (obj, source) pairs; source names the file, and the
    document and item number when there is more than one. Bad YAML raises ValueError.
    """
    pairs = []
    for filename in manifest_files(path):
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
                for item_index, item in enumerate(items, 1):
                    # Items of a <kind>List may omit their kind, as the apiserver's do.
                    item_kind = item.get("kind") if isinstance(item, dict) else kind
                    if item_kind == kind or (item_kind is None and doc_kind != "List"):
                        pairs.append((item, "%s, item %d" % (where, item_index)))
            elif doc_kind == kind:
                pairs.append((doc, where))
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
