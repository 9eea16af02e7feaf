# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Closure: the errors the audit reports that the role fixes besides registering runtimes, each under
the same proof, or explains.

- ignored_plugin_section: the main config converted to what the node reads (convert.py);
- containerd 1.x section replacement (file_loaded_drift, config_refused): the role's one CRI drop-in
  carries the key-by-key merge of every file's CRI section, what 2.x would load (containerd#5837), so
  what config.toml declares comes back;
- cgroup_driver on runc-type runtimes the role did not register: aligned with the kubelet's
  cgroupDriver only with align_runc_cgroup, a disruptive change (kubeadm: drain the node first);
  otherwise explained.
"""

import copy

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import convert
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.options import kubelet_systemd_cgroup
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.ownership import is_own
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.refusal import Refusal
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.toml_edit import (
    ABSENT, deep_update, flatten, get_in, migrated_main, parse)

ALIGN_VARIABLE = "containerd_runtime_align_runc_cgroup"
DRAIN_VARIABLE = "gpurt_drain"


def conversion_reason(node, doc):
    """Why the main config must be converted to what the node reads, or None. A version 1 file that
    containerd's own `config migrate` keeps whole (2.3+) is left to that migration."""
    why = convert.needs_conversion(doc, node.major)
    if why and shapes.config_version(doc) == 1 and node.major >= 2:
        try:
            if migrated_main(node, doc, shapes.config_version(node.default_doc)) is not None:
                return None
        except Refusal:
            pass  # it drops keys (2.1): the role converts
    return why


def merged_cri_1x(node, main_version=2):
    """(the key-by-key merge of every merged file's CRI section as containerd 1.x reads each file,
    the files that declare one). The role's own files are left out: they are what is being planned."""
    section, owners = {}, []
    for entry in node.merge_order():
        if is_own(entry.get("content")):
            continue
        if entry.get("content") is None:
            raise Refusal("%s is merged by containerd but cannot be read (%s)" % (entry["path"], entry.get("error")))
        doc = parse(entry["content"], entry["path"])
        if "version" not in doc and entry["role"] == "imported":
            doc["version"] = main_version
        doc = convert.as_read_by(doc, 1, node.plugin_uris(), entry["path"])
        table = get_in(doc, "plugins", shapes.CRI_PLUGIN_V2)
        if isinstance(table, dict):
            deep_update(section, table)
            owners.append(entry["path"])
    return section, owners


def _restore_runc(node, section):
    """containerd's default runc when the section declares runtimes but not the default one: 1.x then
    loads no runc and its CRI plugin fails (measured), so no pod runs."""
    runtimes = section.setdefault("containerd", {}).setdefault("runtimes", {})
    default = get_in(section, "containerd", "default_runtime_name") or "runc"
    if "runc" not in runtimes and (default == "runc" or not runtimes):
        runc = get_in(node.before, "plugins", node.plugin, "containerd", "runtimes", "runc") or \
            get_in(node.default_doc, "plugins", shapes.CRI_PLUGIN_V2, "containerd", "runtimes", "runc")
        if isinstance(runc, dict):
            runtimes["runc"] = copy.deepcopy(runc)


def cri_section_1x(node, main_version=2, mine=(), cgroup_changes=None):
    """What the role's 1.x CRI drop-in starts from: the merged section, with runc back when lost and
    SystemdCgroup of the runtimes not in mine settled (keep_loaded_cgroup; its changes are added to
    cgroup_changes when given)."""
    section, owners = merged_cri_1x(node, main_version)
    _restore_runc(node, section)
    changes = keep_loaded_cgroup(section, get_in(_loaded_cri(node), "containerd", "runtimes") or {}, mine,
                                 getattr(node, "cgroup_align", None) or {}, _kubelet_wants(node))
    if cgroup_changes is not None:
        cgroup_changes.extend(changes)
    return section, owners


def _loaded_cri(node):
    return get_in(node.before, "plugins", node.plugin) or {}


def _known_cri_key(node, path):
    """Whether the node's containerd 1.x has the CRI key at path (relative to the CRI table). Its
    `config default` prints the whole struct; a runtime is read against runc's table; a runtime's
    options (handed to the shim) and an empty table (registry mirrors, configs) are maps whose keys the
    file chooses. Without a default to judge by, every key is known."""
    table = get_in(node.default_doc, "plugins", shapes.CRI_PLUGIN_V2)
    if not isinstance(table, dict):
        return True
    for index, key in enumerate(path):
        if not isinstance(table, dict) or not table or path[index - 1:index] == ("options",):
            return True
        if path[index - 1:index] == ("runtimes",) and key not in table:
            key = "runc"
        if key not in table:
            return False
        table = table[key]
    return True


def unknown_cri_keys(node, section):
    """Key paths of section (relative to the CRI table) that the node's containerd 1.x does not load
    today and does not know (kind's tolerate_missing_hugepages_controller on 1.7, which drops it
    silently): not a loss when the merge does not bring them back either."""
    loaded = flatten(_loaded_cri(node))
    return [p for p in sorted(flatten(section)) if p not in loaded and not _known_cri_key(node, p)]


def restored_keys(node, section):
    """[(path, loaded, declared)] of the CRI section that the merge brings back (1.x); a key the node's
    containerd does not know is not brought back."""
    loaded = flatten(_loaded_cri(node))
    unknown = set(unknown_cri_keys(node, section))
    base = ("plugins", node.plugin)
    return [(base + p, loaded.get(p, ABSENT), v) for p, v in sorted(flatten(section).items())
            if loaded.get(p, ABSENT) != v and p not in unknown]


def _runc_type(table):
    return isinstance(table, dict) and (table.get("runtime_type") or "") in containerd_facts.RUNC_TYPES


def cgroup_mismatches(node, specs):
    """[(runtime, loaded SystemdCgroup, wanted)] for runc-type runtimes the role does not register whose
    SystemdCgroup (absent = false) disagrees with the kubelet's cgroupDriver."""
    want = _kubelet_wants(node)
    if want is None or want == "unreadable":
        return []  # no driver to align with; the audit says why
    mine = set(s["name"] for s in specs)
    runtimes = get_in(_loaded_cri(node), "containerd", "runtimes") or {}
    out = []
    for name, table in sorted(runtimes.items()):
        if name in mine or not _runc_type(table):
            continue
        have = bool((table.get("options") or {}).get("SystemdCgroup", False))
        if have != want:
            out.append((name, have, want))
    return out


def needed(node, gathered, specs, opts, notes):
    """Whether a closure fix must be written on this node (also when no runtime is missing); sets what
    the plan reads: node.cgroup_align, node.restores, node.cri_section (1.x)."""
    node.cgroup_align = {}
    node.restores = []
    mismatches = cgroup_mismatches(node, specs)
    if mismatches and opts.get("align_runc_cgroup"):
        node.cgroup_align = dict((name, want) for name, _have, want in mismatches)
        notes.append("SystemdCgroup of %s set to %s to match the kubelet's cgroupDriver (%s); a disruptive change: "
                     "existing pod sandboxes may fail to be re-created (set %s: true to drain the node first)" % (
                         ", ".join(sorted(node.cgroup_align)), _bool(mismatches[0][2]),
                         "systemd" if mismatches[0][2] else "cgroupfs", DRAIN_VARIABLE))
    converting = False
    mine = [s["name"] for s in specs]
    declared = []
    main = node.files[0]
    if gathered.get("config_exists") and main.get("content") is not None:
        try:
            doc = parse(main["content"], node.config_path)
            converting = bool(conversion_reason(node, doc))
        except shapes.ConfigShapeError:
            converting = False
        if converting:
            declared += keep_loaded_cgroup_in_main(
                node, convert.as_read_by(doc, node.major, node.plugin_uris(), node.config_path), mine)
    if node.major < 2:
        section, _owners = cri_section_1x(node, mine=mine, cgroup_changes=declared)
        for name, want in node.cgroup_align.items():
            section["containerd"]["runtimes"].setdefault(name, {}).setdefault("options", {})["SystemdCgroup"] = want
        loaded = get_in(_loaded_cri(node), "containerd", "runtimes") or {}
        # A runtime the merge brings back whole (runc lost to a drop-in) loads with its defaults filled in.
        node.restores = [(("plugins", node.plugin, "containerd", "runtimes", name), ABSENT, table)
                         for name, table in sorted(section["containerd"]["runtimes"].items())
                         if name not in loaded and name not in mine]
        back = [r[0] for r in node.restores]
        node.restores += [r for r in restored_keys(node, section) if r[0][5:6] not in [(n,) for n in mine] and
                          r[0][:6] not in back]
        unknown = unknown_cri_keys(node, section)
        if unknown:
            notes.append("containerd %d.%d does not know %s (not loaded today, nor after the change): kept as the "
                         "files declare it, nothing lost" % (node.major, node.minor,
                                                             ", ".join(".".join(p) for p in unknown)))
    node.cgroup_declared = sorted(set(declared))
    if node.cgroup_declared:
        notes.append("SystemdCgroup of %s changes from %s to %s as the files declare it (containerd %d.%d does not "
                     "load that section today)%s; a disruptive change: existing pod sandboxes may fail to be "
                     "re-created (set %s: true to drain the node first)" % (
                         ", ".join(n for n, _h, _d in node.cgroup_declared), _bool(node.cgroup_declared[0][1]),
                         _bool(node.cgroup_declared[0][2]), node.major, node.minor,
                         "" if _kubelet_wants(node) is None else ", as the kubelet's cgroupDriver asks",
                         DRAIN_VARIABLE))
    settled = set(n for n, _h, _d in node.cgroup_declared)
    mismatches = [m for m in mismatches if m[0] not in settled]
    if mismatches and not node.cgroup_align:
        notes.append("not changed: SystemdCgroup of %s is %s but the kubelet's cgroupDriver is %s (cgroup_driver). "
                     "Changing it on a node that runs pods needs a drained node (kubeadm: existing pod sandboxes "
                     "may fail to be re-created): set %s: true to align it, with %s: true to drain the node around "
                     "the restart" % (", ".join(m[0] for m in mismatches), _bool(mismatches[0][1]),
                                      "systemd" if mismatches[0][2] else "cgroupfs", ALIGN_VARIABLE, DRAIN_VARIABLE))
    return bool(node.cgroup_align or node.restores or converting)


def _kubelet_wants(node):
    """SystemdCgroup the kubelet's cgroupDriver asks for, None without a kubelet config, or "unreadable"
    for a config that names no driver (no declared value can be judged safe then: the loaded one stays).
    Read once per node: the plan asks for it several times."""
    if not hasattr(node, "kubelet_cgroup_want"):
        try:
            node.kubelet_cgroup_want = kubelet_systemd_cgroup(node.gathered)
        except Refusal:
            node.kubelet_cgroup_want = "unreadable"
    return node.kubelet_cgroup_want


def keep_loaded_cgroup(section, loaded, mine, aligned, want=None):
    """Settle SystemdCgroup of the loaded runc-type runtimes not in mine when a merge or a conversion
    brings back another value than the node runs (a CRI section 1.x or 2.x does not load today). The
    declared value comes back, as every other declared key does, unless the kubelet's cgroupDriver
    contradicts it: then the loaded value stays, since the declared one would make a cgroup_driver error
    the node does not have. Returns [(runtime, loaded, declared)] of the values that change."""
    changes = []
    for name, table in sorted((get_in(section, "containerd", "runtimes") or {}).items()):
        if name in mine or name in aligned or not _runc_type(loaded.get(name)) or not isinstance(table, dict):
            continue
        have = bool((loaded[name].get("options") or {}).get("SystemdCgroup", False))
        declared = bool((table.get("options") or {}).get("SystemdCgroup", False))
        if declared == have:
            continue
        if want is None or want == declared:
            changes.append((name, have, declared))
        else:
            table.setdefault("options", {})["SystemdCgroup"] = have
    return changes


def keep_loaded_cgroup_in_main(node, doc, mine):
    """keep_loaded_cgroup on every CRI runtime table of a converted main config."""
    loaded = get_in(_loaded_cri(node), "containerd", "runtimes") or {}
    changes = []
    for name in shapes.CRI_PLUGIN_NAMES:
        table = get_in(doc, "plugins", name)
        if isinstance(table, dict):
            changes += keep_loaded_cgroup(table, loaded, mine, getattr(node, "cgroup_align", None) or {},
                                          _kubelet_wants(node))
    return changes


def _bool(value):
    return "true" if value else "false"


def _cgroup_changes(node):
    return sorted(set(getattr(node, "cgroup_align", None) or {}) |
                  set(n for n, _h, _d in getattr(node, "cgroup_declared", None) or []))


def cgroup_paths(node, plugin):
    return [("plugins", plugin, "containerd", "runtimes", name, "options", "SystemdCgroup")
            for name in _cgroup_changes(node)]


def allowed_paths(node):
    """Key paths the closure fixes change in the load: restored CRI keys (1.x), aligned SystemdCgroup,
    and every key of a converted main config (what the file declared and the node ignored)."""
    paths = [r[0] for r in getattr(node, "restores", [])] + cgroup_paths(node, node.plugin)
    if node.converted_main is not None:
        doc = node.converted_main[0]
        for path in flatten(dict((k, v) for k, v in doc.items() if k not in ("version", "imports"))):
            dumped = _as_dumped(node, path)
            # The table the file declares, within a plugin: a runtime the node ignored loads with its
            # defaults filled in, and 2.x migrates some keys on load (cni.bin_dir -> cni.bin_dirs).
            paths.append(dumped[:-1] if len(dumped) >= 4 and dumped[0] == "plugins" else dumped)
    return paths


def _as_dumped(node, path):
    """A converted key path as the node's dump shows it: 2.x dumps version 2 CRI keys migrated."""
    if node.major < 2 or path[:2] != ("plugins", shapes.CRI_PLUGIN_V2) or len(path) < 3 or \
            path[2] in convert.SERVER_KEYS:
        return path
    rest = path[2:]
    for v2_path, v3_path in convert.IMAGE_KEYS:
        if rest[:len(v2_path)] == v2_path:
            return ("plugins", convert.CRI_IMAGES) + v3_path + rest[len(v2_path):]
    return ("plugins", shapes.CRI_PLUGIN_V3) + rest


def expected_leaves(node):
    """(path, value) the staged load must show: on 1.x, the CRI section the role's drop-in carries."""
    section = getattr(node, "cri_section", None)
    if node.major >= 2 or not section:
        return []
    base = ("plugins", shapes.CRI_PLUGIN_V2)
    unknown = set(unknown_cri_keys(node, section))
    return [(base + p, v) for p, v in sorted(flatten(section).items()) if p not in unknown]


def disruptive(node):
    """Why this node's change is disruptive (drain first), or []."""
    if _cgroup_changes(node):
        return ["SystemdCgroup of %s changes" % ", ".join(_cgroup_changes(node))]
    return []


def same_option(path, before, after):
    """A runtime's shim option going between its zero value and absent: the shim's options are a protobuf
    message, where an absent field is its zero value, so nothing the node runs with changes."""
    if len(path) < 7 or path[2:4] != ("containerd", "runtimes") or path[5] != "options":
        return False
    values = [v for v in (before, after) if v is not ABSENT]
    return len(values) == 1 and values[0] in ("", 0, False, [], {}) and not isinstance(values[0], float)


def leaf_problems(the_plan, after):
    """The proof's closure part: every key the role's 1.x CRI drop-in carries loads as written."""
    problems = []
    for path, value in the_plan.get("expected_leaves") or []:
        have = get_in(after, *path)
        if have is None and value in ({}, []):
            continue
        if have != value:
            problems.append("%s would load as %r, not %r as merged from the node's files" % (
                ".".join(path), have, value))
    return problems
