# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan the files that register runtimes with a node's containerd, on the controller.

The main config starts from what the node has (its file, or `containerd config default`,
or `containerd config migrate` of an older file) and is edited, never assembled by hand.

Measured with containerd 1.6, 1.7 and 2.1, and the reason the plan differs by major:
- 2.x merges drop-ins key by key, so each runtime gets a drop-in of its own;
- 1.x lets each imported file replace a plugin's *whole* section (containerd#5837), so two
  drop-ins that each add one runtime keep only the last one, and lose runc too. On 1.x all
  runtimes go into one drop-in that carries the complete CRI plugin section.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import containerd_config as cc
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import toml_document

MANAGED_MARKER = "# Managed by gpurt.runtime_gate.containerd_runtime"
_RUNTIME_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DEFAULT_RUNTIME_TYPE = "io.containerd.runc.v2"
V1_CRI_DROPIN = "runtime-gate-cri"


class PlanError(ValueError):
    pass


def target_version(containerd_major, default_text):
    """The config version this containerd writes: 2 for 1.x, `config default`'s for 2.x+."""
    if containerd_major < 2:
        return 2
    version = cc.top_level_version(default_text or "")
    if version is None:
        raise PlanError("'containerd config default' printed no version line")
    return version


def cri_plugin_for(version):
    return cc.CRI_PLUGIN_V2 if version <= 2 else cc.CRI_PLUGIN_V3


def _parse(text, source):
    try:
        return toml_document.loads(text, source)
    except toml_document.TomlError as exc:
        raise PlanError(str(exc))


def choose_base(existing_text, defaults, migrated_text, containerd_major, version):
    """(doc, base, warnings): what the main config is edited from, and why. defaults is the
    parsed `containerd config default`; a copy of it is returned, since the plan edits it."""
    if existing_text is None:
        return copy.deepcopy(defaults), "default", []
    try:
        existing = toml_document.loads(existing_text, "the existing config")
        existing_version = cc.config_version(existing)
    except (toml_document.TomlError, cc.ConfigShapeError) as exc:
        return (copy.deepcopy(defaults), "default",
                ["the existing config is unusable (%s); started from containerd config default" % exc])
    if existing_version == version:
        return existing, "existing", []
    if containerd_major >= 2 and existing_version < version:
        if migrated_text is None:
            raise PlanError("the existing config is version %d; run 'containerd config migrate' on it first"
                            % existing_version)
        migrated = _parse(migrated_text, "containerd config migrate")
        # The migration ran on a copy without imports (it would inline them); keep the entries.
        if existing.get("imports"):
            migrated["imports"] = list(existing["imports"])
        return (migrated, "migrated",
                ["migrated the version %d config to version %d with containerd config migrate"
                 % (existing_version, version)])
    return (copy.deepcopy(defaults), "default",
            ["the existing config is version %d, which containerd %d.x does not read as written; started "
             "from containerd config default (the old file is kept as a backup)" % (existing_version, containerd_major)])


def normalize_runtimes(runtimes, systemd_cgroup):
    """Validated runtime specs with defaults filled in; PlanError on bad input."""
    out = []
    seen = set()
    for index, spec in enumerate(runtimes or []):
        if not isinstance(spec, dict) or not spec.get("name"):
            raise PlanError("runtime #%d needs a name" % (index + 1))
        name = spec["name"]
        if not _RUNTIME_NAME.match(name) or len(name) > 63:
            raise PlanError("runtime name %r is not a DNS label, which RuntimeClass handlers must be" % name)
        if name in seen:
            raise PlanError("runtime %r is listed twice" % name)
        if name == "runc":
            raise PlanError("runc is kept from the node's config; do not list it")
        seen.add(name)
        options = dict(spec.get("options") or {})
        if spec.get("binary_name"):
            options["BinaryName"] = spec["binary_name"]
        cgroup = spec.get("systemd_cgroup", systemd_cgroup)
        if cgroup is not None:
            options["SystemdCgroup"] = bool(cgroup)
        table = dict(spec.get("extra") or {})
        table["runtime_type"] = spec.get("runtime_type") or DEFAULT_RUNTIME_TYPE
        if options:
            table["options"] = options
        out.append({"name": name, "table": table, "cdi": bool(spec.get("cdi"))})
    return out


def _section(doc, *keys):
    node = doc
    for key in keys:
        value = node.get(key)
        if not isinstance(value, dict):
            value = {}
            node[key] = value
        node = value
    return node


def drop_ignored_sections(doc, containerd_major, version, keep):
    """Remove CRI sections containerd does not read for this version (they only mislead
    readers of the file); returns what was removed and which runtimes it held."""
    plugins = doc.get("plugins")
    if not isinstance(plugins, dict):
        return []
    read = cc.plugins_read(containerd_major, version)
    notes = []
    for name in cc.CRI_PLUGIN_NAMES:
        if name == keep or name in read or not isinstance(plugins.get(name), dict):
            continue
        section = plugins[name]
        held = sorted(((section.get("containerd") or {}).get("runtimes") or {}).keys())
        if name == cc.CRI_PLUGIN_V1:
            del plugins[name]  # 1.x refuses a plugins.cri key in a version 2+ file
            where = 'plugins.%s' % name
        elif "containerd" in section:
            del section["containerd"]
            if not section:
                del plugins[name]
            where = 'plugins."%s".containerd' % name
        else:
            continue
        notes.append("removed %s, which containerd %d.x ignores in a version %d file%s" % (
            where, containerd_major, version, " (it held runtimes %s, never loaded)" % ", ".join(held) if held else ""))
    return notes


def _imports_with(existing, pattern, dropin_dir):
    """Our pattern last; entries for other dirs kept (they load files of others). The role
    owns how its drop-in dir is imported, so older entries for that dir are replaced."""
    return [p for p in existing if os.path.dirname(p) != dropin_dir.rstrip("/")] + [pattern]


def _header(text):
    return "%s; edits here are overwritten.\n%s" % (MANAGED_MARKER, text)


def plan(existing_text, default_text, containerd_major, runtimes, dropin_dir, migrated_text=None,
         dropin_glob="*.toml", dropin_prefix="99-", dropin_suffix=".toml", default_runtime_name="runc",
         systemd_cgroup=None, cri_plugin=None, staged_dropin_dir=None, existing_files=None, containerd_minor=None):
    """The files to write: main config and drop-ins, with the import pattern that loads them.

    existing_files: the ``files`` a containerd_config_info run reported. Drop-ins this role
    wrote earlier and no longer plans are listed in ``stale``; other files already in the
    drop-in dir are staged next to the planned ones, since the real glob will load them too.
    """
    version = target_version(containerd_major, default_text)
    plugin = cri_plugin or cri_plugin_for(version)
    specs = normalize_runtimes(runtimes, systemd_cgroup)
    names = [s["name"] for s in specs]
    cdi = [s["name"] for s in specs if s["cdi"]]
    if cdi and containerd_major == 1 and containerd_minor is not None and containerd_minor < 7:
        raise PlanError("runtime(s) %s need CDI, which containerd 1.%d does not have (enable_cdi came in 1.7)"
                        % (", ".join(cdi), containerd_minor))
    if default_runtime_name not in ["runc"] + names:
        raise PlanError("default_runtime_name %r is neither runc nor a runtime being registered" % default_runtime_name)
    defaults = _parse(default_text, "containerd config default")
    doc, base, warnings = choose_base(existing_text, defaults, migrated_text, containerd_major, version)
    doc["version"] = version
    warnings += drop_ignored_sections(doc, containerd_major, version, keep=plugin)

    default_runc = (((defaults.get("plugins") or {}).get(cri_plugin_for(version)) or {})
                    .get("containerd", {}).get("runtimes", {}).get("runc"))
    cri = _section(doc, "plugins", plugin)
    containerd = _section(cri, "containerd")
    containerd["default_runtime_name"] = default_runtime_name
    runtimes_table = _section(containerd, "runtimes")
    if "runc" not in runtimes_table:
        runtimes_table["runc"] = copy.deepcopy(default_runc) if default_runc else {"runtime_type": DEFAULT_RUNTIME_TYPE}
    if systemd_cgroup is not None:
        _section(runtimes_table["runc"], "options")["SystemdCgroup"] = bool(systemd_cgroup)
    if cdi:
        cri["enable_cdi"] = True

    pattern = os.path.join(dropin_dir, dropin_glob)
    imports = doc.get("imports") or []
    if not isinstance(imports, list):
        imports = []
    doc["imports"] = _imports_with(imports, pattern, dropin_dir)

    dropins = []
    if containerd_major < 2:
        whole = copy.deepcopy(cri)
        for spec in specs:
            _section(whole, "containerd", "runtimes")[spec["name"]] = copy.deepcopy(spec["table"])
        dropins.append({"name": dropin_prefix + V1_CRI_DROPIN + dropin_suffix, "runtimes": names,
                        "doc": {"version": version, "plugins": {plugin: whole}}})
    else:
        for spec in specs:
            dropins.append({"name": dropin_prefix + spec["name"] + dropin_suffix, "runtimes": [spec["name"]],
                            "doc": {"version": version, "plugins": {plugin: {"containerd": {"runtimes": {
                                spec["name"]: copy.deepcopy(spec["table"])}}}}}})
    for item in dropins:
        item["path"] = os.path.join(dropin_dir, item["name"])
        item["content"] = _header(toml_document.dumps(item.pop("doc")))

    planned = [d["path"] for d in dropins]
    stale = stale_dropins(existing_files, dropin_dir, planned)
    neighbours = [{"name": os.path.basename(f["path"]), "content": f["content"]} for f in existing_files or []
                  if os.path.dirname(f["path"]) == dropin_dir.rstrip("/") and f["path"] not in planned
                  and f["path"] not in stale and f.get("content") is not None]

    main = _header(toml_document.dumps(doc))
    staged_main = None
    if staged_dropin_dir:
        staged = dict(doc, imports=[os.path.join(staged_dropin_dir, dropin_glob) if p == pattern else p
                                    for p in doc["imports"]])
        staged_main = _header(toml_document.dumps(staged))
    return {
        "version": version,
        "cri_plugin": plugin,
        "base": base,
        "warnings": warnings,
        "main": main,
        "main_staged": staged_main,
        "import_pattern": pattern,
        "dropins": dropins,
        "dropin_paths": planned,
        "stale": stale,
        "neighbours": neighbours,
        "runtimes": ["runc"] + names,
        "default_runtime_name": default_runtime_name,
    }


def without_imports(text):
    """A config text with its imports removed, for `containerd config migrate`."""
    doc = _parse(text, "the existing config")
    doc.pop("imports", None)
    return toml_document.dumps(doc)


def stale_dropins(gathered_files, dropin_dir, planned_paths):
    """Drop-ins this role wrote earlier that the plan no longer has (a runtime removed,
    or the node moved from 1.x to 2.x): recognised by the marker line."""
    stale = []
    for entry in gathered_files or []:
        path = entry.get("path", "")
        if os.path.dirname(path) != dropin_dir or path in planned_paths:
            continue
        if (entry.get("content") or "").startswith(MANAGED_MARKER):
            stale.append(path)
    return sorted(stale)


def verify(gathered, expected_runtimes, dropin_paths, import_pattern, require_binaries=False):
    """Problems (strings) found when the real containerd loads what was written."""
    problems = []
    loaded = gathered.get("loaded") or {}
    names = set(loaded.get("runtime_names") or [])
    for name in expected_runtimes:
        if name not in names:
            problems.append("runtime '%s' is not in the loaded config (loaded: %s)" % (name, ", ".join(sorted(names)) or "none"))
        elif require_binaries:
            binary = loaded["runtimes"][name].get("binary_name")
            facts = (gathered.get("paths") or {}).get(binary) if binary else None
            if facts is not None and not facts.get("executable"):
                problems.append("runtime '%s': BinaryName %s is not an executable on the node" % (name, binary))
    default = loaded.get("default_runtime_name")
    if default and default not in names:
        problems.append("default_runtime_name '%s' names no loaded runtime" % default)
    matched = set()
    entry_found = False
    for entry in gathered.get("imports") or []:
        if entry.get("resolved") == import_pattern or entry.get("pattern") == import_pattern:
            entry_found = True
            matched.update(entry.get("matches") or [])
    if not entry_found:
        problems.append("the config has no imports entry %s" % import_pattern)
    else:
        unmatched = [p for p in dropin_paths if p not in matched]
        if unmatched:
            problems.append("imports entry %s does not match drop-in(s) %s" % (import_pattern, ", ".join(unmatched)))
    warnings = [line for line in gathered.get("dump_warnings") or [] if "Ignoring unknown key" in line]
    if problems and warnings:
        problems.append("containerd warned: %s" % " | ".join(warnings[:5]))
    return problems
