#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: runtime_check
short_description: Cross-check a node's loaded containerd config against RuntimeClasses
description:
  - Lists each RuntimeClass handler that can land on the node and is not a loaded runtime,
    with a loaded name as a suggestion for typos (C(nvida), did you mean C(nvidia)?) when it is
    close (two edits at most), not the handler of another RuntimeClass that can land on the node, and
    the missing handler is not the name of a real runtime (no C(nvidia) for C(nvidia-cdi), no C(runc)
    for C(crun)).
  - A RuntimeClass whose C(scheduling.nodeSelector) does not match the node's labels does not apply
    to the node. When the labels are unknown every RuntimeClass applies, so nothing is passed silently.
  - Also runs every other per-node check of the audit on what
    M(gpurt.runtime_gate.containerd_config_info) gathered (imports, orphan drop-ins, ignored plugin
    sections, file vs loaded drift, default runtime, binaries, cgroup driver, CDI, overhead).
    With only a O(dump), only the checks that need nothing but the loaded config run; every other
    check is reported in RV(checks_skipped) with the reason, never as passed.
  - A gather result of a config containerd refused is judged (C(config_refused)), not left unchecked.
  - Fails the host when a finding reaches O(fail_on) (by default any missing handler or other error);
    O(report_only=true) reports without failing.
  - Runs on the controller only (action plugin); it changes nothing.
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  gathered:
    description:
      - The registered result of M(gpurt.runtime_gate.containerd_config_info) for this host.
      - Exactly one of O(gathered), O(dump) and O(dump_path) is required.
    type: dict
  dump:
    description:
      - The text of a C(containerd config dump), for checking one dump without a node.
    type: str
  dump_path:
    description:
      - A file on the controller holding a C(containerd config dump), read as bytes so that a
        file that is not UTF-8 fails with a clear message.
    type: path
  runtimeclasses:
    description:
      - RuntimeClasses as returned by M(gpurt.runtime_gate.runtimeclass_info).
    type: list
    elements: dict
    required: true
  node_name:
    description:
      - The Kubernetes Node name of this host, to find its Node object in O(nodes).
      - Defaults to C(inventory_hostname).
    type: str
  nodes:
    description:
      - Node objects as returned by M(gpurt.runtime_gate.node_info), for labels and allocatable.
    type: list
    elements: dict
  node_labels:
    description:
      - The node's labels, matched against C(scheduling.nodeSelector). Wins over O(nodes).
    type: dict
  node_allocatable:
    description:
      - The node's allocatable resources (C(cpu), C(memory)) for the overhead check. Wins over O(nodes).
    type: dict
  pod_requests:
    description:
      - The pod request to test the RuntimeClass overhead with, for example a C(cpu) request of C(900m).
    type: dict
  kubelet_cgroup_driver:
    description:
      - The kubelet's cgroup driver, when the kubelet config on the node is not the source of truth.
    type: str
    choices: [systemd, cgroupfs]
  skip_checks:
    description:
      - Check ids not to run, e.g. C(default_runtime_blast_radius).
    type: list
    elements: str
    default: []
  fail_on:
    description:
      - The lowest severity that fails the host. C(none) never fails.
    type: str
    default: error
    choices: [error, warning, info, none]
  report_only:
    description:
      - Report findings without failing the host.
    type: bool
    default: false
  sandbox_root:
    description:
      - The directory a bootstrap's files were laid out in (see playbooks/validate_bootstrap.yml);
        paths below it are reported as the node paths they stand for.
    type: path
  origins:
    description:
      - Where each node path of a bootstrap comes from (C(/etc/containerd/config.toml) to
        C(template /repo/config.toml.j2)); a finding on such a path names it, so that the fix
        goes to the template, not to a node or a sandbox.
    type: dict
    default: {}
  require_runtimeclasses:
    description:
      - Judge nothing when O(runtimeclasses) is empty, as the source yielded no RuntimeClass and no handler
        could be cross-checked - RV(status) is C(NOT JUDGED) and RV(run_failures) says why; the task fails
        unless O(report_only=true) (then the playbook fails the run once). Without it, C(missing_handler) is
        reported as skipped.
    type: bool
    default: false
  runtimeclasses_none_reason:
    description:
      - Why O(runtimeclasses) is empty
        (RV(gpurt.runtime_gate.runtimeclass_info#module:none_reason) of M(gpurt.runtime_gate.runtimeclass_info)),
        named in RV(run_failures).
    type: str
  max_dump_bytes:
    description:
      - The largest O(dump_path) file read; a larger one, a FIFO or a device fails the task.
    type: int
    default: 67108864
extends_documentation_fragment:
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.attributes.action
  - gpurt.runtime_gate.attributes.controller_report
seealso:
  - module: gpurt.runtime_gate.containerd_config_info
  - module: gpurt.runtime_gate.runtimeclass_info
  - module: gpurt.runtime_gate.audit_report
"""

EXAMPLES = r"""
- name: Cross-check this node, fail on a missing handler
  gpurt.runtime_gate.runtime_check:
    gathered: "{{ gpurt_loaded }}"
    runtimeclasses: "{{ gpurt_runtimeclasses.runtimeclasses }}"
    node_labels: "{{ gpurt_node_labels | default(omit) }}"

- name: Check one dump file, report only
  gpurt.runtime_gate.runtime_check:
    dump: "{{ lookup('ansible.builtin.file', dump_file) }}"
    runtimeclasses: "{{ gpurt_runtimeclasses.runtimeclasses }}"
    report_only: true
"""

RETURN = r"""
node:
  description: The node judged (O(node_name), or the host's name).
  returned: always
  type: str
gpurt_summary_lines:
  description:
    - The lines the C(gpurt.runtime_gate.summary) callback prints after the recap - C(MISSING=<handler>) lines,
      then other failing findings, or C(OK); prefixed with the node's name unless a lone dump was checked.
  returned: always
  type: list
  elements: str
detail_lines:
  description:
    - What C(gpurt_summary_lines) leaves out, where a C(MISSING=<handler>) line stands for its finding - each failing
      C(missing_handler) finding with its suggestion and fix, as one line (prefixed with the node's name unless a
      lone dump was checked). The playbooks print them once, before the failed line.
  returned: always
  type: list
  elements: str
node_line:
  description:
    - The node's one line - its name and verdict, then its C(MISSING=<handler>) names (the label of its failed line).
  returned: always
  type: str
  sample: "node-a: 1 finding (1 error); MISSING=nvida"
failing:
  description: Whether a finding reaches O(fail_on), or the node could not be checked.
  returned: always
  type: bool
status:
  description:
    - C(OK), C(FINDINGS) or C(NOT CHECKED) (the gather result was a failure); C(NOT JUDGED) when
      O(require_runtimeclasses=true) found no RuntimeClass.
  returned: always
  type: str
run_failures:
  description: Why the run fails whatever the node holds (no RuntimeClass was read).
  returned: when no RuntimeClass was read and O(require_runtimeclasses=true)
  type: list
  elements: str
missing:
  description: Handlers that can land on the node and are not loaded.
  returned: always
  type: list
  elements: str
  sample: [nvida]
missing_lines:
  description: The same as C(MISSING=<handler>) lines.
  returned: always
  type: list
  elements: str
findings:
  description: Every finding, sorted; each has node, check, severity, subject, message, fix and evidence.
  returned: always
  type: list
  elements: dict
counts:
  description: Findings per severity.
  returned: always
  type: dict
checks_run:
  description: The checks that ran.
  returned: always
  type: list
  elements: str
checks_skipped:
  description: The checks that could not run (or were skipped), each with the reason.
  returned: always
  type: dict
running:
  description: The running view the node reported (see M(gpurt.runtime_gate.containerd_config_info)).
  returned: always
  type: dict
msg:
  description:
    - One line per C(MISSING=<handler>), then one per failing finding as C(ERROR check message (fix ...)),
      or C(OK); a C(FAILED:) line with the reason when O(require_runtimeclasses=true) found no RuntimeClass.
      Control characters in values are printed escaped.
  returned: always
  type: str
"""
