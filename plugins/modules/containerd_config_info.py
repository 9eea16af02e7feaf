#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

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
      - Directories searched for drop-in files that no C(imports) entry matches (orphans).
      - Defaults to C(conf.d) and C(config.d) next to O(config_path). The second is where a released
        C(nvidia-ctk) wrote its drop-in while containerd imported C(conf.d).
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
      - Directories searched for the shim of a runtime that is not runc's (C(containerd-shim-kata-v2)
        for C(io.containerd.kata.v2)), besides E(PATH), systemd's default PATH and the directory of
        the containerd binary, such as C(/opt/kata/bin).
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
  keep_texts:
    description:
      - Also return the raw texts the node sent, RV(dump) and each file's RV(files[].content).
      - By default only what was parsed from them is returned (RV(loaded), RV(files[].parsed)). That
        is all the checks need, and a registered result stays in the controller's memory for the
        whole play, for every host.
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
containerd_bin:
  description: The containerd binary that ran.
  returned: always
  type: str
version:
  description: The containerd release, as C(containerd --version) prints it.
  returned: success
  type: str
  sample: 2.1.9
version_major:
  description: Major release number.
  returned: success
  type: int
  sample: 2
version_minor:
  description: Minor release number.
  returned: success
  type: int
  sample: 1
config_path:
  description: The config file given to containerd.
  returned: always
  type: str
config_exists:
  description: Whether O(config_path) exists; when not, RV(dump) is C(containerd config default).
  returned: success
  type: bool
dump:
  description: The merged config containerd loads, as TOML text; null when containerd refused it.
  returned: success
  type: str
refused:
  description:
    - Null when containerd loads the config. Else why it does not, from C(config dump), with
      C(command), C(rc), C(cause) (containerd's own cause line, such as
      C(containerd - drop-in config version 3 higher than root config version 2) or
      C(fatal error - out of memory)), C(stderr_tail) and C(warnings).
  returned: success, and on failure when containerd refused the config
  type: dict
shims:
  description:
    - For each C(runtime_type) that is not runc's, the facts of its shim binary (for example
      C(io.containerd.kata.v2) runs C(containerd-shim-kata-v2)), searched in E(PATH) and next
      to the containerd binary.
  returned: success
  type: dict
running:
  description:
    - The running view, unless O(gather_running=false). C(source) is C(crictl) (from
      C(crictl info)), C(process) (only the daemon's start time, C(daemon_started), to compare
      with C(config_newest_mtime), the newest mtime of the files the next start loads) or
      C(none) (C(error) says why).
    - With C(crictl), C(runtimes), C(runtime_details) (C(runtime_type), C(binary_name) per
      runtime), C(default_runtime_name), C(enable_cdi) (null on containerd 1.6) and
      C(cdi_spec_dirs) are what the daemon loaded at its start.
  returned: success
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
dump_warnings:
  description: The warning and error lines containerd printed while loading (ignored keys and plugins).
  returned: success
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
files:
  description: The config file, imported files and drop-in directory files, with their text.
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: File path.
      type: str
    role:
      description: C(main), C(imported) (an imports entry matches it) or C(unreferenced).
      type: str
    content:
      description: The text, or null when it could not be read.
      type: str
    error:
      description: Why the text could not be read.
      type: str
paths:
  description: Facts on every runtime C(BinaryName) named in the dump or the files.
  returned: success
  type: dict
kubelet_config:
  description: The kubelet config file, path, exists and content.
  returned: success
  type: dict
cdi_specs:
  description: CDI spec files, with each host path they name and whether it exists.
  returned: success
  type: list
  elements: dict
loaded:
  description:
    - Summary of the loaded config, parsed on the controller by the action plugin.
    - C(runtimes) maps each loaded runtime name to its C(runtime_type), C(binary_name),
      C(systemd_cgroup) and the plugin it was found under.
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
      description: Loaded runtimes by name.
      type: dict
    default_runtime_name:
      description: The runtime every pod without a RuntimeClass uses.
      type: str
    imports:
      description: The dump's imports (1.x, merged files; 2.x, patterns).
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

from ansible_collections.gpurt.runtime_gate.plugins.module_utils.containerd_gather import ConfigRefused, GatherError, gather


def main():
    module = AnsibleModule(
        argument_spec=dict(
            containerd_bin=dict(type="str", default="containerd"),
            config_path=dict(type="path", default="/etc/containerd/config.toml"),
            dropin_dirs=dict(type="list", elements="path"),
            kubelet_config_path=dict(type="path", default="/var/lib/kubelet/config.yaml"),
            cdi_spec_dirs=dict(type="list", elements="path"),
            timeout=dict(type="int", default=30),
            max_file_bytes=dict(type="int", default=1048576),
            max_dump_bytes=dict(type="int", default=67108864),
            max_memory_mb=dict(type="int", default=1024),
            on_refused=dict(type="str", choices=["fail", "report"], default="fail"),
            gather_running=dict(type="bool", default=True),
            shim_dirs=dict(type="list", elements="path"),
            crictl_bin=dict(type="str", default="crictl"),
            cri_endpoint=dict(type="str"),
            # read by the action plugin, which drops the texts once it parsed them
            keep_texts=dict(type="bool", default=False),
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
