# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether the loaded config carries what a file nothing imports says: a generator (Talos merges
its .part files into cri.toml, microk8s renders its template) may have merged it already, and then
the file is no orphan. Two tests: the settings of the file found in the loaded config (not_carried),
and, where that fails, what containerd's own load of the file as an import changes in the loaded
config (load_changes: keys containerd drops or renames on a version migration change nothing).
Pure logic on parsed TOML."""

import re

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._nested import get_in
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._config_shapes import GENERATOR_PLACEHOLDER as _PLACEHOLDER
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._config_shapes import (
    CRI_IMAGES_PLUGIN as CRI_IMAGES, IMAGE_KEYS)

# Keys that say how a file is read, not what it sets.
_NOT_SETTINGS = ("version", "imports")
# A generator's placeholder: ${SNAP_DATA}, {{ .NodeConfig }}; the value is whatever it substituted.
_MAX_REPORTED = 10
_ABSENT = object()


def is_fragment(doc):
    """A containerd config fragment: a top-level `version` or a `plugins` table."""
    return isinstance(doc, dict) and ("version" in doc or isinstance(doc.get("plugins"), dict))


def _leaves(node, prefix):
    if isinstance(node, dict) and node:
        for key in sorted(node):
            yield from _leaves(node[key], prefix + (key,))
    else:
        yield prefix, node


def _same(want, have):
    if isinstance(want, list) and isinstance(have, list):
        return len(want) == len(have) and all(_same(w, h) for w, h in zip(want, have))
    if isinstance(want, str) and _PLACEHOLDER.search(want):
        pattern, position = "", 0
        for match in _PLACEHOLDER.finditer(want):
            pattern += re.escape(want[position:match.start()]) + ".*"
            position = match.end()
        pattern += re.escape(want[position:])
        return isinstance(have, str) and re.fullmatch(pattern, have, re.DOTALL) is not None
    if isinstance(want, dict) and not want:
        return True  # an empty table sets nothing
    return want == have


def _carried(loaded, path, value):
    have = get_in(loaded, *path, missing=_ABSENT)
    if have is not _ABSENT and _same(value, have):
        return True
    if len(path) > 2 and path[0] == "plugins":
        return any(_same_at(loaded, where, value) for where in _migrated(path[2:], loaded))
    return False


def _migrated(rest, loaded):
    """Where containerd 2.x keeps a CRI key of a version 2 file, read in the loaded config: the same
    key under any plugin (runtimes move to io.containerd.cri.v1.runtime), image keys under
    io.containerd.cri.v1.images (the remediation's mapping), cni.bin_dir as one of cni.bin_dirs
    (measured with 2.1.9 on microk8s' template)."""
    plugins = loaded.get("plugins") if isinstance(loaded.get("plugins"), dict) else {}
    out = [("plugins", name) + rest for name in plugins]
    for v2_path, v3_path in IMAGE_KEYS:
        if rest[:len(v2_path)] == v2_path:
            out.append(("plugins", CRI_IMAGES) + v3_path + rest[len(v2_path):])
    if rest == ("cni", "bin_dir"):
        out.extend(("plugins", name, "cni", "bin_dirs", "*") for name in plugins)
    return out


def _same_at(loaded, path, value):
    if path[-1] == "*":  # one element of a list
        have = get_in(loaded, *path[:-1])
        return isinstance(have, list) and any(_same(value, item) for item in have)
    have = get_in(loaded, *path, missing=_ABSENT)
    return have is not _ABSENT and _same(value, have)


def not_carried(doc, loaded):
    """(count, [dotted keys, at most 10]) of the settings of doc the loaded config does not carry."""
    missing = []
    for path, value in _leaves(dict((k, v) for k, v in doc.items() if k not in _NOT_SETTINGS), ()):
        if not path or _carried(loaded or {}, path, value):
            continue
        missing.append(_dotted(path))
    return len(missing), missing[:_MAX_REPORTED]


def _dotted(path):
    return ".".join('"%s"' % k if "." in k else k for k in path)


def load_changes(with_fragment, loaded):
    """What loading the fragment changes: (changed, substituted) dotted keys, each sorted, comparing
    the dump of the config with the fragment imported (with_fragment) and the node's own dump (loaded),
    both without their top-level imports. A key whose value with the fragment is a generator's
    placeholder (${SNAP_DATA}, {{ .X }}) that the loaded value fills is substituted, not changed."""
    def settings(doc):
        doc = doc if isinstance(doc, dict) else {}
        return dict(_leaves(dict((k, v) for k, v in doc.items() if k != "imports"), ()))
    mine, theirs = settings(with_fragment), settings(loaded)
    changed, substituted = [], []
    for path in sorted(set(mine) | set(theirs)):
        if not path:
            continue
        if path in mine and path in theirs and mine[path] == theirs[path]:
            continue
        if path in mine and path in theirs and _has_placeholder(mine[path]) and _same(mine[path], theirs[path]):
            substituted.append(_dotted(path))
        else:
            changed.append(_dotted(path))
    return changed, substituted


def _has_placeholder(value):
    if isinstance(value, list):
        return any(_has_placeholder(item) for item in value)
    return isinstance(value, str) and _PLACEHOLDER.search(value) is not None


def has_placeholders(doc):
    """Whether any string of doc is a generator's placeholder: the mark of a template."""
    return any(_has_placeholder(value) for _path, value in _leaves(doc if isinstance(doc, dict) else {}, ()))


def load_verdict(load, loaded, parse):
    """What the node's load of a fragment says, for the check: {state, why, changed, changed_count,
    substituted}. state is ``loaded`` (changed lists what it would change), ``refused`` (containerd
    will not load the config with it), ``error`` (the load did not run to the end) or ``not_loaded``.
    parse(text) -> document, raising ValueError for a dump it cannot read."""
    if not load:
        return {"state": "not_loaded", "why": "not loaded by containerd"}
    if load.get("error"):
        return {"state": "error", "why": load["error"]}
    if load.get("rc") != 0:
        return {"state": "refused", "why": "containerd refuses the config with it imported (exit %s): %s"
                % (load.get("rc"), load.get("cause") or "no cause printed")}
    try:
        doc = parse(load.get("dump") or "")
    except ValueError as exc:
        return {"state": "error", "why": "its dump cannot be read: %s" % exc}
    changed, substituted = load_changes(doc, loaded)
    return {"state": "loaded", "changed": changed[:_MAX_REPORTED], "changed_count": len(changed),
            "substituted": substituted[:_MAX_REPORTED], "why": None}
