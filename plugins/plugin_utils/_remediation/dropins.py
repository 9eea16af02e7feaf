# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the role's own drop-ins carry: on containerd 2.x, which merges drop-ins key by key, one per
runtime plus one for CRI-wide keys; on 1.x, which takes a plugin's whole section from the last file
declaring it (containerd#5837), one that carries that CRI section plus the runtimes."""

import copy
import os

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import closure
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.ownership import header, own_cri_name, own_name
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.toml_edit import (
    deep_update, ensure_table, flatten, get_in, key_path, parse)


def cri_plugin_for(version):
    return shapes.CRI_PLUGIN_V2 if version <= 2 else shapes.CRI_PLUGIN_V3


def runtime_doc(version, plugin, plugin_table):
    return {"version": version, "plugins": {plugin: plugin_table}}


def dropin_plugin(node, version, notes):
    """The CRI plugin name a drop-in of this version is read under. A version 2 file on 2.x is
    migrated, unless the merged files already declare io.containerd.cri.v1.runtime: then 2.x
    reads only that name and drops the old one (measured with 2.1, AgentBaker's kata template)."""
    plugin = cri_plugin_for(version)
    if node.major < 2 or version != 2:
        return plugin
    for entry in node.merge_order():
        try:
            doc = toml_codec.loads(entry.get("content") or "", entry["path"])
        except toml_codec.TomlError:
            continue
        if isinstance(doc.get("plugins"), dict) and shapes.CRI_PLUGIN_V3 in doc["plugins"]:
            notes.append("%s declares %s in a version 2 file, so containerd 2.x reads only that name: the drop-ins "
                         "use it too" % (entry["path"], shapes.CRI_PLUGIN_V3))
            return shapes.CRI_PLUGIN_V3
    return plugin


def runtime_dropin(opts, dropin_dir, spec, version, plugin):
    """{path, content} of the role's drop-in for one runtime on 2.x."""
    doc = runtime_doc(version, plugin, {"containerd": {"runtimes": {spec["name"]: copy.deepcopy(spec["table"])}}})
    return {"path": os.path.join(dropin_dir, own_name(opts, spec["name"])),
            "content": header(["Registers the %s runtime." % spec["name"]]) + toml_codec.dumps(doc)}


def plan_2x(node, opts, specs, missing, version, change_default, wanted_default, need_cdi, own, notes):
    writes = []
    plugin = dropin_plugin(node, version, notes)
    for spec in specs:
        if spec["name"] in missing:
            writes.append(runtime_dropin(opts, node.dropin_dir, spec, version, plugin))
    if change_default or need_cdi or getattr(node, "cgroup_align", None):
        path = os.path.join(node.dropin_dir, own_cri_name(opts))
        table = {}
        if path in own:
            table = copy.deepcopy(get_in(parse(own[path]["content"], path), "plugins", plugin) or {})
        if change_default:
            ensure_table(table, "containerd")["default_runtime_name"] = wanted_default
        if need_cdi:
            table["enable_cdi"] = True
        for name, want in sorted(getattr(node, "cgroup_align", {}).items()):
            ensure_table(table, "containerd", "runtimes", name, "options")["SystemdCgroup"] = want
        writes.append({"path": path, "content": header(["CRI-wide settings asked for: default runtime, CDI, runc-type runtimes' SystemdCgroup."]) +
                       toml_codec.dumps(runtime_doc(version, plugin, table))})
    return writes, []


def plan_1x(node, opts, specs, version, change_default, wanted_default, need_cdi, own, notes):
    """One own drop-in with the key-by-key merge of every file's CRI section (closure), plus the runtimes.
    node.cri_pinned: {path, keys, from}: the CRI keys the drop-in copies from the other files (it pins them)."""
    path = os.path.join(node.dropin_dir, own_cri_name(opts))
    section, owners = closure.cri_section_1x(node, version, mine=[s["name"] for s in specs])
    mine = set(s["name"] for s in specs)
    pinned = sorted(key_path(("plugins", shapes.CRI_PLUGIN_V2) + k) for k in flatten(section)
                    if not (k[:2] == ("containerd", "runtimes") and len(k) > 2 and k[2] in mine))
    runtimes = ensure_table(section, "containerd", "runtimes")
    for name, want in sorted(getattr(node, "cgroup_align", {}).items()):
        ensure_table(runtimes, name, "options")["SystemdCgroup"] = want
    for spec in specs:
        deep_update(ensure_table(runtimes, spec["name"]), spec["table"])
    if change_default:
        ensure_table(section, "containerd")["default_runtime_name"] = wanted_default
    if need_cdi:
        section["enable_cdi"] = True
    node.cri_section = section
    node.cri_pinned = {"path": path, "keys": pinned, "from": owners}
    origin = "the key-by-key merge of the CRI sections of %s" % ", ".join(owners) if owners else \
        "containerd's default CRI section"
    notes.append("pins: containerd 1.x replaces the whole CRI section per file: %s carries %s (what 2.x would load) "
                 "plus the runtimes, so it pins %d keys as they are now (%s); a later change of one of them in %s is "
                 "not loaded until the role runs again" % (
                     path, origin, len(pinned), named_keys(pinned, 12), ", ".join(owners) or "containerd's defaults"))
    content = header(["containerd 1.x takes a plugin's whole section from the last file that declares it",
                      "(containerd#5837): this file carries %s, plus the runtimes below." % origin]) + \
        toml_codec.dumps({"version": 2, "plugins": {shapes.CRI_PLUGIN_V2: section}})
    # Own files of an earlier layout (one per runtime, or another name) would replace this section again.
    removes = [p for p in own if p != path]
    return [{"path": path, "content": content}], removes


def named_keys(keys, limit=None):
    """Key paths as a line of the outcome names them: the table they share said once ('in [plugins."x"]: a, b.c'),
    the first limit of them and how many more."""
    prefix = os.path.commonprefix([k + "." for k in keys]) if len(keys) > 1 else ""
    prefix = prefix[:prefix.rfind('".') + 2] if '".' in prefix else ""
    shown = [k[len(prefix):] for k in keys[:limit]]
    text = ("in [%s]: " % prefix.rstrip(".") if prefix else "") + ", ".join(shown)
    return text + (" and %d more" % (len(keys) - limit) if limit and len(keys) > limit else "")
