# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan the files that register runtimes with one node's containerd: nothing while every wanted
runtime is loaded as wanted; else one own drop-in per runtime on 2.x, one drop-in carrying the whole
CRI section on 1.x, and the main config's imports entry or migration."""

import os

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_config_text as cc
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._gathered import PlanGathered
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._node_remediation import STAGE_PLACEHOLDER
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import adopt
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import closure
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import convert
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import dropins
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.options import kubelet_systemd_cgroup, normalize_runtimes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.ownership import OWN_MARKER, header, is_own, own_name
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.plan_shape import Plan
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.refusal import Refusal
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.toml_edit import edit_main, get_in, migrated_main, parse


def dump_plugin(major):
    """The CRI plugin a dump of this containerd shows its runtimes under."""
    return shapes.CRI_PLUGIN_V2 if major < 2 else shapes.CRI_PLUGIN_V3


class _Node(object):
    """What the plan reads of a gather result."""

    def __init__(self, gathered: PlanGathered, opts):
        self.gathered = gathered
        self.major = gathered["version_major"]
        self.minor = gathered["version_minor"]
        self.config_path = gathered["config_path"]
        self.dropin_dir = opts["dropin_dir"].rstrip("/")
        self.files = gathered["files"]
        self.by_path = dict((f["path"], f) for f in self.files)
        self.states = gathered.get("file_states") or {}
        self.before = parse(gathered["dump"], "the current config dump")
        self.default_doc = parse(gathered["default_text"], "containerd config default")
        self.plugin = dump_plugin(self.major)
        self.converted_main = None  # (converted doc, why) when the main config is converted
        self.cri_section = None  # 1.x: the one CRI section the role's drop-in carries

    def plugin_uris(self):
        return convert.known_plugin_uris(self.before, self.default_doc)

    def sha(self, path):
        return (self.states.get(path) or {}).get("sha256")

    def merge_order(self):
        """Files containerd merges, in its order (breadth first over imports, as gathered)."""
        return [f for f in self.files if f["role"] == "imported" or
                (f["role"] == "main" and self.gathered.get("config_exists"))]

    def dropin_files(self):
        return [f for f in self.files if os.path.dirname(f["path"]) == self.dropin_dir]


def _resolved_imports(node, entries):
    base = host_paths.relative_import_base(node.major, node.minor)
    return [host_paths.resolve_import(p, node.config_path, base) for p in entries]


def _covering_entry(resolved, paths):
    """Index of the first resolved imports entry that matches every path, or None."""
    for index, pattern in enumerate(resolved):
        if paths and all(host_paths.glob_matches_path(pattern, p) for p in paths):
            return index
    return None


def _runc_systemd_cgroup(node):
    """True when the node's runc runs with SystemdCgroup = true after this run: as loaded, or as the files
    declare it where the closure brings back a section the node does not load today (closure.needed)."""
    for name, _have, declared in getattr(node, "cgroup_declared", None) or []:
        if name == "runc":
            return bool(declared)
    runc = get_in(node.before, "plugins", node.plugin, "containerd", "runtimes", "runc")
    return isinstance(runc, dict) and (runc.get("runtime_type") or "") in containerd_facts.RUNC_TYPES and \
        (runc.get("options") or {}).get("SystemdCgroup") is True


def _specs(node, gathered, opts, notes):
    """The runtimes asked for, normalized. A runc-type runtime given no SystemdCgroup follows the kubelet's
    cgroupDriver; where the kubelet's config cannot be read, it follows the node's runc when runc runs with
    SystemdCgroup = true (a note says so: a runtime on another cgroup driver than the pods' runc is a guess
    that breaks its pods where the kubelet uses systemd), and stays unset (false, as runc) otherwise."""
    followed = []

    def kubelet_or_runc():
        want = kubelet_systemd_cgroup(gathered)
        if want is None and _runc_systemd_cgroup(node):
            followed.append(True)
            return True
        return want
    specs = normalize_runtimes(opts.get("runtimes"), opts.get("systemd_cgroup"), kubelet_or_runc)
    if followed:
        names = [s["name"] for s, asked in zip(specs, opts.get("runtimes") or [])
                 if asked.get("systemd_cgroup") is None and (s["table"].get("options") or {}).get("SystemdCgroup")]
        kubelet = gathered.get("kubelet_config") or {}
        why = "not read: %s" % kubelet["error"] if kubelet.get("error") else "absent at %s" % (
            kubelet.get("path") or opts.get("kubelet_config_path"))
        notes.append("SystemdCgroup: %s set to SystemdCgroup = true as the node's runc has it, since the kubelet's "
                     "cgroupDriver is unknown (its config is %s); set containerd_runtime_kubelet_config_path to "
                     "the kubelet's config, or containerd_runtime_systemd_cgroup to decide" % (", ".join(names), why))
    return specs


def plan(gathered: PlanGathered, opts) -> Plan:
    """What to write on one node, or a no-op (its keys: plan_shape.Plan, WritePlan); Refusal when the node
    must not be touched."""
    node = _Node(gathered, opts)
    notes = []
    _refuse_unreadable_main(node)
    _refuse_without_cri(node)
    # What the closure fixes besides the runtimes, decided first: runc's SystemdCgroup after the run may
    # follow from it, and the runtimes' may follow runc's. Its notes come after the runtimes'.
    names = [s["name"] for s in normalize_runtimes(opts.get("runtimes"), True)]
    closure_notes = []
    closing = closure.needed(node, gathered, [{"name": n} for n in names], opts, closure_notes)
    specs = _specs(node, gathered, opts, notes)
    cri = get_in(node.before, "plugins", node.plugin) or {}
    loaded_default = get_in(cri, "containerd", "default_runtime_name") or ""
    wanted_default = opts.get("default_runtime_name") or None
    change_default = _default_changes(opts, cri, loaded_default, names)
    need_cdi = _need_cdi(node, cri, specs)
    _refuse_missing_binaries(gathered, specs, opts)

    # Effective options: a key the loaded runtime leaves unset counts as containerd's default for it.
    missing = dict((s["name"], adopt.effective_mismatches(node.before, node.default_doc, node.plugin, s)) for s in specs)
    missing = dict((k, v) for k, v in missing.items() if v)
    own = dict((f["path"], f) for f in node.dropin_files() if is_own(f.get("content")))
    removals = sorted(p for p in own if os.path.basename(p) in
                      [own_name(opts, n) for n in opts.get("remove_runtimes") or []])
    for spec in specs:
        if spec["name"] not in missing:
            notes.append(adopt.adopted_note(spec, node.before, node.default_doc, node.plugin))
    result = {"notes": notes, "writes": [], "removes": [], "allowed": [], "runtimes": names,
              "specs": specs, "wanted_default": wanted_default if change_default else None,
              "loaded_default": loaded_default, "need_cdi": need_cdi, "own_paths": [],
              "containerd": "%d.%d" % (node.major, node.minor)}
    notes += closure_notes
    if not missing and not change_default and not need_cdi and not removals and not closing:
        result["noop"] = True
        return result
    result["noop"] = False
    _refuse_dropin_imports(node)
    _plan_files(node, opts, result, specs, missing, change_default, wanted_default, need_cdi, own, removals)
    return result


def _refuse_unreadable_main(node):
    """Refusal when the main config exists but cannot be read as text: the role edits only what it parses."""
    main = node.files[0]
    if node.gathered.get("config_exists") and main.get("content") is None:
        raise Refusal("the main config %s cannot be read as text (%s); containerd may load it, but this role edits "
                      "only what it can parse. Nothing was written." % (node.config_path, main.get("error")))


def _default_changes(opts, cri, loaded_default, names):
    """Whether the run changes default_runtime_name; Refusal when the change is not meant or not possible."""
    wanted_default = opts.get("default_runtime_name") or None
    if wanted_default is None or wanted_default == loaded_default:
        return False
    if wanted_default != "runc" and not opts.get("allow_non_runc_default"):
        raise Refusal("default_runtime_name=%s would send every pod of the node, GPU or not, through it; set "
                      "allow_non_runc_default to mean it" % wanted_default)
    loaded_names = set((get_in(cri, "containerd", "runtimes") or {}).keys())
    if wanted_default not in loaded_names and wanted_default not in names:
        raise Refusal("default_runtime_name %r is neither loaded nor being registered: set default_runtime_name to "
                      "a loaded runtime, or register it (set runtimes[].name)" % wanted_default)
    return True


def _need_cdi(node, cri, specs):
    """Whether enable_cdi must be turned on for a runtime that asks for CDI; Refusal before 1.7 (no CDI)."""
    cdi_names = [s["name"] for s in specs if s["cdi"]]
    need_cdi = bool(cdi_names) and not cri.get("enable_cdi") and not adopt.cdi_always_on(node.default_doc, node.plugin)
    if need_cdi and node.major == 1 and node.minor < 7:
        raise Refusal("runtime(s) %s ask for containerd's enable_cdi, which containerd 1.%d does not have (1.7+): set "
                      "runtimes[].cdi to false for them or leave them out (the role's nvidia-cdi: "
                      "containerd_runtime_enable_nvidia_cdi=false), or upgrade containerd"
                      % (", ".join(cdi_names), node.minor))
    return need_cdi


def _refuse_missing_binaries(gathered, specs, opts):
    """require_binaries: Refusal when a runtime's BinaryName is not an executable on the node."""
    for spec in specs:
        binary = (spec["table"].get("options") or {}).get("BinaryName")
        facts = (gathered.get("paths") or {}).get(binary) if binary else None
        if opts.get("require_binaries") and binary and (facts is None or not facts.get("executable")):
            raise Refusal("runtime %s: BinaryName %s is not an executable on the node: set runtimes[].binary_name to "
                          "the runtime's path on the node (install it there first), or set require_binaries to false "
                          "to register it anyway" % (spec["name"], binary))


def _refuse_dropin_imports(node):
    """Refusal when a file in the drop-in dir declares imports of its own: a staged load could not reproduce it."""
    for path in [f["path"] for f in node.dropin_files()]:
        if containerd_text_imports(node.by_path[path].get("content")):
            raise Refusal("%s declares imports of its own; a staged load could not reproduce it, so the node is "
                          "refused: move those imports into the main config %s" % (path, node.config_path))


def _plan_files(node, opts, result, specs, missing, change_default, wanted_default, need_cdi, own, removals):
    """The files of a plan that writes, into result: the drop-ins, the main config's imports entry (or its
    migration or conversion), the removals, and what the stage loads and the proof allows."""
    # What the user should see at default verbosity: migrations, a created main config, what 1.x shadows.
    warnings = result["warnings"] = []
    main_doc, main_text, main_version = _main(node, [s["name"] for s in specs])
    if node.major < 2:
        # what the drop-in pins goes to the notes: the report and the console keep it (issue 37)
        writes, removes = dropins.plan_1x(node, opts, specs, main_version, change_default, wanted_default, need_cdi,
                                          own, result["notes"])
        result["pinned"] = node.cri_pinned
    else:
        writes, removes = dropins.plan_2x(node, opts, specs, missing, main_version, change_default, wanted_default,
                                          need_cdi, own, warnings)
    removes = sorted(set(removes) | set(removals))
    own_after = sorted((set(own) - set(removes)) | set(w["path"] for w in writes))
    resolved, add_import = _imports_entry(node, opts, main_doc, own_after)
    dropin_after = sorted((set(f["path"] for f in node.dropin_files()) - set(removes)) | set(own_after))
    order = _planned_merge_order(node, resolved, dropin_after)
    if node.major < 2:
        _check_merged_last(node, order, own_after)
    new_main_text, new_main_doc = _main_text(node, main_doc, main_text, main_version, add_import, warnings)
    _add_writes(node, result, main_text, new_main_text, writes, own)
    texts = dict((p, (node.by_path.get(p) or {}).get("content")) for p in order)
    texts.update((w["path"], w["content"]) for w in writes)
    result["notes"] += adopt.precedence_notes(node.major, order, own_after, texts, node.config_path)
    for path in removes:
        result["removes"].append({"path": path, "content": None, "before": own[path]["content"],
                                  "expect_sha256": node.sha(path)})

    staged_imports = [STAGE_PLACEHOLDER + r if os.path.dirname(r) == node.dropin_dir else r for r in resolved]
    staged_doc = dict(new_main_doc, imports=staged_imports)
    result.update(
        staged_main=toml_codec.dumps(staged_doc),
        import_patterns=resolved,
        own_paths=own_after,
        allowed=_implicit_allowed(node, specs, missing, change_default, need_cdi, own, removes) +
        closure.allowed_paths(node),
        expected_leaves=closure.expected_leaves(node),
        disruptive=closure.disruptive(node),
        main_version=main_version,
    )


def _imports_entry(node, opts, main_doc, own_after):
    """(the main config's imports entries after the run, resolved; the entry the role adds, or None): one entry
    must load every own drop-in; the role adds one at the end when none does."""
    entries = list(main_doc.get("imports") or []) if main_doc is not None else []
    resolved = _resolved_imports(node, entries)
    covering = _covering_entry(resolved, own_after)
    add_import = None
    if covering is None and own_after:
        add_import = os.path.join(node.dropin_dir, opts["dropin_glob"])
        entries.append(add_import)
        resolved.append(add_import)
    return resolved, add_import


def _add_writes(node, result, main_text, new_main_text, writes, own):
    """The main config's write (when its text changes), then each drop-in whose parsed content changes;
    Refusal for a file of the drop-in's name that is not the role's."""
    if new_main_text is not None:
        # Whether the main config may be written (a generator, a read-only tree) is decided from the
        # node's evidence after the plan (ownership_gate), in check mode too.
        result["writes"].append({"path": node.config_path, "content": new_main_text, "before": main_text,
                                 "expect_sha256": node.sha(node.config_path)})
    for item in writes:
        before = node.by_path.get(item["path"], {}).get("content")
        exists = item["path"] in node.by_path or (node.states.get(item["path"]) or {}).get("exists")
        if exists and item["path"] not in own:
            raise Refusal("%s exists and is not a file of this role (no '%s' line); it is never overwritten. "
                          "Set dropin_prefix/suffix to another name." % (item["path"], OWN_MARKER))
        if before is not None and parse(before, item["path"]) == parse(item["content"], item["path"]):
            continue  # same parsed content: never rewrite for cosmetics
        item.update(before=before, expect_sha256=node.sha(item["path"]))
        result["writes"].append(item)


def _refuse_without_cri(node):
    """Refusal when the loaded config disables the CRI plugin (Docker's containerd.io package ships
    disabled_plugins = ["cri"]): no runtime the role registers would be served, so no run may report one
    as there. The role does not remove the entry itself (another tool's choice, and a running engine's)."""
    lists = []
    for entry in node.merge_order():
        try:
            doc = toml_codec.loads(entry.get("content") or "", entry["path"])
        except toml_codec.TomlError:
            continue
        lists.append((entry["path"], shapes.disabled_plugins(doc)))
    names, files = shapes.cri_disabled_by(shapes.disabled_plugins(node.before), lists, node.major)
    if names:
        where = "; ".join("%s sets disabled_plugins = %s" % (path, shapes.names_line(mine)) for path, mine in files) \
            or "the loaded config sets disabled_plugins = %s" % shapes.names_line(names)
        raise Refusal("containerd %d.%d serves no CRI on this node: %s, so no runtime registered here would be served "
                      "and no pod runs. Remove the CRI plugin from disabled_plugins (Docker's containerd.io package "
                      "ships disabled_plugins = [\"cri\"]), restart containerd, then run again. Nothing was written."
                      % (node.major, node.minor, where))


def containerd_text_imports(text):
    return cc.top_level_imports(text or "")


def _main(node, mine):
    """(parsed main or None, its text or None, the version the drop-ins take). A converted main keeps the
    loaded SystemdCgroup of the runtimes not in mine (closure.keep_loaded_cgroup)."""
    main = node.files[0]
    default_version = shapes.config_version(node.default_doc) if node.major >= 2 else 2
    if not node.gathered.get("config_exists"):
        return None, None, default_version
    text = main["content"]
    doc = parse(text, node.config_path)
    try:
        version = shapes.config_version(doc)
    except shapes.ConfigShapeError as exc:
        raise Refusal("%s: %s" % (node.config_path, exc))
    why = closure.conversion_reason(node, doc)
    if why:
        doc = convert.as_read_by(doc, node.major, node.plugin_uris(), node.config_path)
        closure.keep_loaded_cgroup_in_main(node, doc, mine)
        node.converted_main = (doc, "%s is %s: converted to version %d, which this containerd reads as written"
                               % (node.config_path, why, shapes.config_version(doc)))
        version = shapes.config_version(doc)
    if version > default_version:
        raise Refusal("%s is version %d, above the %d this containerd writes" % (node.config_path, version, default_version))
    return doc, text, version


def _bare(doc):
    """A version 1 file with nothing a version bump could reinterpret (no plugins, plugin lists)."""
    return not any(k in doc for k in ("plugins", "disabled_plugins", "required_plugins", "proxy_plugins",
                                      "stream_processors"))


def _main_text(node, main_doc, main_text, main_version, add_import, notes):
    """(new text or None when unchanged, new parsed doc) of the main config."""
    default_version = shapes.config_version(node.default_doc) if node.major >= 2 else 2
    if main_doc is None:
        doc = {"version": default_version, "imports": [add_import] if add_import else []}
        notes.append("%s does not exist (containerd runs on its defaults); created with only version and imports"
                     % node.config_path)
        return header(["Created because the node had no main config; containerd's defaults apply to the rest."]) + \
            toml_codec.dumps(doc), doc
    if node.converted_main is not None:
        doc = dict(main_doc)
        doc["imports"] = list(main_doc.get("imports") or []) + ([add_import] if add_import else [])
        if not doc["imports"]:
            doc.pop("imports")
        notes.append(node.converted_main[1])
        return header(["Converted from the node's version %s file (kept as a backup) to what containerd %d.%d reads."
                       % (shapes.config_version(parse(main_text, node.config_path)), node.major, node.minor)]) + \
            toml_codec.dumps(doc), doc
    set_version = None
    migrated = None
    if main_version == 1 and _bare(main_doc):
        set_version = default_version
    elif node.major >= 2 and main_version < default_version and node.gathered.get("migration"):
        migrated = migrated_main(node, main_doc, default_version)
    elif main_version == 1:
        raise Refusal("%s is version 1 and migrate=never; nothing was written" % node.config_path)
    if migrated is not None:
        doc, note = migrated
        if add_import:
            doc["imports"].append(add_import)
        notes.append(note)
        return header(["Migrated by containerd config migrate from the version %d file (kept as a backup)."
                       % node.gathered["migration"]["from_version"]]) + toml_codec.dumps(doc), doc
    if set_version is None and add_import is None:
        return None, main_doc
    return edit_main(main_text, main_doc, set_version, add_import)


def _planned_merge_order(node, resolved, dropin_after):
    """The files containerd will merge after the plan, in its order: the main file, then each imports
    entry's matches (the drop-in dir as planned), then imports declared in imported files."""
    order = [node.config_path] if node.gathered.get("config_exists") else []
    gathered_matches = dict((e["resolved"], e["matches"]) for e in node.gathered.get("imports") or []
                            if e["declared_in"] == node.config_path)
    for pattern in resolved:
        if os.path.dirname(pattern) == node.dropin_dir:
            matches = [p for p in dropin_after if host_paths.glob_matches_path(pattern, p)]
        else:
            matches = gathered_matches.get(pattern, [])
        order += [p for p in matches if p not in order]
    for entry in node.gathered.get("imports") or []:
        if entry["declared_in"] != node.config_path:
            order += [p for p in entry["matches"] if p not in order]
    return order


def _check_merged_last(node, order, own_after):
    """containerd 1.x: the role's CRI drop-in must be the last file that declares the CRI section,
    or the next one replaces it whole (runtimes included)."""
    mine = [p for p in order if p in own_after]
    if not mine:
        return
    later = []
    for path in order[order.index(mine[-1]) + 1:]:
        content = node.by_path.get(path, {}).get("content")
        plugins = parse(content or "", path).get("plugins") if content is not None else None
        if isinstance(plugins, dict) and any(name in plugins for name in shapes.CRI_PLUGIN_NAMES):
            later.append(path)
    if later:
        raise Refusal("containerd 1.x merges %s after the role's %s and takes the whole CRI section from the last file "
                      "that declares it, so the runtimes would be replaced again; set dropin_prefix so the role's file "
                      "sorts after it (e.g. 'zz-'). Nothing was written." % (", ".join(later), mine[-1]))


def _implicit_allowed(node, specs, missing, change_default, need_cdi, own, removes):
    """Key paths (tuples; a path allows its whole subtree) the run was asked to change."""
    base = ("plugins", node.plugin)
    allowed = []
    for spec in specs:
        mismatches = missing.get(spec["name"]) or []
        for path, loaded, _wanted in mismatches:
            allowed.append(path)
    if change_default:
        allowed.append(base + ("containerd", "default_runtime_name"))
    if need_cdi:
        allowed.append(base + ("enable_cdi",))
    for path in removes:
        content = own.get(path, {}).get("content")
        if content is None:
            continue
        for runtimes in shapes.runtimes_by_plugin(parse(content, path)).values():
            for name in runtimes:
                if name not in [s["name"] for s in specs]:
                    allowed.append(base + ("containerd", "runtimes", name))
    return allowed
