# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure logic over a parsed containerd config (a dict from a TOML parser), on the controller.

Works on every config version containerd reads: version 1 (``plugins.cri``),
version 2 (``plugins."io.containerd.grpc.v1.cri"``) and version 3/4
(``plugins."io.containerd.cri.v1.runtime"``), and says which plugin each containerd
release reads. The node side reads a config as text: module_utils/_node_config_text.
"""

import re

CRI_PLUGIN_V1 = "cri"
CRI_PLUGIN_V2 = "io.containerd.grpc.v1.cri"
CRI_PLUGIN_V3 = "io.containerd.cri.v1.runtime"
CRI_PLUGIN_NAMES = (CRI_PLUGIN_V3, CRI_PLUGIN_V2, CRI_PLUGIN_V1)
# Names in `disabled_plugins` that stop containerd serving CRI, by major version (measured with real
# daemons and crictl, 1.6, 1.7, 2.1, 2.3): the CRI service itself (its id `cri` in a version 1 file, its URI in every
# version), and on 2.x either plugin it depends on, which then fails to load ("unable to load CRI runtime
# service plugin dependency"). 1.x has no io.containerd.cri.v1.* plugins: disabling them changes nothing.
CRI_IMAGES_PLUGIN = "io.containerd.cri.v1.images"
_CRI_SERVING = {1: (CRI_PLUGIN_V1, CRI_PLUGIN_V2), 2: (CRI_PLUGIN_V1, CRI_PLUGIN_V2, CRI_PLUGIN_V3, CRI_IMAGES_PLUGIN)}
# (path in the version 2 CRI section, path in CRI_IMAGES_PLUGIN; what a version 2 to 3 conversion moves)
IMAGE_KEYS = (
    (("sandbox_image",), ("pinned_images", "sandbox")),
    (("containerd", "snapshotter"), ("snapshotter",)),
    (("containerd", "disable_snapshot_annotations"), ("disable_snapshot_annotations",)),
    (("containerd", "discard_unpacked_layers"), ("discard_unpacked_layers",)),
    (("registry",), ("registry",)),
    (("image_decryption",), ("image_decryption",)),
    (("max_concurrent_downloads",), ("max_concurrent_downloads",)),
    (("image_pull_progress_timeout",), ("image_pull_progress_timeout",)),
    (("image_pull_with_sync_fs",), ("image_pull_with_sync_fs",)),
    (("stats_collect_period",), ("stats_collect_period",)),
)


class ConfigShapeError(ValueError):
    """The document parsed as TOML but is not shaped like a containerd config."""


def config_version(doc, default=1):
    """The ``version`` key of a config document; containerd treats a missing one as 1."""
    version = doc.get("version", default)
    if isinstance(version, bool) or not isinstance(version, int):
        raise ConfigShapeError("'version' must be an integer, got %r" % (version,))
    return version


def cri_disabled_by(loaded_disabled, file_lists=(), containerd_major=None):
    """(names, [(path, names)]): the entries of the loaded config's `disabled_plugins` that leave containerd
    without its CRI service (every name that can, when the major version is unknown), and each merged file
    that sets one (file_lists: [(path, that file's disabled_plugins)]; containerd appends every file's list,
    and 2.x dumps a version 1 file's `cri` as its URI)."""
    serving = _CRI_SERVING[1] if containerd_major is not None and containerd_major < 2 else _CRI_SERVING[2]
    names = [name for name in loaded_disabled or [] if name in serving]
    files = []
    for path, listed in file_lists:
        mine = [n for n in listed or [] if n in names or (n == CRI_PLUGIN_V1 and CRI_PLUGIN_V2 in names)]
        if mine:
            files.append((path, mine))
    return names, files


def names_line(names):
    """`["a", "b"]`: a list of plugin names as a config writes it, for messages."""
    return "[%s]" % ", ".join('"%s"' % n for n in names)


def disabled_plugins(doc):
    """The string entries of a config's top-level `disabled_plugins` ([] when it is not a list: containerd
    refuses such a config, and config_refused says so)."""
    value = doc.get("disabled_plugins")
    return [name for name in value if isinstance(name, str)] if isinstance(value, list) else []


def _table(value, where):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigShapeError("%s must be a table, got %s" % (where, type(value).__name__))
    return value


def cri_sections(doc):
    """Yield (plugin_name, plugin_table) for every CRI plugin section present in doc."""
    plugins = _table(doc.get("plugins"), "'plugins'")
    for name in CRI_PLUGIN_NAMES:
        if name in plugins:
            yield name, _table(plugins[name], "plugins.%r" % name)


def _runtime_summary(name, table):
    table = _table(table, "runtime %r" % name)
    options = _table(table.get("options"), "runtime %r options" % name)
    systemd = options.get("SystemdCgroup")
    return {
        "name": name,
        "runtime_type": table.get("runtime_type", ""),
        "runtime_path": table.get("runtime_path", ""),
        "binary_name": options.get("BinaryName", "") or "",
        "systemd_cgroup": systemd if isinstance(systemd, bool) else None,
        "cdi_devices": bool(table.get("cdi_devices")) if "cdi_devices" in table else None,
    }


def runtimes_by_plugin(doc):
    """{plugin_name: {runtime_name: summary}} for every CRI plugin section in doc."""
    found = {}
    for plugin, section in cri_sections(doc):
        if "containerd" not in section:
            continue  # 2.x keeps a runtime-less io.containerd.grpc.v1.cri for the gRPC service
        containerd = _table(section.get("containerd"), "plugins.%r.containerd" % plugin)
        runtimes = _table(containerd.get("runtimes"), "plugins.%r.containerd.runtimes" % plugin)
        found[plugin] = dict((name, _runtime_summary(name, table)) for name, table in runtimes.items())
    return found


def _first(sections, key, default=None):
    """Value of key in the first CRI section (v3 name first) that sets it."""
    for section in sections:
        if key in section:
            return section[key]
    return default


def summarize(doc):
    """Summary of a loaded config: what the CRI plugin will actually use.

    ``runtimes`` merges the runtimes of every CRI plugin section; a name found
    under both the v3 and the v2 plugin names keeps the v3 entry, which is the
    one a 2.x containerd uses.
    """
    if not isinstance(doc, dict):
        raise ConfigShapeError("a containerd config must be a TOML table")
    version = config_version(doc)
    by_plugin = runtimes_by_plugin(doc)
    runtimes = {}
    for plugin in reversed(CRI_PLUGIN_NAMES):
        for name, summary in by_plugin.get(plugin, {}).items():
            runtimes[name] = dict(summary, plugin=plugin)
    sections = [section for _name, section in cri_sections(doc)]
    containerd_tables = [_table(s.get("containerd"), "containerd") for s in sections]
    imports = doc.get("imports", [])
    if not isinstance(imports, list) or not all(isinstance(item, str) for item in imports):
        raise ConfigShapeError("'imports' must be a list of strings")
    cdi_dirs = _first(sections, "cdi_spec_dirs", [])
    return {
        "version": version,
        "imports": list(imports),
        "disabled_plugins": disabled_plugins(doc),
        "cri_plugins": sorted(by_plugin),
        "runtimes": runtimes,
        "runtime_names": sorted(runtimes),
        "default_runtime_name": _first(containerd_tables, "default_runtime_name", ""),
        "enable_cdi": bool(_first(sections, "enable_cdi", False)),
        "cdi_spec_dirs": list(cdi_dirs) if isinstance(cdi_dirs, list) else [],
    }


# containerd reads the runtimes of a file from the plugin names that match the file's config
# version. Measured with containerd 1.6.20, 1.7.24, 2.1.9 and 2.3.4, one runtime per plugin name
# and every combination (tests/integration/test_audit_checks_23.py repeats the 2.3.4 ones):
# 1.x reads one name per version (and 1.7 refuses version 3); 2.0-2.2 merge the files first and
# read the merged config by the root file's version; 2.3 migrates each file to version 4 on its own
# and reads every older name of a version 1-3 file, but not io.containerd.grpc.v1.cri of a version
# 4 one. plugins.cri is read by 2.x in every version it accepts but 1 (2.1).
_PLUGIN_READ_BY = {
    (1, 1): (CRI_PLUGIN_V1,),
    (1, 2): (CRI_PLUGIN_V2,),
    (1, 3): (CRI_PLUGIN_V2,),  # 1.6 only; 1.7 refuses version 3 outright
    (2, 1): (CRI_PLUGIN_V3,),
    (2, 2): (CRI_PLUGIN_V2, CRI_PLUGIN_V1, CRI_PLUGIN_V3),
    (2, 3): (CRI_PLUGIN_V3, CRI_PLUGIN_V1),
    (2, 4): (CRI_PLUGIN_V3,),
    (23, 1): (CRI_PLUGIN_V3, CRI_PLUGIN_V2, CRI_PLUGIN_V1),
    (23, 2): (CRI_PLUGIN_V3, CRI_PLUGIN_V2, CRI_PLUGIN_V1),
    (23, 3): (CRI_PLUGIN_V3, CRI_PLUGIN_V2, CRI_PLUGIN_V1),
    (23, 4): (CRI_PLUGIN_V3, CRI_PLUGIN_V1),
}
# Older names whose runtimes the migration of a file of that version replaces by the runtimes
# table of a newer name, when the same config has one (even empty): {old: (newer, ...)}.
_REPLACED_BY = {
    (2, 2): {CRI_PLUGIN_V2: (CRI_PLUGIN_V3,)},
    (23, 1): {CRI_PLUGIN_V1: (CRI_PLUGIN_V2, CRI_PLUGIN_V3), CRI_PLUGIN_V2: (CRI_PLUGIN_V3,)},
    (23, 2): {CRI_PLUGIN_V2: (CRI_PLUGIN_V3,)},
    (23, 3): {CRI_PLUGIN_V2: (CRI_PLUGIN_V3,)},
}


# A generator's placeholder in a config it renders: ${SNAP_DATA} (microk8s' template), {{ .NodeConfig }} or
# {% ... %} (Go and Jinja2 templates: k3s, kubespray). What it stands for is whatever the generator substituted.
GENERATOR_PLACEHOLDER = re.compile(r"\$\{[^}]*\}|\{\{.*?\}\}|\{%.*?%\}", re.S)


# From 2.3 containerd migrates each file it merges by that file's own version; 2.0-2.2 merge the files
# first and migrate the result by the root file's version (measured on 2.1.9 and 2.3.4).
PER_FILE_MIGRATION = (2, 3)


def migrates_per_file(version):
    """Whether a containerd release (major, minor) migrates each merged file on its own."""
    return tuple(version) >= PER_FILE_MIGRATION


def _release(containerd_major, containerd_minor):
    if containerd_major < 2:
        return 1
    return 23 if containerd_minor is not None and migrates_per_file((containerd_major, containerd_minor)) else 2


def _key(containerd_major, file_version, containerd_minor):
    release = _release(containerd_major, containerd_minor)
    key = (release, max(1, file_version))
    if key not in _PLUGIN_READ_BY:
        key = (release, max(v for r, v in _PLUGIN_READ_BY if r == release))
    return key


def plugins_read(containerd_major, file_version, containerd_minor=None):
    """CRI plugin names whose runtimes containerd of that release reads from such a file.
    Without a minor, 2.x means 2.0-2.2."""
    return _PLUGIN_READ_BY[_key(containerd_major, file_version, containerd_minor)]


def replaced_by(containerd_major, file_version, containerd_minor=None):
    """{older plugin: newer plugins}: the migration of such a file keeps the older name's runtimes
    only when the config has no runtimes table under one of the newer names."""
    return _REPLACED_BY.get(_key(containerd_major, file_version, containerd_minor), {})


def ignored_plugin_reason(containerd_major, file_version, plugin, containerd_minor=None):
    """Why containerd ignores runtimes written under plugin in a file of file_version, or None."""
    read = plugins_read(containerd_major, file_version, containerd_minor)
    if plugin in read:
        return None
    if containerd_major < 2:
        release = "1.x"
    elif _release(containerd_major, containerd_minor) == 23:
        release = "2.3+"
    else:
        release = "2.x" if containerd_minor is None else "2.0-2.2"
    return (
        "containerd %s reads the runtimes of a version %d file from plugins.%s, "
        "not plugins.%s" % (release, max(1, file_version), " / plugins.".join('"%s"' % p for p in read), '"%s"' % plugin)
    )
