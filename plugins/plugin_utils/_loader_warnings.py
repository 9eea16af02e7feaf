# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""containerd's own warnings while it loads a config (the `level=warning` lines `config dump` prints on
stderr, as the gather keeps them): which setting each names, and which file sets it. Controller only.

Measured with 1.6.20, 1.7.24, 2.1.9, 2.2.9, 2.3.7 and 2.4.2: 2.x loads each plugin's table strictly and says
of every key it does not know `msg="Ignoring unknown key in TOML for plugin" key="containerd runtimes runc
runtime_engine" plugin=io.containerd.cri.v1.runtime` (keys removed in 2.0, such as `systemd_cgroup`,
`no_pivot`, `runtime_engine`, `registry.configs.*.tls`, migrated from a version 2 file's
`io.containerd.grpc.v1.cri`; on 2.4 `enable_cdi`, `cni.bin_dir`), once per level of a table it does not know
at all, and of a top-level key `msg="Ignoring unknown key in TOML" file=... key=plugin_dir row=4`; then
loads without them (exit 0). 1.x ignores an unknown key without a line, and warns of a version 1 file
(`containerd config version `1` has been deprecated`). 2.3's "Configuration migrated from version N" names
no setting: it is no finding."""

import re

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._nested import get_in
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as config_shapes

# key=value or key="quoted value" fields of a logrus text line.
_FIELD = re.compile(r'([A-Za-z_][A-Za-z0-9_.]*)=("(?:[^"\\]|\\.)*"|\S*)')
_IGNORED_KEY = "Ignoring unknown key in TOML for plugin"
_IGNORED_TOP_KEY = "Ignoring unknown key in TOML"  # outside plugins: names the file and the row
_DEPRECATED_VERSION = re.compile(r"config version `(\d+)` has been deprecated")
_CRI_V1_PREFIX = "io.containerd.cri.v1."


def fields(line):
    """{name: value} of a logrus text line (quotes and their escapes undone)."""
    out = {}
    for name, value in _FIELD.findall(line):
        if value.startswith('"'):
            value = re.sub(r'\\(.)', r'\1', value[1:-1])
        out[name] = value
    return out


def _older_names(plugin):
    """The plugin names a table of plugin may have been written under: containerd 2.x migrates
    io.containerd.grpc.v1.cri (and version 1's plugins.cri) into io.containerd.cri.v1.*."""
    if plugin.startswith(_CRI_V1_PREFIX):
        return (plugin, config_shapes.CRI_PLUGIN_V2, config_shapes.CRI_PLUGIN_V1)
    if plugin == config_shapes.CRI_PLUGIN_V2:
        return (plugin, config_shapes.CRI_PLUGIN_V1)
    return (plugin,)


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def dotted(parts):
    """A TOML dotted key of parts (a part such as a registry host quoted)."""
    return ".".join(p if _BARE_KEY.match(p) else '"%s"' % p for p in parts)


_MISSING = object()


def _where(docs, plugin, parts, named_file=None):
    """[({file, plugin (as written), key (its dotted path there)}, value)] of the merged files that set the key
    (plugin None: a top-level key; named_file: the file containerd names, when it does)."""
    out = []
    for path, doc in docs:
        if plugin is None:
            value = get_in(doc, *parts, missing=_MISSING)
            if value is not _MISSING and (named_file is None or named_file in (path, path.rsplit("/", 1)[-1])):
                out.append(({"file": path, "plugin": None, "key": dotted(parts)}, value))
            continue
        plugins = doc.get("plugins") if isinstance(doc.get("plugins"), dict) else {}
        for name in _older_names(plugin):
            value = get_in(plugins.get(name), *parts, missing=_MISSING)
            if value is not _MISSING:
                out.append(({"file": path, "plugin": name, "key": "plugins.\"%s\".%s" % (name, dotted(parts))}, value))
    return out


def _zero(value):
    """A Go zero value (or a table of them): what a key containerd no longer has would have meant unset.
    containerd 1.x's `config default` writes removed keys so (systemd_cgroup = false, no_pivot = false,
    runtime_engine = "", an untrusted_workload_runtime table of empty values): 2.x ignores them and loses nothing."""
    if isinstance(value, dict):
        return all(_zero(v) for v in value.values())
    return value in ("", 0, False, [])


def _loses_nothing(plugin, parts, value, loaded):
    """Whether containerd ignoring this value changes nothing (measured with 2.4.2): 2.4 has no enable_cdi and
    CDI is always on, so only enable_cdi = false is lost; a CNI bin_dir the loaded bin_dirs holds; a zero value."""
    if plugin == config_shapes.CRI_PLUGIN_V3 and parts == ["enable_cdi"]:
        return value is True
    if plugin == config_shapes.CRI_PLUGIN_V3 and parts == ["cni", "bin_dir"]:
        cni = get_in(((loaded or {}).get("plugins") or {}).get(plugin), "cni", "bin_dirs")
        if isinstance(cni, list) and value in cni:
            return True
    return _zero(value)


def _unversioned(docs, version):
    return [path for path, doc in docs if doc.get("version", 1) == version]


def read(lines, docs, loaded=None):
    """One entry per setting containerd warns about while loading: {kind, plugin, key (the setting's dotted
    path under its plugin, or its name), files (_where's), line}.

    lines: the gather's dump_warnings; docs: [(path, parsed doc)] of the merged files in containerd's order;
    loaded: the parsed dump. Of an unknown table containerd names every level: only the outermost one is kept;
    a key whose every value loses nothing when ignored (_loses_nothing) is left out."""
    ignored = []
    out = []
    for line in lines or []:
        if "level=warning" not in line:
            continue
        found = fields(line)
        message = found.get("msg", "")
        if message == _IGNORED_KEY and found.get("key") and found.get("plugin"):
            ignored.append((found["plugin"], found["key"].split(" "), line, None))
            continue
        if message == _IGNORED_TOP_KEY and found.get("key"):
            ignored.append((None, found["key"].split(" "), line, found.get("file")))
            continue
        deprecated = _DEPRECATED_VERSION.search(message)
        if deprecated:
            version = int(deprecated.group(1))
            files = [{"file": p, "plugin": None, "key": "version"} for p in _unversioned(docs, version)]
            out.append({"kind": "deprecated_version", "plugin": None, "key": "version", "files": files,
                        "version": version, "line": line})
    for plugin, parts, line, named_file in ignored:
        if any(p == plugin and len(o) < len(parts) and parts[:len(o)] == o for p, o, _l, _f in ignored):
            continue  # an outer table of it is unknown too
        found = _where(docs, plugin, parts, named_file)
        if found and all(_loses_nothing(plugin, parts, value, loaded) for _f, value in found):
            continue
        out.append({"kind": "ignored_key", "plugin": plugin, "key": dotted(parts), "parts": parts,
                    "files": [f for f, _value in found], "line": line})
    return out
