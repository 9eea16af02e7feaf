# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stage of the likeliest plan, in the gather's own call: a node that only lacks the role's
drop-ins (and, maybe, the imports entry that loads them) is then gathered, asked who owns the files
and staged in one module run instead of two. The controller proposes the drop-ins, one set per
main-config version and kubelet cgroup driver; this picks the set that fits the node. It is only a
guess: the controller uses the result only when its own plan writes exactly these files with these
imports, and stages again otherwise."""

import json
import os
import re

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_config_text as node_config_text
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_remediation as node_remediation

# YAML or JSON, as kubelets read it: a guess only (the controller parses the file).
_CGROUP_DRIVER = re.compile(r"""(?:^|[{,])\s*["']?cgroupDriver["']?\s*:\s*["']?([A-Za-z]+)""", re.MULTILINE)


def kubelet_key(gathered):
    """'absent' (no kubelet config to read), 'systemd' or 'other': which proposed set fits the node."""
    content = (gathered.get("kubelet_config") or {}).get("content")
    if content is None:
        return "absent"
    match = _CGROUP_DRIVER.search(content)
    return "systemd" if match and match.group(1) == "systemd" else "other"


def _loaded(dump, name):
    return re.search(r"\.runtimes\.%s[\].]" % re.escape(name), dump or "") is not None


def _staged_main(text, resolved, dropin_dir):
    """The main text with its imports of dropin_dir pointing into the staging directory; None when the
    imports cannot be cut out as text."""
    rest = node_config_text.without_top_level_array(text, "imports")
    if rest is None or rest.startswith("\ufeff"):
        return None
    staged = [node_remediation.STAGE_PLACEHOLDER + r if os.path.dirname(r) == dropin_dir else r for r in resolved]
    return "imports = [%s]\n%s" % (", ".join(json.dumps(p) for p in staged), rest)


def choose(params, gathered):
    """(index of the proposed set that fits, why not) for the gathered node."""
    proposals = params.get("speculate") or []
    main = (gathered.get("files") or [{}])[0]
    if not proposals or gathered.get("version_major", 0) < 2 or gathered.get("refused"):
        return None, "no proposal for this node"
    if not gathered.get("config_exists") or main.get("content") is None:
        return None, "no main config to keep"
    version = node_config_text.top_level_version(main["content"])
    kubelet = kubelet_key(gathered)
    for index, proposal in enumerate(proposals):
        if proposal.get("version") == version and proposal.get("kubelet") in ("any", kubelet):
            names = proposal.get("runtimes") or []
            if names and all(_loaded(gathered.get("dump"), n) for n in names):
                return None, "every runtime is loaded already"
            if any(os.path.lexists(f["path"]) for f in proposal["files"]):
                return None, "a proposed file exists"
            return index, None
    return None, "no proposal for version %s" % version


def stage(params, gathered, stage_with_evidence):
    """{proposal, import_patterns, added_import, owned_paths, staged} or {skipped: why}: the chosen set staged
    beside the node's main config (with the proposal's add_import entry when no entry loads the set) by
    stage_with_evidence(params), the module's stage step with owned_paths (the ownership evidence first)."""
    index, why = choose(params, gathered)
    if index is None:
        return {"skipped": why}
    proposal = params["speculate"][index]
    config_path = gathered["config_path"]
    dropin_dir = params["dropin_dir"].rstrip("/")
    resolved = [e["resolved"] for e in gathered.get("imports") or [] if e.get("declared_in") == config_path]
    paths = [f["path"] for f in proposal["files"]]
    added = None
    if not any(all(host_paths.glob_matches_path(p, path) for path in paths) for p in resolved):
        # The plan adds one imports entry for its drop-ins: the stage loads the main config with it.
        added = proposal.get("add_import")
        if not added or not all(host_paths.glob_matches_path(added, path) for path in paths):
            return {"skipped": "the main config does not import the proposed files"}
    patterns = resolved + ([added] if added else [])
    staged_main = _staged_main(gathered["files"][0]["content"], patterns, dropin_dir)
    if staged_main is None:
        return {"skipped": "the main config's imports cannot be cut out as text"}
    owned = sorted(set(paths) | set(os.path.dirname(p) for p in resolved if "*" in os.path.basename(p))
                   | set([config_path] if added else []))
    files = [dict(path=f["path"], content=f["content"], expect_sha256=None) for f in proposal["files"]]
    stage_params = dict(params, files=files, staged_main=staged_main, input_paths=[], owned_paths=owned,
                        version_output=gathered.get("version_output"))
    staged = stage_with_evidence(stage_params)
    if staged.get("stage_failed"):
        return {"skipped": "staging failed: %s" % staged["stage_failed"]}
    return {"proposal": index, "import_patterns": patterns, "added_import": added, "owned_paths": owned,
            "staged": staged}
