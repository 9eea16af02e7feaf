# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The likeliest plan, proposed to the gather so that the node stages it in the same call
(module_utils/_node_speculation): on containerd 2.x, the role's drop-ins, with the main config left as
it is or given the one imports entry that loads them. The node's stage of it stands for the plan's own
stage only when the plan writes exactly those files and imports; any other plan is staged as always, so
a wrong guess costs one call and changes no verdict."""

import os

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import dropins
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import ownership_gate
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.options import normalize_runtimes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.refusal import Refusal

# The node's guess of the kubelet's cgroup driver, and what options.kubelet_systemd_cgroup reads from it.
_KUBELET = (("absent", None), ("systemd", True), ("other", False))
# The main-config versions containerd 2.x reads (2.3+ writes 4).
_VERSIONS = (2, 3, 4)


def proposals(opts):
    """[{version, kubelet, add_import, runtimes, files}] for the node module's speculate option; [] when the run
    asks for more than drop-ins (a default runtime, removals, aligned cgroups) or nothing."""
    if not opts.get("runtimes") or opts.get("default_runtime_name") or opts.get("remove_runtimes") or \
            opts.get("align_runc_cgroup"):
        return []
    dropin_dir = opts["dropin_dir"].rstrip("/")
    add_import = os.path.join(dropin_dir, opts["dropin_glob"])  # as plan() adds it
    out = []
    for kubelet, systemd in _KUBELET:
        asked = []

        def kubelet_cgroup(value=systemd):
            asked.append(True)
            return value
        try:
            specs = normalize_runtimes(opts["runtimes"], opts.get("systemd_cgroup"), kubelet_cgroup)
        except Refusal:
            return []  # the plan says why
        if any(s["cdi"] for s in specs):
            return []  # CDI may need the CRI-wide drop-in too
        for version in _VERSIONS:
            files = [dropins.runtime_dropin(opts, dropin_dir, s, version, dropins.cri_plugin_for(version)) for s in specs]
            out.append({"version": version, "kubelet": kubelet if asked else "any", "add_import": add_import,
                        "runtimes": [s["name"] for s in specs], "files": files})
        if not asked:
            break  # no runtime's table depends on the kubelet: one set per version
    return out


def matching_stage(the_plan, gathered, speculated, proposed):
    """The node's stage of a proposed set when the plan writes exactly that set, removes nothing, leaves the
    main config as it is or adds to it only the imports entry the stage added, and asks for the same
    ownership evidence; else None."""
    if not isinstance(speculated, dict) or speculated.get("proposal") is None or not speculated.get("staged"):
        return None
    index = speculated["proposal"]
    if not isinstance(index, int) or not 0 <= index < len(proposed):
        return None
    config_path = gathered["config_path"]
    mains = [f for f in the_plan["writes"] if f["path"] == config_path]
    drop_ins = [f for f in the_plan["writes"] if f["path"] != config_path]
    wanted = sorted((f["path"], f["content"]) for f in proposed[index]["files"])
    planned = sorted((f["path"], f["content"]) for f in drop_ins)
    if the_plan["removes"] or the_plan.get("input_paths") or planned != wanted:
        return None
    if any(f.get("expect_sha256") for f in drop_ins):
        return None
    added = speculated.get("added_import")
    if bool(mains) != bool(added) or (mains and not _only_added(mains[0]["content"], gathered, added)):
        return None
    if list(the_plan.get("import_patterns") or []) != list(speculated.get("import_patterns") or []):
        return None
    if ownership_gate.evidence_paths(the_plan, gathered) != list(speculated.get("owned_paths") or []):
        return None
    return speculated["staged"]


def _only_added(new_text, gathered, added):
    """Whether the plan's main config is the gathered one with only the imports entry added."""
    try:
        before = toml_codec.loads((gathered["files"][0] or {}).get("content") or "", gathered["config_path"])
        after = toml_codec.loads(new_text or "", gathered["config_path"])
    except toml_codec.TomlError:
        return False
    before["imports"] = list(before.get("imports") or []) + [added]
    return after == before
