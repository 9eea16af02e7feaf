# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Family: files and imports. What the config files on disk say against what containerd loads:
imports that match nothing, drop-ins nothing imports, sections a version ignores, runtimes lost in
the merge, drop-in versions, unreadable files, no config at all."""

import os
import re

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_fragment_scan as fragment_scan
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as config_shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.context import dropins_above_root, merged_files
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.model import finding
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.registry import check, fixed_by, not_fixed

V1, V2, V3 = config_shapes.CRI_PLUGIN_V1, config_shapes.CRI_PLUGIN_V2, config_shapes.CRI_PLUGIN_V3
# containerd 2.3 refuses a drop-in whose version is above the root file's (measured, 2.3.4).
_REFUSES_DROPIN_ABOVE_ROOT = (2, 3)
# containerd 2.3 dumps imports = ['/etc/containerd/conf.d/*.toml'] by default, but loads a drop-in only when
# the config file itself declares imports (measured, 2.3.4).
_DEFAULT_IMPORTS_ONLY_DUMPED = (2, 3)


# --- imports and drop-ins -----------------------------------------------------------------

def _dir_of(path):
    return os.path.dirname(path.rstrip("/"))


# Files no import could ever mean to load: editor and package-manager leftovers.
_BACKUP_NAME = re.compile(r"(~|\.bak|\.orig|\.old|\.default|\.dist|\.sample|\.example|\.pacnew|\.pacsave|\.swp|\.save"
                          r"|\.rpmsave|\.rpmnew|\.rpmorig|\.dpkg-[a-z]+|\.ucf-[a-z]+)$")


def is_backup_name(path):
    """A backup such as 99-nvidia.toml.12345.20250101~, x.toml.bak or x.toml.dpkg-old."""
    return bool(_BACKUP_NAME.search(os.path.basename(path)))


def _fragments_in(files, directory):
    """Config fragments in directory: files an import loads, and files nothing imports that parse as one."""
    out = []
    for f in files:
        if _dir_of(f["path"]) != directory.rstrip("/") or f["role"] == "main" or is_backup_name(f["path"]):
            continue
        if f["role"] == "imported" or (f.get("parsed") or {}).get("fragment"):
            out.append(f["path"])
    return sorted(out)


@check("dead_imports_glob", ("warning", "info"), "info when its directory exists and holds no config fragment (a slot "
       "waiting for a drop-in: k0s, image-builder, k8s-snap and containerd 2.2+'s default config create it empty), "
       "or when it is containerd 2.2+'s own default entry (conf.d/*.toml beside the main config) or an entry of a "
       "generated config (its header says so: k3s' config-v3.toml.d) whose directory does not exist yet; else "
       "warning",
       "an `imports` entry matches no file on the node (containerd skips it silently)",
       ("imports",),
       not_fixed("other entries are left as they are; the role adds an entry of its own only when none loads "
                 "its drop-ins"))
def check_dead_imports(ctx):
    out = []
    files = ctx.gathered.get("files", [])
    for entry in ctx.gathered["imports"]:
        if entry["matches"]:
            continue
        directory = entry.get("dir") or _dir_of(entry["resolved"])
        fragments = _fragments_in(files, directory)
        slot = bool(entry.get("dir_exists")) and not fragments
        default_slot = not entry.get("dir_exists", True) and _containerd_default_entry(ctx, entry)
        generated = _generated(files, entry.get("declared_in"))
        generated_slot = not entry.get("dir_exists", True) and generated is not None
        if slot or default_slot or generated_slot:
            if slot:
                why = "%s exists and holds no config fragment" % directory
            elif generated_slot and not default_slot:
                why = ("%s is generated (%s) and imports it; %s does not exist until a drop-in is written there"
                       % (entry["declared_in"], generated, directory))
            else:
                why = "it is the entry containerd %s's own default config carries, and %s does not exist" % (
                    ctx.gathered.get("version") or "2.2+", directory)
            message = "imports entry '%s' in %s matches no file yet: %s (a slot waiting for a drop-in)" % (
                entry["pattern"], entry["declared_in"], why)
            fix = "nothing to fix; a drop-in written there as '%s' is loaded at the next start" % entry["resolved"]
        else:
            message = "imports entry '%s' in %s matches no file; containerd skips it without a log line%s" % (
                entry["pattern"], entry["declared_in"],
                "" if entry.get("dir_exists", True) else " (%s does not exist)" % directory)
            fix = (("make the pattern match the drop-ins, e.g. '%s'"
                    % os.path.join(directory, "*" + os.path.splitext(fragments[0])[1])) if fragments
                   else "remove the entry or write the drop-ins it is meant to load")
        out.append(finding(
            ctx.node, "dead_imports_glob", "info" if slot or default_slot or generated_slot else "warning",
            entry["pattern"], message, fix,
            {"pattern": entry["pattern"], "resolved": entry["resolved"], "declared_in": entry["declared_in"],
             "dir": directory, "dir_exists": entry.get("dir_exists"), "files_in_dir": fragments},
        ))
    return out


def _generated(files, path):
    """The generated header line of the loaded file at path (a generator's output), or None."""
    for f in files:
        if f["path"] == path and f["role"] in ("main", "imported"):
            return (f.get("parsed") or {}).get("generated")
    return None


def _containerd_default_entry(ctx, entry):
    """Whether entry is the one containerd 2.2+ writes in its default config: conf.d/*.toml beside the main
    config, declared there (a node set up with `containerd config default`; measured with 2.2, 2.3, 2.4)."""
    config_path = ctx.gathered.get("config_path") or ""
    return ((ctx.version or (0, 0)) >= (2, 2) and entry.get("declared_in") == config_path
            and entry.get("resolved") == os.path.join(containerd_facts.own_dropin_dir(config_path), "*.toml"))


def _declared_runtimes(parsed):
    return sorted(set(n for names in (parsed.get("runtimes_by_plugin") or {}).values() for n in names))


def _judge(parsed, lost):
    """(orphan, why) of a file nothing imports: orphan is True (error), False (no orphan, said at info
    level) or None (nothing to say). The rule: a fragment is an orphan only when loading it, as this
    node's containerd would load it as an import, changes what containerd loads."""
    if parsed.get("error") or not parsed.get("fragment", True):
        return None, None
    if "not_carried_count" not in parsed:  # containerd refused the config: nothing loaded to compare with
        orphan = bool(lost) or "runtimes_by_plugin" in parsed
        return (True, "containerd loads no config on this node to compare it with") if orphan else (None, None)
    if parsed["not_carried_count"] == 0:
        return None, None  # the loaded config carries every setting it has
    load = parsed.get("load") or {"state": "not_loaded", "why": "not loaded by containerd"}
    missing = ", ".join(parsed.get("not_carried") or [])
    if load["state"] == "loaded" and not load["changed_count"]:
        why = ("containerd's own load of it as an import changes nothing this node loads, though the loaded "
               "config does not carry its %s as written (keys containerd drops or renames when it loads that "
               "version, or values a generator substituted)" % missing)
        if load.get("substituted"):
            why += "; placeholders a generator fills: %s" % ", ".join(load["substituted"][:3])
        return False, why
    if load["state"] == "loaded":
        return True, "importing it would change %d key(s) of the loaded config: %s" % (
            load["changed_count"], ", ".join(load["changed"][:3]))
    # containerd could not judge it: the evidence rules decide
    if parsed.get("named_by"):
        return False, ("it is a generator's input: %s names it (%s; the loaded config does not carry its %s)"
                       % (parsed["named_by"], load["why"], missing))
    return True, "the loaded config does not carry its %s (judged without containerd's load: %s)" % (
        missing, load["why"])


@check("orphan_dropin", ("error", "info"), "error when loading it as an import would change what containerd loads; "
       "info when the loaded config does not carry its settings as written but containerd's own load of it changes "
       "nothing (or, where containerd cannot load it, a loaded file's generated header names it as its input)",
       "a containerd config fragment (top-level `version` or `plugins` table) beside the config tree (its dir and "
       "subdirs, the known tools' drop-in dirs such as k0s' containerd.d, the dirs imports name) that no `imports` "
       "entry loads, judged by containerd's own load: the node's containerd dumps a scratch copy of the config "
       "importing it, compared with the loaded config (`.conf` vs `.toml`; `config.d/` vs `conf.d/`, as a released "
       "nvidia-ctk did; on 2.3, any drop-in when the config file declares no imports). Not orphans: files whose "
       "settings the loaded config carries or whose load changes nothing (generator inputs already merged: Talos' "
       ".part files, microk8s' template; keys a version migration drops: runtime_engine, runtime_root, no_pivot), "
       "files a runtime names (`ConfigPath`, `base_runtime_spec`) and backups (`*~`, `*.bak`, `*.dpkg-*`, ...). At "
       "most %d fragments are loaded per node; the others are judged by their settings and the finding says so"
       % fragment_scan.MAX_LOADS,
       ("files", "loaded"),
       not_fixed("files of other tools are never moved, renamed or removed; the role's own drop-ins always get an "
                 "`imports` entry that loads them"))
def check_orphans(ctx):
    out = []
    gathered = ctx.gathered
    resolved = [e["resolved"] for e in gathered.get("imports", [])]
    for entry in gathered["files"]:
        if entry["role"] != "unreferenced" or is_backup_name(entry["path"]):
            continue
        parsed = entry.get("parsed") or {}
        declared = _declared_runtimes(parsed)
        lost = [n for n in declared if n not in ctx.handlers]
        orphan, judged = _judge(parsed, lost)
        if orphan is None:
            continue
        load = parsed.get("load") or {}
        evidence = {"file": entry["path"], "imports": resolved, "declares_runtimes": declared, "not_loaded": lost,
                    "not_carried": parsed.get("not_carried") or [],
                    "not_carried_count": parsed.get("not_carried_count"),
                    "load": load.get("state"), "would_change": load.get("changed") or [],
                    "would_change_count": load.get("changed_count"), "substituted": load.get("substituted") or [],
                    "load_why": load.get("why"), "named_by": parsed.get("named_by"), "judged": judged}
        if not orphan:
            out.append(finding(
                ctx.node, "orphan_dropin", "info", entry["path"],
                "%s is a containerd config fragment no imports entry loads, and no orphan: %s"
                % (entry["path"], judged),
                "nothing to fix", evidence))
            continue
        same_dir = [p for p in resolved if _dir_of(p) == _dir_of(entry["path"])]
        if same_dir:
            why = "no imports entry matches it (entries for its dir: %s)" % ", ".join(same_dir)
        elif resolved:
            why = "imports read other dirs only (%s)" % ", ".join(resolved)
        else:
            why = "the config has no imports"
            if (ctx.version or (0, 0)) >= _DEFAULT_IMPORTS_ONLY_DUMPED:
                why += (" (containerd 2.3 dumps imports = ['/etc/containerd/conf.d/*.toml'] by default, "
                        "but loads a drop-in only when the config file itself declares imports)")
        glob = os.path.join(_dir_of(entry["path"]), "*" + os.path.splitext(entry["path"])[1])
        fix = ("rename it to match %s, or add '%s' to imports" % (same_dir[0], glob)) if same_dir else (
            "add '%s' to the imports of %s, or move it into a dir an imports entry reads"
            % (glob, gathered.get("config_path") or "the config"))
        detail = "; runtimes it declares are not loaded: %s" % ", ".join(lost) if lost else ""
        evidence["glob"] = glob
        out.append(finding(
            ctx.node, "orphan_dropin", "error", entry["path"],
            "%s is a containerd config fragment that is never loaded: %s%s; %s; the glob '%s' would load it"
            % (entry["path"], why, detail, judged, glob),
            fix, evidence,
        ))
    return out


# --- what containerd reads from each merged file -----------------------------------------

def _readable(entry):
    parsed = entry.get("parsed") or {}
    return not parsed.get("error") and "version" in parsed


def _root_version(merged):
    for entry in merged:
        if entry["role"] == "main" and _readable(entry):
            return entry["parsed"]["version"]
    return None


def _effective_version(entry, root, version):
    """The version containerd reads a merged file with. containerd 2.0-2.2 merge the files
    first and migrate the result by the root file's version (measured on 2.1.9: a version 2
    drop-in under a version 3 root loses its io.containerd.grpc.v1.cri runtimes); 1.x and
    2.3+ read each file by its own version, a file without one by the root's (measured)."""
    parsed = entry["parsed"]
    if root is not None and (entry["role"] == "imported" and not parsed.get("version_written")):
        return root
    if root is not None and version[0] >= 2 and not config_shapes.migrates_per_file(version):
        return root
    return parsed["version"]


def _runtimes_table_in(entries, plugins):
    """The first file of entries with a runtimes table (even empty) under one of plugins."""
    for entry in entries:
        if set((entry.get("parsed") or {}).get("runtimes_tables") or []) & set(plugins):
            return entry["path"]
    return None


def file_readings(ctx):
    """[(entry, effective version, {plugin: why containerd ignores its runtimes, or None})]
    for every readable merged file.

    containerd 2.x migrating an older config drops the runtimes of an older plugin name when the
    same config has a runtimes table (even empty) under a newer one: a version 2 file with
    runtimes under both io.containerd.grpc.v1.cri and io.containerd.cri.v1.runtime (AgentBaker's
    kata template) loads the latter only. 2.0-2.2 migrate the merged files, 2.3 each file alone
    (measured on 2.1.9 and 2.3.4; runtimes survive when the newer section holds only enable_cdi,
    or when only cri.v1.images is set)."""
    gathered = ctx.gathered
    major, minor = ctx.version
    merged = [e for e in merged_files(gathered) if _readable(e)]
    root = _root_version(merged)
    out = []
    for entry in merged:
        effective = _effective_version(entry, root, ctx.version)
        replaced = config_shapes.replaced_by(major, effective, minor)
        unit = [entry] if config_shapes.migrates_per_file(ctx.version) else merged
        reasons = {}
        for plugin in sorted(entry["parsed"].get("runtimes_by_plugin") or {}):
            reasons[plugin] = config_shapes.ignored_plugin_reason(major, effective, plugin, minor)
            replacing = _runtimes_table_in(unit, replaced.get(plugin, ())) if reasons[plugin] is None else None
            if replacing:
                reasons[plugin] = (
                    "containerd %s migrates a version %d config, and the runtimes table under plugins.\"%s\" in %s "
                    "replaces the runtimes migrated from plugins.\"%s\""
                    % (gathered.get("version", "2.x"), effective, "\" / \"".join(replaced[plugin]), replacing, plugin))
                if plugin == V1 and not _runtimes_table_in(unit, (V3,)):
                    # measured with 2.3.4: plugins.cri next to plugins."io.containerd.grpc.v1.cri" in a
                    # version 1 file keeps one of the two at random (7 starts in 8 the latter)
                    reasons[plugin] += " (or the other way round: which one survives changes from one start to the next)"
        out.append((entry, effective, reasons))
    return out


@check("ignored_plugin_section", ("error", "warning"), "error if its runtimes are not loaded, else warning",
       "a CRI section containerd does not read for the file's version: v3 with `io.containerd.grpc.v1.cri`, v3 on "
       "1.x, v1 on 2.x, and a v2 config on 2.x that also has a `io.containerd.cri.v1.runtime` runtimes table "
       "(the migration drops the old-name runtimes)",
       ("files", "loaded", "version"),
       fixed_by("the main config is converted to what the node's containerd reads (version 2 on 1.x, ids to plugin "
                "URIs from version 1, old-name CRI keys to `io.containerd.cri.v1.*` on 2.x) when the staged load "
                "keeps everything the node loaded; other tools' drop-ins are not rewritten: on 1.x the role's CRI "
                "drop-in carries their CRI sections as converted, on 2.x its own drop-ins use the name the node reads"))
def check_ignored_sections(ctx):
    out = []
    gathered = ctx.gathered
    major = ctx.version[0]
    for entry, version, reasons in file_readings(ctx):
        if major < 2 and version >= 3:
            out.append(finding(
                ctx.node, "ignored_plugin_section", "error", entry["path"],
                "%s is a version %d file on containerd %s, which reads version 2 only "
                "(1.6 ignores plugins.\"%s\"; 1.7 refuses to start)"
                % (entry["path"], version, gathered.get("version", "1.x"), V3),
                "write version = 2 with plugins.\"%s\" for containerd 1.x" % V2,
                {"file": entry["path"], "file_version": version, "containerd": gathered.get("version")},
            ))
        for plugin, reason in sorted(reasons.items()):
            if reason is None:
                continue
            names = entry["parsed"]["runtimes_by_plugin"][plugin]
            absent = [n for n in names if n not in ctx.handlers]
            if major < 2 and version >= 3 and not absent:
                continue  # already reported above; its runtimes load on 1.6 regardless
            out.append(finding(
                ctx.node, "ignored_plugin_section", "error" if absent else "warning",
                "%s:%s" % (entry["path"], plugin),
                "%s: %s, so its runtimes %s" % (
                    entry["path"], reason,
                    "are absent from the loaded config: %s" % ", ".join(absent) if absent
                    else "are loaded anyway, from another file or containerd's defaults, not with this section's "
                         "settings"),
                "move the runtimes under plugins.\"%s\"" % (V3 if major >= 2 else config_shapes.plugins_read(major, version)[0])
                if version >= 2 or major < 2 else "set version = 2 (1.x) or 3 (2.x) with the matching plugin name",
                {"file": entry["path"], "file_version": version, "plugin": plugin, "runtimes": names,
                 "not_loaded": absent, "loader_warnings": gathered.get("dump_warnings", [])[:10]},
            ))
    return out


@check("file_loaded_drift", ("error",), "error",
       "a runtime in a merged file is absent from the loaded config for no reason above (e.g. the 1.x rule below)",
       ("files", "loaded", "version"),
       fixed_by("on 1.x the role's one CRI drop-in, merged last, carries the key-by-key merge of every file's CRI "
                "section (what 2.x would load) plus the role's runtimes, so what each file declares loads again"),
       fires_below=(2, 0))
def check_file_drift(ctx):
    out = []
    major = ctx.version[0]
    merged = merged_files(ctx.gathered)
    for entry, _version, reasons in file_readings(ctx):
        for plugin, reason in sorted(reasons.items()):
            names = entry["parsed"]["runtimes_by_plugin"][plugin]
            absent = [n for n in names if n not in ctx.handlers]
            if reason is not None or not absent:
                continue
            out.append(finding(
                ctx.node, "file_loaded_drift", "error", "%s:%s" % (entry["path"], ",".join(absent)),
                "%s declares runtime(s) %s, absent from the loaded config%s" % (
                    entry["path"], ", ".join(absent),
                    "; containerd 1.x lets each imported file replace a plugin's whole section "
                    "(containerd#5837), so only the last file's runtimes survive" if major < 2 and len(merged) > 1 else ""),
                "on containerd 1.x put every runtime in one drop-in that carries the whole CRI plugin section"
                if major < 2 else "compare the file with 'containerd config dump' and fix what overrides it",
                {"file": entry["path"], "plugin": plugin, "declared": names, "not_loaded": absent,
                 "merged_files": [f["path"] for f in merged]},
            ))
    return out


@check("dropin_version_above_root", ("warning",), "warning",
       "containerd older than 2.3 loads a drop-in whose version is above the root file's; 2.3+ refuses to start "
       "with it, so the upgrade breaks the node",
       ("files", "version"),
       not_fixed("other tools' drop-ins are not rewritten; the role's own carry the root file's version, never a "
                 "higher one"),
       fires_below=_REFUSES_DROPIN_ABOVE_ROOT)
def check_dropin_version(ctx):
    if ctx.version >= _REFUSES_DROPIN_ABOVE_ROOT:
        return []  # 2.3+ refuses such a config outright: config_refused says so
    out = []
    for path, version, root in dropins_above_root(ctx.gathered):
        out.append(finding(
            ctx.node, "dropin_version_above_root", "warning", path,
            "%s is version %d, above the root config's version %d: containerd %s loads it, but containerd "
            "2.3+ refuses to start with it (\"drop-in config version %d higher than root config version %d\"), "
            "so upgrading containerd breaks the node" % (path, version, root, ctx.gathered.get("version"), version, root),
            "write the drop-in with version = %d, or raise the root config to version %d" % (root, version),
            {"file": path, "version": version, "root_version": root, "containerd": ctx.gathered.get("version")},
        ))
    return out


@check("config_unreadable", ("error",), "error",
       "a config file containerd loads could not be read or parsed by the audit (too large, not UTF-8, not a "
       "regular file); not reported where containerd refuses the config (config_refused says why)",
       ("files", "loaded"),
       not_fixed("the role refuses a node whose main config it cannot read, and never rewrites the other files; "
                 "what fixes it: the file's owner makes it readable UTF-8 TOML (the finding names the file and the error)"))
def check_unreadable(ctx):
    out = []
    for entry in merged_files(ctx.gathered):
        if entry["role"] == "main" and not ctx.gathered.get("config_exists", True):
            continue  # no config file: containerd runs on its defaults (config_defaults)
        parsed = entry.get("parsed") or {}
        error = parsed.get("error") or (entry.get("error") if entry.get("content") is None else None)
        if error:
            if "UTF-8" in error and ctx.version is not None and ctx.version < (2, 0):
                error += " (containerd 1.x loads it; 2.x refuses a config that is not UTF-8, measured with 2.1.9 and 2.3.4)"
            out.append(finding(
                ctx.node, "config_unreadable", "error", entry["path"],
                "%s could not be checked: %s" % (entry["path"], error),
                "fix the file so containerd and this audit can read it",
                {"file": entry["path"], "error": error},
            ))
    return out


@check("config_defaults", ("info",), "info",
       "there is no main config file: containerd runs on its built-in defaults (legal)",
       ("files",),
       not_fixed("nothing to fix; registering a runtime there, the role creates a main config with only `version` "
                 "and `imports`"))
def check_defaults(ctx):
    if ctx.gathered.get("config_exists", True):
        return []
    path = ctx.gathered.get("config_path") or "the config file"
    note = ""
    if (ctx.version or (0, 0)) >= _DEFAULT_IMPORTS_ONLY_DUMPED:
        note = ("; its dump shows imports = ['/etc/containerd/conf.d/*.toml'], but without a config file no "
                "drop-in is loaded (measured with 2.3.4)")
    return [finding(
        ctx.node, "config_defaults", "info", path,
        "there is no %s: containerd runs on its built-in defaults (legal; runc only)%s" % (path, note),
        "nothing to fix; write the file (role gpurt.runtime_gate.containerd_runtime) to register more runtimes",
        {"config_path": path, "containerd": ctx.gathered.get("version")},
    )]


# --- what containerd itself says while loading ------------------------------------------------

def _runtimes_reported(item, ignored_sections):
    """Whether ignored_plugin_section already reports this ignored key: the CRI runtimes of a section
    containerd does not read (every file that sets it is such a section)."""
    parts = item.get("parts") or []
    return bool(item["files"]) and parts[:2] in (["containerd"], ["containerd", "runtimes"]) and \
        all((f["file"], f["plugin"]) in ignored_sections for f in item["files"])


@check("config_load_warning", ("warning",), "warning",
       "containerd warns while loading the config of a setting it ignores or deprecates: 2.x's `Ignoring unknown key "
       "in TOML` (keys removed in 2.0 that an older config still sets, e.g. `registry.configs.*.tls`, "
       "`tolerate_missing_hugepages_controller`; on 2.4 `cni.bin_dir`; misspelled keys), 1.x's deprecated config "
       "version 1; containerd loads the rest and exits 0, so the setting has no effect without another sign. Not "
       "reported: an ignored zero value (`systemd_cgroup = false`, `runtime_engine = \"\"`, as 1.x's `config "
       "default` writes them), 2.4's ignored `enable_cdi = true` (always on), a `bin_dir` its `bin_dirs` holds",
       ("files", "loaded"),
       not_fixed("other tools' files are never rewritten; a main config the role converts (ignored_plugin_section) "
                 "takes containerd's own migration; what fixes the rest: the file's owner moves or drops the key the "
                 "finding names (e.g. registry TLS into `config_path`'s hosts.toml)"))
def check_load_warnings(ctx):
    ignored_sections = set()
    for entry, _version, reasons in file_readings(ctx):
        ignored_sections.update((entry["path"], plugin) for plugin, why in reasons.items() if why is not None)
    out = []
    release = ctx.gathered.get("version") or ""
    for item in ctx.gathered.get("load_warnings") or []:
        if item["kind"] == "ignored_key" and _runtimes_reported(item, ignored_sections):
            continue
        files = item["files"]
        where = "; ".join("%s in %s" % (f["key"], f["file"]) for f in files) or "the merged config (no file read " \
            "by the audit sets it as written)"
        if item["kind"] == "deprecated_version":
            message = ("containerd %s warns that config version %d is deprecated: %s declares no version (or version "
                       "%d); containerd 2.x converts it at every start and drops what it cannot convert"
                       % (release, item["version"], ", ".join(f["file"] for f in files) or "the config",
                          item["version"]))
            fix = "write version = 2 (1.x) or the version `containerd config default` prints (2.x), with the plugin " \
                  "names of that version"
        else:
            message = ("containerd %s ignores %s: %s sets it, and containerd loads the config without it (only a log "
                       "line says so)" % (release, "%s of plugin %s" % (item["key"], item["plugin"]) if item["plugin"]
                                          else "the top-level key %s" % item["key"], where))
            fix = "remove the key, or set what it meant where containerd %s reads it (`containerd config default` " \
                  "lists the keys of %s)" % (release, item["plugin"] or "the config")
            if (item.get("parts") or [""])[0] == "registry":
                fix = "move the registry settings into hosts.toml files under the registry's config_path " \
                      "(containerd 2.x reads registry TLS only there), and remove the key"
        subject = "%s:%s" % ((files[0]["file"] if files else ctx.gathered.get("config_path") or "config"),
                             files[0]["key"] if files else item["key"])
        out.append(finding(
            ctx.node, "config_load_warning", "warning", subject, message, fix,
            {"key": item["key"], "plugin": item["plugin"], "files": files, "containerd": release,
             "loader_line": item["line"]},
        ))
    return out
