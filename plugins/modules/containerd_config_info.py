#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: containerd_config_info
short_description: Gather the loaded containerd config of a node
description:
  - Runs C(containerd [--config PATH] config dump) on the node, which prints the merged config
    the next containerd start loads, and C(containerd --version).
  - Reports, for every C(imports) entry of the config files, the files it matches on this node,
    because containerd 1.x dumps only the merged files and 2.x only the patterns.
  - Reads the config file, every imported file and every file in the drop-in directories, the
    kubelet config and the CDI specs, and checks that runtime binaries and CDI host paths exist,
    so that M(gpurt.runtime_gate.runtime_check) can judge the node without another round trip.
  - The TOML is parsed on the controller (this module's action plugin), so the node needs only
    Python 3.8+ and no third-party packages.
  - Read-only. Never changes the node.
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  containerd_bin:
    description:
      - The containerd binary, as a path or a name looked up in E(PATH).
    type: str
    default: containerd
  config_path:
    description:
      - The main containerd config file, passed as C(--config).
      - When it does not exist the dump is C(containerd config default), which is what containerd
        loads without a file.
    type: path
    default: /etc/containerd/config.toml
  dropin_dirs:
    description:
      - Directories searched for drop-in files that no C(imports) entry matches (orphans), besides the
        directory of O(config_path) and its subdirectories (two levels) and the directories the C(imports)
        entries name, which are always searched. A file is a candidate by its content (a top-level C(version)
        or a C(plugins) table), not by its name.
      - Defaults to C(conf.d) and C(config.d) next to O(config_path), plus those of
        C(/etc/containerd/conf.d), C(/etc/containerd/config.d) and C(/etc/k0s/containerd.d) that exist. The
        second is where a released C(nvidia-ctk) wrote its drop-in while containerd imported C(conf.d).
    type: list
    elements: path
  kubelet_config_path:
    description:
      - The kubelet config file, read for its C(cgroupDriver). Missing is not an error.
    type: path
    default: /var/lib/kubelet/config.yaml
  cdi_spec_dirs:
    description:
      - Directories of CDI specs to read. Defaults to the loaded config's C(cdi_spec_dirs), or
        C(/etc/cdi) and C(/var/run/cdi) when the config names none.
    type: list
    elements: path
  timeout:
    description:
      - Seconds each containerd command may run before it is killed and the task fails.
    type: int
    default: 30
  max_file_bytes:
    description:
      - Files larger than this are reported with an error instead of read.
    type: int
    default: 1048576
  max_dump_bytes:
    description:
      - A dump larger than this fails the task instead of being returned.
    type: int
    default: 67108864
  max_memory_mb:
    description:
      - Memory limit (C(RLIMIT_DATA)), in MiB, of the C(containerd config dump) process. A config
        that imports C(/dev/zero) makes containerd allocate until it crashes; without a limit the
        kernel's OOM killer could pick any process of the node first. A 20 MB dump needs about
        400 MiB. C(0) sets no limit.
    type: int
    default: 1024
  on_refused:
    description:
      - What to do when containerd refuses the config (C(config dump) exits non-zero, for a TOML
        error, an unsupported version, a drop-in above the root file's version on 2.3+).
        containerd will not start with such a config.
      - C(fail) fails the task, and its result still carries RV(refused) with the cause line.
      - C(report) returns RV(refused), no RV(dump), and everything else, so that the audit
        reports C(config_refused) instead of a node it could not check.
    type: str
    choices: [fail, report]
    default: fail
  shim_dirs:
    description:
      - Directories searched for a runtime's bare C(BinaryName) and for the shim of a runtime that is not
        runc's (C(containerd-shim-kata-v2) for C(io.containerd.kata.v2)), such as C(/opt/kata/bin), after
        containerd's own E(PATH) (the one its C(containerd.service) unit sets, else systemd's default PATH for
        services); a shim is also looked up next to the containerd binary. Read under O(host_root).
    type: list
    elements: path
  gather_running:
    description:
      - Also gather the running view (RV(running)), what the daemon loaded when it started.
    type: bool
    default: true
  crictl_bin:
    description:
      - The C(crictl) binary for the running view, as a path or a name looked up in E(PATH).
        Where it is missing or the CRI socket does not answer, the running view falls back to
        the daemon's start time.
    type: str
    default: crictl
  cri_endpoint:
    description:
      - The CRI endpoint C(crictl) talks to, such as C(unix:///run/containerd/containerd.sock).
      - Defaults to the loaded config's C([grpc] address), else C(unix:///run/containerd/containerd.sock).
    type: str
  host_root:
    description:
      - Where the node's C(/) is, when the node is mounted elsewhere (a container with the host at C(/host), a test
        node's directory). O(state_dir) is read under it, the root prefixed exactly once.
    type: path
    default: /
  state_dir:
    description:
      - The role's state directory on the node (a node path, read under O(host_root)). A restart marker there
        (RV(restart_marker)) says that the role wrote files and the restart after them was not proved yet.
    type: path
    default: /var/lib/gpurt-runtime-gate
  keep_texts:
    description:
      - Also return the raw texts the node sent, RV(dump) and each file's RV(files[].content).
      - By default only what was parsed from them is returned (RV(loaded), RV(files[].parsed)). That
        is all the checks need, and a registered result stays in the controller's memory for the
        whole play, for every host.
    type: bool
    default: false
  packed:
    description:
      - Return the gathered facts as one JSON text, RV(packed), beside C(changed), C(failed) and C(msg), in
        place of the keys listed below.
      - For a play over many hosts that hands the result to M(gpurt.runtime_gate.audit_report) or
        M(gpurt.runtime_gate.runtime_check), which read both forms, as the C(gpurt.runtime_gate.audit) playbook
        does. ansible-core keeps every host's result twice until the task has ended on all hosts (the result it
        received and the registered copy), and a copy shares a text but copies every dict and list. Measured on a
        containerd 2.1 node, about 5.3 KiB as text against about 20 KiB of Python objects for each copy.
    type: bool
    default: false
  host_vars:
    description:
      - Take each option the task does not set from the host's variable for it, as the
        C(gpurt.runtime_gate.audit) playbook does.
      - C(containerd_bin) from C(gpurt_containerd_bin), C(config_path) from C(gpurt_containerd_config_path),
        C(dropin_dirs) from C(gpurt_dropin_dirs), C(kubelet_config_path) from C(gpurt_kubelet_config_path),
        C(cdi_spec_dirs) from C(gpurt_cdi_spec_dirs), C(timeout) from C(gpurt_containerd_timeout),
        C(shim_dirs) from C(gpurt_shim_dirs), C(crictl_bin) from C(gpurt_crictl_bin) and
        C(cri_endpoint) from C(gpurt_cri_endpoint), C(host_root) from C(gpurt_host_root) and C(state_dir) from
        C(gpurt_state_dir).
      - An option set in the task wins. An option whose variable the host does not have, or has as null,
        keeps its default.
      - The same as setting each option to its variable with a C(default(omit)) filter, without a
        template per option and host for the controller to compile.
    type: bool
    default: false
extends_documentation_fragment:
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.attributes.action
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  action:
    support: full
    details: The action plugin parses the TOML on the controller.
notes:
  - A running containerd loaded its config when it started. The dump shows what the next
    restart loads; C(crictl info) (RV(running)) shows what runs now.
  - Every file is read with O(max_file_bytes) and O(timeout) as bounds; FIFOs and devices
    (a kubelet config that is C(/dev/zero)) are reported as not read, never read.
  - C(containerd --version) runs with C(GOGC=off) and C(GOMEMLIMIT=256MiB) in its environment, so that
    short run does no Go garbage collection until the heap nears 256 MiB. That spares CPU and changes
    nothing it prints. Commands that load a config run in the environment as it is.
seealso:
  - module: gpurt.runtime_gate.runtime_check
"""

EXAMPLES = r"""
- name: Gather the loaded containerd config
  gpurt.runtime_gate.containerd_config_info:
  register: gpurt_loaded

- name: A node whose config lives elsewhere
  gpurt.runtime_gate.containerd_config_info:
    containerd_bin: /opt/containerd/bin/containerd
    config_path: /etc/containerd/config.toml
    dropin_dirs:
      - /etc/containerd/conf.d
    timeout: 10

- name: Show the loaded runtime names
  ansible.builtin.debug:
    msg: "{{ gpurt_loaded.loaded.runtime_names }}"
"""

RETURN = r"""
packed:
  description:
    - With O(packed=true), every other key below as one JSON object in a text.
  returned: with O(packed=true)
  type: str
containerd_bin:
  description: The containerd binary that ran.
  returned: always
  type: str
config_path:
  description: The config file given to containerd.
  returned: always
  type: str
config_exists:
  description: Whether O(config_path) exists; when not, the dump is C(containerd config default).
  returned: success, and on failure when containerd refused the config
  type: bool
version_output:
  description: What C(containerd --version) printed.
  returned: success, and on failure when containerd refused the config
  type: str
  sample: containerd github.com/containerd/containerd/v2 v2.1.9 8b3b7ca2e5ce38e8f31a34f35b2b68ceb8470d89
version:
  description: The containerd release, as C(containerd --version) prints it.
  returned: success, and on failure when containerd refused the config
  type: str
  sample: 2.1.9
version_major:
  description: Major release number.
  returned: success, and on failure when containerd refused the config
  type: int
  sample: 2
version_minor:
  description: Minor release number.
  returned: success, and on failure when containerd refused the config
  type: int
  sample: 1
dump:
  description:
    - The merged config containerd loads, as TOML text; null when containerd refused it.
    - Only with O(keep_texts=true); RV(loaded) is what was parsed from it.
  returned: success, with O(keep_texts=true)
  type: str
dump_warnings:
  description: The warning and error lines containerd printed while loading (ignored keys and plugins).
  returned: success
  type: list
  elements: str
load_warnings:
  description:
    - The settings containerd warns about while loading (from RV(dump_warnings)), each with the merged files that
      set it. Of a table containerd does not know at all, only the outermost key. Empty when containerd refused
      the config.
  returned: success
  type: list
  elements: dict
  contains:
    kind:
      description: C(ignored_key) (2.x's "Ignoring unknown key in TOML for plugin") or C(deprecated_version) (1.x's
        deprecated config version 1).
      type: str
    plugin:
      description: The plugin containerd names (null for the version).
      type: str
    key:
      description: The setting's dotted path under that plugin, or C(version).
      type: str
    parts:
      description: The key's parts, as containerd names them.
      type: list
      elements: str
    version:
      description: With C(deprecated_version), the deprecated config version.
      type: int
    files:
      description: The merged files that set it, each C(file), C(plugin) (the name it is written under) and
        C(key) (its dotted path there).
      type: list
      elements: dict
    line:
      description: containerd's own line, without its timestamp.
      type: str
refused:
  description:
    - Null when containerd loads the config. Else why it does not, from C(config dump).
  returned: success, and on failure when containerd refused the config
  type: dict
  contains:
    command:
      description: The command that failed.
      type: str
    rc:
      description: Its exit code.
      type: int
    cause:
      description:
        - containerd's own cause line, such as C(containerd - drop-in config version 3 higher than root
          config version 2) or C(fatal error - out of memory), without its timestamp.
      type: str
    stderr_tail:
      description: The last 2000 characters of what it printed on stderr.
      type: str
    warnings:
      description: Its warning and error lines (at most 20).
      type: list
      elements: str
imports:
  description: Every C(imports) entry of the config files, and the files it matches on this node.
  returned: success
  type: list
  elements: dict
  contains:
    pattern:
      description: The entry as written.
      type: str
    resolved:
      description: The entry resolved against the directory of the file that declares it.
      type: str
    declared_in:
      description: The file that declares it.
      type: str
    matches:
      description: Files it matches now, sorted as containerd merges them.
      type: list
      elements: str
    dir:
      description: The directory the entry reads.
      type: str
    dir_exists:
      description: Whether that directory exists (for a directory part with a glob, whether any matches).
      type: bool
files:
  description:
    - The config file, the imported files, and the files nothing imports that look like a containerd config
      fragment (role C(unreferenced)).
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: File path.
      type: str
    role:
      description: C(main), C(imported) (an imports entry matches it) or C(unreferenced) (a config fragment
        nothing imports).
      type: str
    content:
      description: The text, or null when it could not be read. Only with O(keep_texts=true).
      type: str
    error:
      description: Why the text could not be read, or null.
      type: str
    parsed:
      description: What the action plugin parsed from the text, on the controller.
      type: dict
      contains:
        path:
          description: File path.
          type: str
        role:
          description: As RV(files[].role).
          type: str
        error:
          description: Why the file could not be read or parsed, or null.
          type: str
        version:
          description: The config version the file declares (C(1) when it declares none).
          type: int
        version_written:
          description: Whether the file has a C(version) line.
          type: bool
        runtimes_by_plugin:
          description: The runtime names the file declares, by CRI plugin name.
          type: dict
          sample: {"io.containerd.cri.v1.runtime": ["nvidia"]}
        plugins:
          description: The plugin names the file has sections for.
          type: list
          elements: str
        imports:
          description: The file's own C(imports) entries.
          type: list
          elements: str
        runtimes_tables:
          description: CRI plugin names whose C(containerd) table has a C(runtimes) key, even an empty one.
          type: list
          elements: str
        disabled_plugins:
          description: The file's own C(disabled_plugins) entries.
          type: list
          elements: str
        fragment:
          description: For an C(unreferenced) file, whether it is a containerd config fragment (a top-level
            C(version) or a C(plugins) table).
          type: bool
        not_carried_count:
          description: For an C(unreferenced) file, how many of its settings the loaded config does not carry
            (C(0) when a generator merged it already, as Talos merges its C(.part) files).
          type: int
        not_carried:
          description: The first ten of those settings, as dotted keys.
          type: list
          elements: str
        placeholders:
          description: For an C(unreferenced) file, whether a string of it is a generator's placeholder
            (C(${SNAP_DATA}), a Go template action).
          type: bool
        load:
          description:
            - For an C(unreferenced) fragment whose settings the loaded config does not carry, what the node's
              containerd loads with it imported, compared with the loaded config.
            - C(state) is C(loaded) (C(changed) and C(changed_count) say which keys it would change, C(substituted) the
              keys whose placeholder the loaded value fills), C(refused), C(error) or C(not_loaded) (C(why) says why).
          type: dict
        named_by:
          description: For an C(unreferenced) file, the loaded file whose generated header names it as its input, and
            that line.
          type: str
        generated:
          description: For a C(main) or C(imported) file, the header line that marks it as a generator's output.
          type: str
    load:
      description:
        - For an C(unreferenced) file (at most eight per node), C(containerd config dump) of a scratch copy of the
          config that imports a scratch copy of it, as the node's containerd loads it; only with O(keep_texts=true).
        - C(rc), C(dump) (when C(rc) is 0), C(cause) (when not), C(warnings); or C(error) when the load did not run to
          the end.
      type: dict
fragment_loads:
  description:
    - How many C(unreferenced) files the node's containerd loaded as an import to judge them (C(loaded)), the cap
      (C(cap)) and the files the cap left out (C(left_out)), judged by their settings only. Null when the config
      was not loaded.
  returned: success
  type: dict
dropin_dirs:
  description: The drop-in directories that were listed (O(dropin_dirs) or its default).
  returned: success
  type: list
  elements: str
fragment_scan:
  description:
    - Where the gather looked for config fragments nothing imports, within bounds.
    - C(dirs) the directories looked in, C(files_read) how many files were read, C(truncated) what a bound
      (entries per directory, files read, bytes) left out.
  returned: success
  type: dict
paths:
  description:
    - Facts on every runtime C(BinaryName), C(runtime_path), C(options.ConfigPath) and
      C(base_runtime_spec) named in the dump or the files, by path.
    - Each has C(path), C(resolved), C(exists), C(is_file) and C(executable).
    - A bare C(BinaryName) is looked up as the runc shim looks it up, in the E(PATH) containerd runs with,
      the running daemon's own (C(/proc/<pid>/environ) of the one daemon whose C(--config) is O(config_path),
      without O(host_root)), else the one its C(containerd.service) unit and drop-ins set (C(Environment=),
      C(EnvironmentFile=)), else systemd's default PATH for services (C(/sbin) and C(/bin) too on an unmerged C(/usr)); then in
      O(shim_dirs), all under O(host_root). Its facts add C(searched) (the directories searched, in order)
      and C(path_from) (where that PATH comes from); C(resolved) is where it was found.
  returned: success
  type: dict
shims:
  description:
    - For each C(runtime_type) that is not runc's, the facts of its shim binary (for example
      C(io.containerd.kata.v2) runs C(containerd-shim-kata-v2)), as in RV(paths), searched in containerd's
      E(PATH) and O(shim_dirs) as a bare C(BinaryName) is, then next to the containerd binary.
  returned: success
  type: dict
kubelet_config:
  description: The kubelet config file, read for its C(cgroupDriver).
  returned: success
  type: dict
  contains:
    path:
      description: O(kubelet_config_path).
      type: str
    exists:
      description: Whether it exists.
      type: bool
    content:
      description: Its text, or null when it does not exist or was not read.
      type: str
    error:
      description: Why an existing file was not read, or null.
      type: str
cdi_spec_dirs_read:
  description: The CDI spec directories that were read (O(cdi_spec_dirs) or its default).
  returned: success
  type: list
  elements: str
cdi_specs:
  description: CDI spec files, with each host path they name and whether it exists.
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: The spec file.
      type: str
    error:
      description: Why it could not be read or parsed, or null.
      type: str
    host_paths:
      description: Each host path it names (C(path)) and whether it exists (C(exists)).
      type: list
      elements: dict
running:
  description:
    - The running view, unless O(gather_running=false). C(source) is C(crictl) (from
      C(crictl info)), C(process) (only the daemon's start time, C(daemon_started), to compare
      with C(config_newest_mtime), the newest mtime of the files the next start loads) or
      C(none) (C(error) says why).
    - With C(crictl), C(runtimes), C(runtime_details) (C(runtime_type), C(binary_name) per
      runtime), C(default_runtime_name), C(enable_cdi) (null on containerd 1.6) and
      C(cdi_spec_dirs) are what the daemon loaded at its start.
    - C(endpoint) is the CRI endpoint asked, C(crictl_error) why C(crictl) gave no view,
      C(started_from) C(proc) or C(systemd), and C(pid) the daemon's.
  returned: success, unless O(gather_running=false)
  type: dict
  sample:
    source: crictl
    runtimes: [nvidia, runc]
    runtime_details: {nvidia: {runtime_type: io.containerd.runc.v2, binary_name: /usr/bin/nvidia-container-runtime}}
    default_runtime_name: runc
    enable_cdi: true
    cdi_spec_dirs: [/etc/cdi, /var/run/cdi]
    daemon_started: null
    config_newest_mtime: 1767225600.0
    error: null
    endpoint: unix:///run/containerd/containerd.sock
    crictl_error: null
    started_from: null
    pid: null
restart_marker:
  description:
    - The role's restart marker for this config (C(restart-pending.json) in O(state_dir) for
      C(/etc/containerd/config.toml), C(restart-pending-<hash>.json) for another), or null when no restart is
      pending. C(path), C(written_at) (epoch seconds) and C(time) (UTC) of the write, C(files) it wrote, and
      C(error) when the file could not be read as a marker (a restart is still pending then).
  returned: success
  type: dict
  sample:
    path: /var/lib/gpurt-runtime-gate/restart-pending.json
    written_at: 1767225600.0
    time: "2026-01-01T00:00:00Z"
    files: [/etc/containerd/conf.d/zz-gpurt-nvidia.toml]
    error: null
loaded:
  description:
    - Summary of the loaded config, parsed on the controller by the action plugin; null when
      containerd refused the config.
  returned: success
  type: dict
  contains:
    version:
      description: Config version of the dump.
      type: int
    runtime_names:
      description: Sorted loaded runtime names.
      type: list
      elements: str
    runtimes:
      description:
        - Loaded runtimes by name, each with C(name), C(runtime_type), C(runtime_path), C(binary_name)
          (C(options.BinaryName)), C(systemd_cgroup), C(cdi_devices), C(config_path)
          (C(options.ConfigPath)), C(base_runtime_spec) and C(plugin), the CRI plugin it was found under.
      type: dict
    default_runtime_name:
      description: The runtime every pod without a RuntimeClass uses.
      type: str
    imports:
      description: The dump's imports (1.x, merged files; 2.x, patterns).
      type: list
      elements: str
    disabled_plugins:
      description: The dump's C(disabled_plugins), every merged file's list appended (2.x names a version 1 file's
        C(cri) by its URI).
      type: list
      elements: str
    cri_plugins:
      description: The CRI plugin names whose sections have a C(containerd) table, where runtimes are declared.
      type: list
      elements: str
    enable_cdi:
      description: Whether CDI is enabled.
      type: bool
    cdi_spec_dirs:
      description: Where containerd looks for CDI specs.
      type: list
      elements: str
"""

from ansible.module_utils.basic import AnsibleModule

# first: each module_utils below then compiles once on the node, not twice (it says why)
# pylint: disable-next=unused-import
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _zip_compile_once  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._node_gather import ConfigRefused, GatherError, gather


def main():
    module = AnsibleModule(
        argument_spec=dict(
            containerd_facts.GATHER_SPEC,
            on_refused=dict(type="str", choices=["fail", "report"], default="fail"),
            gather_running=dict(type="bool", default=True),
            shim_dirs=dict(type="list", elements="path"),
            # read by the action plugin, which drops the texts once it parsed them
            keep_texts=dict(type="bool", default=False),
            # read by the action plugin, which packs the result it returns
            packed=dict(type="bool", default=False),
            # read by the action plugin, which fills the options from the host's variables
            host_vars=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    if module.params["timeout"] <= 0:
        module.fail_json(msg="timeout must be a positive number of seconds")
    try:
        result = gather(module.params)
    except ConfigRefused as exc:
        module.fail_json(msg=str(exc), refused=exc.refused, **exc.partial)
    except GatherError as exc:
        module.fail_json(msg=str(exc), containerd_bin=module.params["containerd_bin"],
                         config_path=module.params["config_path"])
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
