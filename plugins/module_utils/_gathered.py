# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape of `gathered`, declared once: what a node's gather returns, what the plan's gather adds, and
what the controller adds before it judges.

Every key has its type and its meaning here; a check that needs new node data adds its key here first.
tests/unit/test_declared_shapes.py holds it: real gathers return exactly these keys, and
no `gathered[...]` / `gathered.get(...)` in plugins/ names a key that is not here.

Node code: Python 3.8+ (typing.TypedDict), standard library only. The types are documentation; nothing is
checked at run time."""

from typing import Any, Dict, List, Optional, TypedDict


class _GatherAlways(TypedDict):
    """The keys every gather returns (_node_gather.gather)."""

    containerd_bin: str  # the containerd binary that ran (the option, found by path or in PATH)
    config_path: str  # the main config file, absolute
    config_exists: bool  # whether it exists; without it containerd runs on its defaults (`config default`)
    version_output: str  # what `containerd --version` printed
    version: str  # the release, e.g. "2.1.9"
    version_major: int  # its major number
    version_minor: int  # its minor number
    dump: Optional[str]  # the loaded config (`config dump`, `config default` without a file); None: refused
    dump_warnings: List[str]  # containerd's level=warning/error lines while it loaded the config
    refused: Optional[Dict[str, Any]]  # None, or why containerd refuses it: command, rc, cause, stderr_tail, warnings
    imports: List[Dict[str, Any]]  # each imports entry: pattern, resolved, declared_in, matches, dir, dir_exists
    files: List[Dict[str, Any]]  # main, imported and unreferenced files: path, role, content, error (load, parsed)
    dropin_dirs: List[str]  # the directories searched for config fragments nothing imports
    fragment_scan: Dict[str, Any]  # that search within its caps: dirs, files_read, truncated
    fragment_loads: Optional[Dict[str, Any]]  # fragments loaded as imports (loaded, cap, left_out); None: no dump
    paths: Dict[str, Dict[str, Any]]  # facts (exists, is_file, executable) of each binary and file the configs name
    shims: Dict[str, Dict[str, Any]]  # the facts of each non-runc runtime_type's shim binary
    kubelet_config: Dict[str, Any]  # the kubelet's config file: path, exists, content, error
    cdi_spec_dirs_read: List[str]  # the CDI spec directories read
    cdi_specs: List[Dict[str, Any]]  # each CDI spec read: path, error, host_paths (path, exists)
    restart_marker: Optional[Dict[str, Any]]  # a restart the role's marker says is pending, else None


class Gathered(_GatherAlways, total=False):
    """_node_gather.gather()'s result (containerd_config_info's, the write's and after_restart's)."""

    running: Dict[str, Any]  # what the daemon loaded at its start (crictl info, or its start time); gather_running


class _PlanGatherAlways(Gathered):
    """What the plan's gather adds (_node_remediation.gather_for_plan)."""

    default_text: str  # what `containerd config default` printed
    file_states: Dict[str, Dict[str, Any]]  # main config and drop-ins: exists, sha256, mode, uid, gid, mtime
    dropin_dir_exists: bool  # whether the role's drop-in dir exists
    migration: Optional[Dict[str, Any]]  # `config migrate` of an old main file (from_version, text, ...); None


class PlanGathered(_PlanGatherAlways, total=False):
    """register_runtimes_node's step=gather."""

    speculated: Dict[str, Any]  # with speculate: the likeliest plan's stage in the same call, or why not


class JudgedGathered(PlanGathered, total=False):
    """A host's gathered as the controller judges it: a gather above as its task registered it, with what
    _parse_gathered adds; or only a Node object (cluster audits), or a bare dump's loaded summary."""

    loaded: Optional[Dict[str, Any]]  # the dump parsed (_config_shapes.summarize); None when refused
    load_warnings: List[Dict[str, Any]]  # containerd's load warnings, each with the file that sets what it names
    node_object: Dict[str, Any]  # cluster audits: the Node object in place of a gather
    failed: bool  # Ansible's: the gather task failed
    msg: str  # Ansible's: why it failed
    unreachable: bool  # Ansible's: the host could not be reached
