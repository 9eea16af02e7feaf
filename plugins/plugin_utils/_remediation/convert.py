# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A config file as the node's containerd reads it (the fix of ignored_plugin_section).

Measured with the real binaries: containerd 1.x reads only version 2's ``io.containerd.grpc.v1.cri``
(1.6 silently ignores a version 3 file's ``io.containerd.cri.v1.*``, 1.7 refuses the file); 2.x ignores
a version 1 file's ``plugins.cri`` and a version 3 file's ``io.containerd.grpc.v1.cri`` runtimes. So:

- version 1 -> 2: plugin ids become the URIs the node's containerd knows (from its ``config dump`` and
  ``config default``), in ``plugins``, ``disabled_plugins`` and ``required_plugins``;
- version 3 -> 2 (1.x): the ``cri.v1.runtime``, ``cri.v1.images`` and gRPC sections fold back into one
  ``io.containerd.grpc.v1.cri`` (the reverse of containerd 2.x's own migration);
- old plugin name in a version 3+ file (2.x): its keys move to where 2.x reads them.

A key the mapping does not know is refused, never dropped. The real containerd proves the result
(the staged load) before anything is written."""

import copy

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.refusal import Refusal
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.toml_edit import ensure_table, get_in

CRI_IMAGES = shapes.CRI_IMAGES_PLUGIN
# Keys of the version 2 CRI section that version 3 keeps under io.containerd.grpc.v1.cri (the server).
SERVER_KEYS = ("disable_tcp_service", "stream_server_address", "stream_server_port", "stream_idle_timeout",
               "enable_tls_streaming", "x509_key_pair_streaming")
IMAGE_KEYS = shapes.IMAGE_KEYS
_PLUGIN_LISTS = ("disabled_plugins", "required_plugins")


def _put(doc, path, value):
    ensure_table(doc, *path[:-1])[path[-1]] = copy.deepcopy(value)


def _pop(doc, path):
    parent = get_in(doc, *path[:-1]) if len(path) > 1 else doc
    if isinstance(parent, dict) and path[-1] in parent:
        value = parent.pop(path[-1])
        if len(path) > 1 and not parent:
            _pop(doc, path[:-1])
        return value, True
    return None, False


def known_plugin_uris(*docs):
    """The plugin URIs in these documents (the node's dump and ``config default``)."""
    uris = set()
    for doc in docs:
        plugins = doc.get("plugins") if isinstance(doc, dict) else None
        uris.update(plugins or {})
        for key in _PLUGIN_LISTS:
            uris.update(u for u in doc.get(key) or [] if isinstance(u, str) and u.count(".") >= 3)
    return uris


def _uri_of(plugin_id, uris, source):
    if plugin_id.count(".") >= 3:
        return plugin_id
    found = sorted(u for u in uris if u.rsplit(".", 1)[-1] == plugin_id)
    if len(found) != 1:
        raise Refusal("%s is version 1 and names plugin %r, which this containerd knows %s; it cannot be converted "
                      "to version 2 faithfully. Nothing was written." % (
                          source, plugin_id, "as %s" % " and ".join(found) if found else "under no URI"))
    return found[0]


def v1_to_v2(doc, uris, source):
    """A version 1 document in version 2 terms: plugin ids become URIs."""
    out = copy.deepcopy(doc)
    out["version"] = 2
    if isinstance(doc.get("plugins"), dict):
        out["plugins"] = dict((_uri_of(k, uris, source), copy.deepcopy(v)) for k, v in doc["plugins"].items())
    for key in _PLUGIN_LISTS:
        if isinstance(doc.get(key), list):
            out[key] = [_uri_of(p, uris, source) if isinstance(p, str) else p for p in doc[key]]
    return out


def v3_to_v2(doc, source):
    """A version 3+ document as containerd 1.x reads it: one io.containerd.grpc.v1.cri section."""
    out = copy.deepcopy(doc)
    out["version"] = 2
    plugins = out.get("plugins") if isinstance(out.get("plugins"), dict) else {}
    runtime = plugins.pop(shapes.CRI_PLUGIN_V3, None) or {}
    images = plugins.pop(CRI_IMAGES, None) or {}
    server = plugins.pop(shapes.CRI_PLUGIN_V2, None) or {}
    cri = {}
    for key, value in server.items():
        if key not in SERVER_KEYS:
            raise Refusal("%s is version %s and sets %s.%s, which version 3 does not read there; it cannot be "
                          "converted faithfully. Nothing was written." % (source, doc.get("version"),
                                                                          shapes.CRI_PLUGIN_V2, key))
        cri[key] = copy.deepcopy(value)
    for key, value in runtime.items():
        if key in SERVER_KEYS or key in ("sandbox_image", "registry", "image_decryption"):
            raise Refusal("%s sets %s.%s, which is not a runtime key; it cannot be converted faithfully. Nothing was "
                          "written." % (source, shapes.CRI_PLUGIN_V3, key))
        cri[key] = copy.deepcopy(value)
    images = copy.deepcopy(images)
    for v2_path, v3_path in IMAGE_KEYS:
        value, found = _pop(images, v3_path)
        if found:
            _put(cri, v2_path, value)
    if images:
        raise Refusal("%s sets %s which containerd 1.x has no version 2 key for (%s); it cannot be converted "
                      "faithfully. Nothing was written." % (source, CRI_IMAGES, ", ".join(sorted(images))))
    if cri:
        plugins[shapes.CRI_PLUGIN_V2] = cri
    if plugins:
        out["plugins"] = plugins
    return out


def old_name_to_v3(doc, source):
    """A version 3+ document whose CRI keys sit under io.containerd.grpc.v1.cri, moved where 2.x reads
    them: runtime keys to io.containerd.cri.v1.runtime, image keys to io.containerd.cri.v1.images."""
    out = copy.deepcopy(doc)
    plugins = out["plugins"]
    old = plugins.pop(shapes.CRI_PLUGIN_V2)
    server = dict((k, v) for k, v in old.items() if k in SERVER_KEYS)
    rest = dict((k, v) for k, v in old.items() if k not in SERVER_KEYS)
    images = {}
    for v2_path, v3_path in IMAGE_KEYS:
        value, found = _pop(rest, v2_path)
        if found:
            _put(images, v3_path, value)
    for plugin, moved in ((shapes.CRI_PLUGIN_V3, rest), (CRI_IMAGES, images)):
        if not moved:
            continue
        target = plugins.setdefault(plugin, {})
        clash = sorted(k for k in moved if k in target)
        if clash:
            raise Refusal("%s sets %s under both %s and %s; which one the user means is unknown: keep %s under %s "
                          "only, where this containerd reads it. Nothing was written." % (
                              source, ", ".join(clash), shapes.CRI_PLUGIN_V2, plugin, ", ".join(clash), plugin))
        target.update(moved)
    if server:
        plugins[shapes.CRI_PLUGIN_V2] = server
    return out


def needs_conversion(doc, major):
    """Why containerd `major`.x ignores part of this document, or None."""
    version = shapes.config_version(doc)
    plugins = doc.get("plugins") if isinstance(doc.get("plugins"), dict) else {}
    if major < 2 and version >= 3:
        return "version %d, which containerd 1.x does not read (1.6 ignores its CRI section, 1.7 refuses it)" % version
    if version == 1 and (plugins or any(doc.get(k) for k in _PLUGIN_LISTS)):
        return "version 1 (plugin ids such as plugins.cri)%s" % (
            ", whose CRI section containerd 2.x ignores" if major >= 2 else "")
    if major >= 2 and version >= 3 and isinstance(plugins.get(shapes.CRI_PLUGIN_V2), dict) and \
            any(k not in SERVER_KEYS for k in plugins[shapes.CRI_PLUGIN_V2]):
        return "version %d with CRI keys under the old plugin name %s, which containerd 2.x ignores" % (
            version, shapes.CRI_PLUGIN_V2)
    return None


def as_read_by(doc, major, uris, source):
    """The document converted to what containerd `major`.x reads as written: version 2 on 1.x; on 2.x,
    version 2 from version 1, and the old plugin name moved in version 3+."""
    version = shapes.config_version(doc)
    if version == 1:
        doc = v1_to_v2(doc, uris, source)
        version = 2
    if major < 2 and version >= 3:
        return v3_to_v2(doc, source)
    if major >= 2 and version >= 3 and needs_conversion(doc, major):
        return old_name_to_v3(doc, source)
    return doc
