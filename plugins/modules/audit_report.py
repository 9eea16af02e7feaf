#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: audit_report
short_description: Judge every host of the play once and write the audit report
description:
  - Runs every check of M(gpurt.runtime_gate.runtime_check) for each host of the play from the
    gather results they registered, adds the cross-node drift check per inventory group, and returns
    one report with a status per node (C(OK), C(FINDINGS), C(NOT CHECKED)) in RV(report).
  - A host whose gather failed or that was unreachable is C(NOT CHECKED) and never counts as OK.
  - In O(mode=cluster) it needs no host at all and judges each Node object by its
    C(status.runtimeHandlers) (Kubernetes 1.30+); Nodes that do not report handlers are C(NOT CHECKED).
  - In O(mode=dump) and O(mode=bootstrap) it writes the report of the one node that
    M(gpurt.runtime_gate.runtime_check) judged (O(checked)), or of a bootstrap that cannot be evaluated
    (O(not_validated), status C(NOT VALIDATED)); the node's lines were printed by that task, so only run
    failures are added to the summary. Without a judged result it writes nothing.
  - In O(mode=hosts) with O(nodes), the report's C(coverage) says which hosts have no Node object (their labels
    and allocatable are unknown; also a warning each) and which Nodes no host of the run covers (not checked;
    one warning); without O(nodes) it says the Nodes were not listed.
  - Writes a JSON report (with the collection version, each node's containerd version and running
    view, the checks that ran and those skipped with the reason), a JUnit XML report (one testsuite
    per node, one testcase per finding, a passing testcase per check that found nothing, a
    C(<skipped/>) one per check that could not run; always valid XML) and a Prometheus text file on
    the controller when paths are given. All are stable, so two runs diff cleanly. Writing them is
    not a change to any managed node, so it also happens in check mode.
  - Use it with C(run_once=true). The per-host verdict is in RV(report) (C(failing)). The task itself
    fails only when the run as a whole checked too little (RV(run_failures)), such as no host or Node to
    judge, or no RuntimeClass read (unless O(allow_no_runtimeclasses=true)). The reports are
    written first.
  - With O(slice=true) (one slice of an AWX sliced job) it judges each host's own checks and leaves the
    fleet-wide verdicts (C(node_drift) across a group, the coverage of the cluster's Nodes, each RuntimeClass's
    coverage) to O(mode=merge), and the report says they are judged at merge.
  - In O(mode=hosts) the report carries a C(slice) section (the run's id, its hosts and groups, the
    RuntimeClasses and Nodes it listed), and the task publishes the report under RV(artifact_key) as
    C(ansible.builtin.set_stats) does (the run's custom stats), which AWX hands to the next node of a workflow.
  - O(mode=merge) merges the reports of the slices (the C(gpurt_audit_slice_*) variables of the run, which an
    AWX workflow sets from the slices' artifacts, and O(slice_reports)) into the report one run over all their
    hosts gives; it refuses, naming why, a slice missing (fewer than O(expected_slices)), a slice or a host given
    twice, and slices that listed different RuntimeClasses or different Nodes or judged with different settings.
  - Runs on the controller only (action plugin).
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  mode:
    description:
      - C(hosts) judges the play's hosts from their gather results; C(cluster) judges O(nodes) only; C(merge)
        merges the reports of the slices of a sliced audit.
    type: str
    default: hosts
    choices: [hosts, cluster, dump, bootstrap, merge]
  hosts:
    description:
      - Hosts to judge. Defaults to C(ansible_play_hosts_all), which keeps failed and unreachable hosts.
    type: list
    elements: str
  gathered_var:
    description:
      - The name each host registered its M(gpurt.runtime_gate.containerd_config_info) result under.
    type: str
    default: gpurt_loaded
  listing_var:
    description:
      - The name the M(gpurt.runtime_gate.runtimeclass_info) result was registered under. Its C(runtimeclasses),
        C(nodes) and C(none_reason) are used where O(runtimeclasses), O(nodes) and O(runtimeclasses_none_reason)
        are not given, taken as registered (a task argument is templated, which walks every listed object,
        seconds with thousands of Nodes).
    type: str
  runtimeclasses:
    description:
      - RuntimeClasses as returned by M(gpurt.runtime_gate.runtimeclass_info). Required (or O(listing_var)),
        except in O(mode=merge), which takes those the slices listed.
    type: list
    elements: dict
  nodes:
    description:
      - Node objects as returned by M(gpurt.runtime_gate.node_info). Required for O(mode=cluster); in
        O(mode=hosts) they give labels and allocatable, matched by the host variable C(gpurt_node_name)
        (default C(inventory_hostname)). The host variables C(gpurt_node_labels) and
        C(gpurt_node_allocatable) win over them.
    type: list
    elements: dict
  drift_groups:
    description:
      - Inventory groups whose members must load the same runtime set. Defaults to every group but
        C(all) and C(ungrouped).
    type: list
    elements: str
  json_path:
    description:
      - Where to write the JSON report on the controller.
    type: path
  junit_path:
    description:
      - Where to write the JUnit XML report on the controller.
    type: path
  metrics_path:
    description:
      - Where to write a Prometheus text-format file for node_exporter's textfile collector (name it
        C(*.prom) in the collector's directory) with, per node, its status, whether it fails, its
        containerd version, and its finding counts by check and severity. Written to a temporary file
        and renamed into place.
    type: path
  allow_no_runtimeclasses:
    description:
      - Do not fail the run when O(runtimeclasses) is empty (audit the nodes alone).
    type: bool
    default: false
  runtimeclasses_none_reason:
    description:
      - Why O(runtimeclasses) is empty
        (RV(gpurt.runtime_gate.runtimeclass_info#module:none_reason) of M(gpurt.runtime_gate.runtimeclass_info)),
        named in the run failure it makes.
    type: str
  fail_run:
    description:
      - Fail the task when the run as a whole checked too little (RV(run_failures)). With V(false) the task
        returns the report and leaves the failure to the playbook (C(audit.yml) fails the run once, on the
        controller, with the short message, after the summary).
    type: bool
    default: true
  node_label_selector:
    description:
      - The label selector O(nodes) were listed with, to name it when none matched (O(mode=cluster)).
    type: str
  checked:
    description:
      - The registered result of M(gpurt.runtime_gate.runtime_check) (O(mode=dump), O(mode=bootstrap)).
    type: dict
  not_validated:
    description:
      - Why the bootstrap cannot be evaluated (O(mode=bootstrap)); the node is C(NOT VALIDATED).
    type: list
    elements: str
    default: []
  node_name:
    description:
      - The name of the one node (O(mode=dump), O(mode=bootstrap)).
    type: str
  containerd_version:
    description:
      - The containerd release the one node was loaded with (O(mode=bootstrap)).
    type: str
  slice:
    description:
      - This run is one slice of a sliced job (O(mode=hosts)); the fleet-wide verdicts are judged at merge.
    type: bool
    default: false
  slice_id:
    description:
      - The run's id in RV(artifact_key). Defaults to the variable C(awx_job_id) (AWX sets it), else C(run) for a
        run that is not a slice; a slice without either fails.
    type: str
  slice_reports:
    description:
      - JSON reports of the slices to merge (O(mode=merge)), besides the C(gpurt_audit_slice_*) variables.
    type: list
    elements: path
    default: []
  expected_slices:
    description:
      - How many slices the sliced job ran (O(mode=merge), required there); fewer is refused.
    type: int
extends_documentation_fragment:
  - gpurt.runtime_gate.judge
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.attributes.action
  - gpurt.runtime_gate.attributes.controller_report
seealso:
  - module: gpurt.runtime_gate.runtime_check
"""

EXAMPLES = r"""
- name: Judge every host once and write the reports
  gpurt.runtime_gate.audit_report:
    runtimeclasses: "{{ gpurt_runtimeclasses.runtimeclasses }}"
    json_path: "{{ playbook_dir }}/../reports/audit.json"
    junit_path: "{{ playbook_dir }}/../reports/audit.xml"
  run_once: true
  register: gpurt_report

- name: Fail the hosts the report marks failing
  ansible.builtin.fail:
    msg: "{{ gpurt_report.report.nodes[inventory_hostname].missing | join('\n') }}"
  when: gpurt_report.report.nodes[inventory_hostname].failing
"""

RETURN = r"""
gpurt_summary_lines:
  description: The same as RV(summary_lines), for the C(gpurt.runtime_gate.summary) callback, which prints them after the recap.
  returned: always
  type: list
  elements: str
report:
  description: The whole report, as written to O(json_path).
  returned: always
  type: dict
summary:
  description: Counts of nodes (checked, ok, with_findings, not_checked, failing) and findings per severity.
  returned: always
  type: dict
summary_lines:
  description: The concise human summary, one line per node (OK, N findings, NOT CHECKED), then the totals.
  returned: always
  type: list
  elements: str
detail_lines:
  description: The same with every finding and its fix under its node.
  returned: always
  type: list
  elements: str
readable_lines:
  description: What a person reads of the run, as the playbooks print it, at any fleet size. One line per node with
    its MISSING handlers (in C(hosts) mode only the nodes that pass; a failing node's line is in RV(node_lines),
    which the playbook fails the node with, and the totals count them), then each distinct error and
    warning once, with its fix and the nodes it applies to (a count and a few names; the reports list all; with
    C(-v) also the info findings and the skipped checks), then the coverage, the notes and the totals. In C(hosts)
    mode the summary callback prints these lines.
  returned: always
  type: list
  elements: str
node_lines:
  description: Each node's line as C(readable_lines) shows it, by node name.
  returned: always
  type: dict
ansible_facts:
  description: With C(delegate_facts), the failing nodes as a fact of the delegated host, for a play that fails them.
  returned: when the task sets C(delegate_facts)
  type: dict
  contains:
    gpurt_audit_failing:
      description: The same list as RV(failing_nodes).
      returned: when the task sets C(delegate_facts)
      type: list
      elements: str
    gpurt_audit_run_failures:
      description: The same list as RV(run_failures).
      returned: when the task sets C(delegate_facts)
      type: list
      elements: str
    gpurt_audit_judged_on:
      description: The host the task ran for (its registered result is on it).
      returned: when the task sets C(delegate_facts)
      type: str
failing_nodes:
  description: Nodes with a finding that reaches O(fail_on), or not checked.
  returned: always
  type: list
  elements: str
missing_lines:
  description: "One C(NODE: MISSING=HANDLER) line per missing handler."
  returned: always
  type: list
  elements: str
written:
  description: Report files written.
  returned: always
  type: list
  elements: str
passed:
  description: Whether the run passed as a whole (nodes checked, none failing, no run failure).
  returned: always
  type: bool
run_failures:
  description: Why the run as a whole fails whatever its nodes did (no host, no Node, no RuntimeClass).
  returned: always
  type: list
  elements: str
unreachable_nodes:
  description: Nodes that were unreachable (NOT CHECKED).
  returned: always
  type: list
  elements: str
artifact_key:
  description: The top-level key of the run's set_stats artifact, C(gpurt_audit_slice_<id>) (O(mode=hosts)).
  returned: in O(mode=hosts)
  type: str
  sample: gpurt_audit_slice_4711
cluster_nodes:
  description:
    - The cluster's Nodes as the slices listed them, each as the slice that judged it did (O(mode=merge)); null when
      the slices did not list Nodes or were not merged.
    - The input of the verified labels, as M(gpurt.runtime_gate.runtimeclass_info)'s C(nodes) is in an unsliced run.
  returned: in O(mode=merge)
  type: list
  elements: dict
judged:
  description: Whether anything was judged (false in O(mode=dump) or O(mode=bootstrap) without a result).
  returned: always
  type: bool
"""
