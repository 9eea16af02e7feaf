#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: register_runtimes_node
short_description: Node side of containerd_runtime - gather, stage and load, write with proof and rollback
description:
  - The steps of M(gpurt.runtime_gate.register_runtimes) that must run on the node, one call per step.
    Use that action; this module is for it, and for debugging a node by hand.
  - O(step=gather) is the gather of M(gpurt.runtime_gate.containerd_config_info) plus C(containerd config default),
    the sha256, mode and owner of the main config and of every drop-in, facts on O(extra_paths), and
    containerd's own C(config migrate) of an older main file (run on a private copy without its imports).
  - O(step=stage) writes the proposed O(files) and O(staged_main) under a private directory that mirrors the
    node's paths (the other drop-ins of O(dropin_dir) are copied there too), loads them with the node's
    containerd and returns the dump. The directory is always removed; nothing else is written.
  - O(step=write) backs up and writes (or removes) O(files) atomically, loads the real config and compares
    it with the staged load that was proved (O(expected_sha256)); on any difference or error it puts every
    file back and fails. On success it returns the gather of the written config.
  - O(step=ownership) reports the evidence of who owns O(owned_paths) (read-only mount, immutable attribute,
    access, a generated header, templates or parts beside them, the units that start containerd read under
    O(host_root), os-release) and the texts of the generator inputs beside them. It writes nothing.
  - O(step=after_restart) is the gather of the config with the running view (C(crictl info)), that is what
    the restarted daemon has.
  - O(step=restore) puts O(files) back from their O(files[].backup) (a file without one is removed).
  - O(step=restart_proved) removes the restart marker of O(config_path) once the controller proved the restarted
    daemon.
  - Every step refuses a file whose sha256 is not O(files[].expect_sha256) (another tool wrote it since).
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  step:
    description: Which step to run.
    type: str
    required: true
    choices: [gather, stage, write, ownership, after_restart, restore, restart_proved]
  containerd_bin:
    description: The containerd binary, as a path or a name looked up in E(PATH).
    type: str
    default: containerd
  config_path:
    description: The main containerd config file.
    type: path
    default: /etc/containerd/config.toml
  dropin_dir:
    description: The directory of the role's drop-ins.
    type: path
    default: /etc/containerd/conf.d
  dropin_dirs:
    description: Directories listed for files that no C(imports) entry matches (the gather's O(dropin_dirs)).
    type: list
    elements: path
  kubelet_config_path:
    description: The kubelet config file.
    type: path
    default: /var/lib/kubelet/config.yaml
  cdi_spec_dirs:
    description: Directories of CDI specs to read.
    type: list
    elements: path
  timeout:
    description: Seconds each containerd command may run before it is killed.
    type: int
    default: 30
  max_file_bytes:
    description: Files larger than this are reported with an error instead of read.
    type: int
    default: 1048576
  max_dump_bytes:
    description: A dump larger than this fails the step.
    type: int
    default: 67108864
  max_memory_mb:
    description:
      - Memory limit (C(RLIMIT_DATA)), in MiB, of every C(containerd config dump) that loads the node's
        files (O(step=gather), O(step=stage), O(step=write)), as in M(gpurt.runtime_gate.containerd_config_info).
        C(0) sets no limit.
    type: int
    default: 1024
  migrate:
    description:
      - O(step=gather) - when to run C(containerd config migrate) on the main file (containerd 2.x only);
        C(auto) for a version 1 file, C(always) for any version below what the node writes.
    type: str
    default: auto
    choices: [auto, always, never]
  extra_paths:
    description: O(step=gather) - more paths (BinaryNames to be registered) to report facts on.
    type: list
    elements: str
    default: []
  files:
    description:
      - O(step=stage) and O(step=write) - the files to write (with O(files[].content)) or remove (without).
        Each is the main config or a file directly in O(dropin_dir).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path on the node.
        type: path
        required: true
      content:
        description: The new text; absent or null removes the file.
        type: str
      expect_sha256:
        description: The sha256 the file has now; null when it must not exist.
        type: str
      backup:
        description: O(step=restore) - the backup to put back; absent for a file the write created.
        type: path
      existed:
        description: O(step=restore) - the file existed before the write (without O(files[].backup) it is left alone).
        type: bool
        default: false
  owned_paths:
    description:
      - O(step=ownership) - the files (or directories) whose ownership evidence is reported.
      - O(step=stage) - when given, the same evidence first, then the stage (one call for both); a staging error
        is then returned as RV(stage_failed) beside the evidence instead of failing the step.
    type: list
    elements: path
    default: []
  host_root:
    description:
      - Where the node's C(/) is (a directory per node in tests, a mounted image); unit files, os-release and
        O(state_dir) are read under it, the root prefixed exactly once.
    type: path
    default: /
  state_dir:
    description:
      - The role's state directory on the node (a node path under O(host_root)). O(step=write) writes the restart
        marker there before it changes a file; O(step=restart_proved) removes it; every gather reads it.
    type: path
    default: /var/lib/gpurt-runtime-gate
  service_names:
    description: O(step=ownership) - the systemd units that start containerd.
    type: list
    elements: str
    default: [containerd]
  input_paths:
    description: O(step=stage) and O(step=write) - generator inputs (templates) written instead of the file they render.
    type: list
    elements: path
    default: []
  crictl_bin:
    description: O(step=gather) - C(crictl), for the running view (a restart that did not happen).
    type: str
    default: crictl
  cri_endpoint:
    description: O(step=gather) - the CRI endpoint crictl talks to; default from the config's C([grpc] address).
    type: str
  staged_main:
    description:
      - O(step=stage) - the main config to load from the staging directory; C(@@GPURT_STAGE@@) in it is
        replaced by the staging directory (its imports of O(dropin_dir) point there).
    type: str
  expected_sha256:
    description:
      - O(step=write) - sha256 of the staged dump without its imports line; the written config must load to it.
    type: str
  import_patterns:
    description:
      - O(step=write) - the resolved imports entries of the written main config; a backup they would match is refused.
    type: list
    elements: str
    default: []
  backup_dir:
    description: O(step=write) - where a directory of backups is made for this write (never under an imported dir).
    type: path
    default: /var/backups/gpurt-runtime-gate
  version_output:
    description:
      - O(step=write) - what C(containerd --version) printed at O(step=gather), so that the gather after the
        write runs no containerd command twice (it reuses the dump the write verified as well).
      - When not given, the write runs C(containerd --version) itself.
      - O(step=stage) with O(gather_staged=true) - the same, for the gather of the staged tree.
    type: str
  gather_staged:
    description:
      - O(step=stage), and O(step=gather) for RV(speculated) - also return, as RV(gathered), the gather of the staged tree with the staging directory
        taken out of its paths, which is what O(step=write) returns once the same files are written (check mode's
        re-audit judges it). Not the running view, since nothing is restarted.
    type: bool
    default: false
  speculate:
    description:
      - O(step=gather) - drop-ins the controller expects to write, one set per main-config version and kubelet cgroup
        driver. When the node's main config has that version, imports them (or takes the set's O(speculate[].add_import)
        entry for them) and none of them exists, the set is staged in this call too (with the ownership evidence first) and returned as RV(speculated); the
        controller uses it only when its plan writes exactly these files, and stages again otherwise.
    type: list
    elements: dict
    default: []
    suboptions:
      version:
        description: The top-level C(version) of the main config this set is for.
        type: int
        required: true
      kubelet:
        description: The kubelet cgroup driver this set is for (C(absent) without a kubelet config), or C(any).
        type: str
        choices: [any, absent, systemd, other]
        default: any
      add_import:
        description:
          - The imports entry the plan adds when no entry of the main config loads the set; the stage then loads
            the main config with it. Without it, such a node is not staged.
        type: str
      runtimes:
        description: The runtimes the set registers; a node whose dump has them all is not staged.
        type: list
        elements: str
        default: []
      files:
        description: The drop-ins, each new (absent on the node).
        type: list
        elements: dict
        required: true
        suboptions:
          path:
            description: Absolute path on the node.
            type: path
            required: true
          content:
            description: The text.
            type: str
            required: true
  shim_dirs:
    description: More directories where bare BinaryNames and runtime shims are looked up, as the audit's
      O(gpurt.runtime_gate.containerd_config_info#module:shim_dirs).
    type: list
    elements: path
extends_documentation_fragment:
  - gpurt.runtime_gate.attributes
attributes:
  check_mode:
    support: partial
    details: O(step=gather) and O(step=stage) write nothing outside a private temporary directory; O(step=write) is refused.
  diff_mode:
    support: none
notes:
  - Runs on the node with Python 3.8+ and the standard library only; the TOML is parsed on the controller.
seealso:
  - module: gpurt.runtime_gate.register_runtimes
  - module: gpurt.runtime_gate.containerd_config_info
"""

EXAMPLES = r"""
- name: See what the remediation would gather on a node
  gpurt.runtime_gate.register_runtimes_node:
    step: gather
  register: gathered
"""

RETURN = r"""
gathered:
  description: O(step=stage) with O(gather_staged=true) - the gather of the staged tree, keys as at O(step=write).
  returned: step is stage and gather_staged is true and the staged files load
  type: dict
containerd_bin:
  description: O(step=gather) and O(step=write) - the containerd binary that ran.
  returned: step is gather or write
  type: str
config_path:
  description: O(step=gather) and O(step=write) - the main config file.
  returned: step is gather or write
  type: str
config_exists:
  description: O(step=gather) and O(step=write) - whether it exists.
  returned: step is gather or write
  type: bool
version_output:
  description: O(step=gather) and O(step=write) - what C(containerd --version) printed (at O(step=write), O(version_output) when given).
  returned: step is gather or write
  type: str
version:
  description: O(step=gather) and O(step=write) - the containerd release.
  returned: step is gather or write
  type: str
  sample: 2.1.9
version_major:
  description: O(step=gather) and O(step=write) - its major number.
  returned: step is gather or write
  type: int
version_minor:
  description: O(step=gather) and O(step=write) - its minor number.
  returned: step is gather or write
  type: int
refused:
  description:
    - O(step=gather) and O(step=write) - null, or why containerd refuses the config (as RV(gpurt.runtime_gate.containerd_config_info#module:refused)).
  returned: step is gather or write
  type: dict
files:
  description:
    - O(step=gather) and O(step=write) - the main config, imported and drop-in files, each with C(path), C(role), C(content)
      and C(error), as M(gpurt.runtime_gate.containerd_config_info) returns them with O(gpurt.runtime_gate.containerd_config_info#module:keep_texts=true).
  returned: step is gather or write
  type: list
  elements: dict
dropin_dirs:
  description: O(step=gather) and O(step=write) - the directories listed for drop-in files (O(dropin_dirs)).
  returned: step is gather or write
  type: list
  elements: str
fragment_scan:
  description: O(step=gather) and O(step=write) - where the gather looked for config fragments nothing imports
    (as M(gpurt.runtime_gate.containerd_config_info) returns it).
  returned: step is gather or write
  type: dict
fragment_loads:
  description: O(step=gather) and O(step=write) - the config fragments nothing imports that the node's containerd
    loaded as an import, and what its cap left out (as M(gpurt.runtime_gate.containerd_config_info) returns it).
  returned: step is gather or write
  type: dict
paths:
  description:
    - O(step=gather) and O(step=write) - facts on the runtime binaries and files named in the dump and files, and on
      O(extra_paths), by path (as M(gpurt.runtime_gate.containerd_config_info) returns them).
  returned: step is gather or write
  type: dict
shims:
  description: O(step=gather) and O(step=write) - the facts of each non-runc C(runtime_type)'s shim binary.
  returned: step is gather or write
  type: dict
kubelet_config:
  description: O(step=gather) and O(step=write) - the kubelet config's C(path), C(exists), C(content) and C(error).
  returned: step is gather or write
  type: dict
cdi_spec_dirs_read:
  description: O(step=gather) and O(step=write) - the CDI spec directories read.
  returned: step is gather or write
  type: list
  elements: str
cdi_specs:
  description: O(step=gather) and O(step=write) - the CDI specs and whether the host paths they name exist.
  returned: step is gather or write
  type: list
  elements: dict
running:
  description: O(step=gather) - the running view (as M(gpurt.runtime_gate.containerd_config_info) returns it).
  returned: step is gather
  type: dict
restart_marker:
  description:
    - O(step=gather), O(step=write) and O(step=after_restart) - the role's restart marker of O(config_path) in
      O(state_dir) (as M(gpurt.runtime_gate.containerd_config_info) returns it), or null when no restart is
      pending. O(step=write) writes it before the first file changes.
  returned: step is gather, write or after_restart
  type: dict
removed_marker:
  description: O(step=restart_proved) - the path of the restart marker, now removed.
  returned: step is restart_proved
  type: str
default_text:
  description: O(step=gather) - what C(containerd config default) prints.
  returned: step is gather
  type: str
file_states:
  description: O(step=gather) - sha256, mode, uid and gid of the main config and of each file of O(dropin_dir).
  returned: step is gather
  type: dict
dropin_dir_exists:
  description: O(step=gather) - whether O(dropin_dir) exists.
  returned: step is gather
  type: bool
migration:
  description: O(step=gather) - containerd's migration of the main file, or null when none was asked for.
  returned: step is gather
  type: dict
dump:
  description:
    - The loaded config; of the node's files for O(step=gather), of the staged files for O(step=stage), of the
      written ones for O(step=write). Null when containerd refused it.
  returned: success
  type: str
dump_warnings:
  description: containerd's warning and error lines while loading.
  returned: success
  type: list
  elements: str
rc:
  description: O(step=stage) - exit code of the staged C(config dump).
  returned: step is stage
  type: int
stderr_tail:
  description: O(step=stage) - the end of what the staged C(config dump) printed on stderr when it failed; empty otherwise.
  returned: step is stage
  type: str
imports:
  description: The imports entries and the files they match (O(step=stage) - mapped back to node paths).
  returned: success
  type: list
  elements: dict
normalized_sha256:
  description: O(step=stage) - sha256 of the staged dump without its imports line.
  returned: step is stage
  type: str
backup_dir:
  description: O(step=write) - the directory holding the backups of this write, or null when no file existed.
  returned: step is write
  type: str
written:
  description: O(step=write) - the files written.
  returned: step is write
  type: list
  elements: str
removed:
  description: O(step=write) - the files removed.
  returned: step is write
  type: list
  elements: str
restored:
  description: O(step=write) failed - whether every file was put back as it was.
  returned: failure of step write
  type: bool
restore_problems:
  description: O(step=write) failed - the files that could not be put back, and why.
  returned: failure of step write
  type: list
  elements: str
changed_files:
  description: O(step=write) failed - the files the write had changed before it failed (empty - nothing was changed).
  returned: failure of step write
  type: list
  elements: str
dump_after_write:
  description: O(step=write) failed - the dump of the written files, or null when they did not load.
  returned: failure of step write
  type: str
ownership:
  description: O(step=ownership) - the evidence of each of O(owned_paths), the units that start containerd, os-release.
  returned: step is ownership, or stage with owned_paths
  type: dict
inputs:
  description: O(step=ownership) - path to C(text), C(error) and C(state) of each generator input beside O(owned_paths).
  returned: step is ownership, or stage with owned_paths
  type: dict
stage_failed:
  description: O(step=stage) with O(owned_paths) - why the staging failed (the evidence is returned all the same).
  returned: step is stage with owned_paths, when the staging failed
  type: str
speculated:
  description:
    - O(step=gather) with O(speculate) - the proposed set staged beside the node's unchanged main config, or why not.
  returned: step is gather and speculate is given
  type: dict
  contains:
    skipped:
      description: Why no proposed set was staged (the controller stages its plan itself).
      type: str
      returned: when nothing was staged
    proposal:
      description: The index in O(speculate) of the set that was staged.
      type: int
      returned: when a set was staged
    import_patterns:
      description: The resolved imports entries the stage loaded the main config with.
      type: list
      elements: str
      returned: when a set was staged
    added_import:
      description: The proposal's O(speculate[].add_import) when the stage added it, else null.
      type: str
      returned: when a set was staged
    owned_paths:
      description: The paths whose ownership evidence RV(speculated.staged) carries.
      type: list
      elements: str
      returned: when a set was staged
    staged:
      description: What O(step=stage) with O(owned_paths) returns for that set.
      type: dict
      returned: when a set was staged
put_back:
  description: O(step=restore), and O(step=write) failed - the files put back as they were.
  returned: step is restore, or failure of step write
  type: list
  elements: str
removed_new:
  description: O(step=restore) - the files the write had created, removed.
  returned: step is restore
  type: list
  elements: str
problems:
  description: O(step=restore) - the files that could not be put back, with why.
  returned: step is restore
  type: list
  elements: str
step:
  description: The step that failed.
  returned: failure
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_remediation as node_remediation
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _restart_marker as restart_marker
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._node_gather import GatherError


def _os_error_text(exc, where):
    return "%s: %s" % (getattr(exc, "filename", None) or where, exc.strerror or exc)


def _ownership():
    """module_utils/_node_ownership, imported when a step needs it: each run compiles what it imports from the
    AnsiballZ zip, and the gather, which every host runs on every run, needs none of it."""
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_ownership
    return _node_ownership


def _stage(params):
    """The stage; with owned_paths, the ownership evidence first, so that one call serves both when the
    evidence keeps the plan. Then a staging error is returned as stage_failed, beside the evidence."""
    if not params["owned_paths"]:
        return node_remediation.stage(params)
    evidence = _ownership().evidence(params)
    try:
        return dict(evidence, **node_remediation.stage(params))
    except (GatherError, node_remediation.FilesError) as exc:
        return dict(evidence, stage_failed=str(exc))
    except (IOError, OSError) as exc:
        return dict(evidence, stage_failed=_os_error_text(exc, "stage"))


def _restart_proved(params):
    """The proof after the restart succeeded: the restart marker goes."""
    return {"removed_marker": restart_marker.remove(params, os.path.abspath(params["config_path"]))}


def _gather(params):
    """The gather; with speculate, the stage of the proposed drop-ins that fit the node too."""
    result = node_remediation.gather_for_plan(params)
    if params["speculate"]:
        from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_speculation
        result["speculated"] = _node_speculation.stage(params, result, _stage)
    return result


_STEPS = {
    "gather": _gather,
    "stage": _stage,
    "write": node_remediation.write,
    "ownership": lambda params: _ownership().evidence(params),
    "after_restart": lambda params: _ownership().after_restart(params),
    "restore": lambda params: _ownership().restore(params),
    "restart_proved": _restart_proved,
}


ARGUMENT_SPEC = dict(
    containerd_facts.GATHER_SPEC,
    step=dict(type="str", required=True, choices=list(_STEPS)),
    dropin_dir=dict(type="path", default=containerd_facts.DROPIN_DIR),
    migrate=dict(type="str", default="auto", choices=["auto", "always", "never"]),
    extra_paths=dict(type="list", elements="str", default=[]),
    files=dict(type="list", elements="dict", default=[], options=dict(
        path=dict(type="path", required=True),
        content=dict(type="str"),
        expect_sha256=dict(type="str"),
        backup=dict(type="path"),
        existed=dict(type="bool", default=False),
    )),
    owned_paths=dict(type="list", elements="path", default=[]),
    service_names=dict(type="list", elements="str", default=["containerd"]),
    input_paths=dict(type="list", elements="path", default=[]),
    staged_main=dict(type="str"),
    expected_sha256=dict(type="str"),
    import_patterns=dict(type="list", elements="str", default=[]),
    backup_dir=dict(type="path", default=containerd_facts.BACKUP_DIR),
    version_output=dict(type="str"),
    gather_staged=dict(type="bool", default=False),
    shim_dirs=dict(type="list", elements="path"),
    speculate=dict(type="list", elements="dict", default=[], options=dict(
        version=dict(type="int", required=True),
        kubelet=dict(type="str", default="any", choices=["any", "absent", "systemd", "other"]),
        add_import=dict(type="str"),
        runtimes=dict(type="list", elements="str", default=[]),
        files=dict(type="list", elements="dict", required=True, options=dict(
            path=dict(type="path", required=True),
            content=dict(type="str", required=True),
        )),
    )),
)


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_if=[("step", "stage", ["staged_main"]), ("step", "write", ["expected_sha256"])],
        supports_check_mode=True,
    )
    params = module.params
    if params["step"] in ("write", "restore", "restart_proved") and module.check_mode:
        module.fail_json(msg="step=%s changes the node; it does not run in check mode" % params["step"])
    if params["timeout"] <= 0:
        module.fail_json(msg="timeout must be a positive number of seconds")
    try:
        result = _STEPS[params["step"]](params)
    except (GatherError, node_remediation.FilesError) as exc:
        module.fail_json(msg=str(exc), step=params["step"])
    except (IOError, OSError) as exc:
        module.fail_json(msg=_os_error_text(exc, params["step"]), step=params["step"])
    if result.pop("failed", False):
        module.fail_json(step=params["step"], **result)
    module.exit_json(changed=params["step"] in ("write", "restore", "restart_proved"), **result)


if __name__ == "__main__":
    main()
