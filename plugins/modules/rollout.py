#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: rollout
short_description: Judge a rolling remediation batch by batch, stop it by the user's rule, and report it
description:
  - The controller side of C(playbooks/remediate.yml)'s rollout, in four steps, each meant for C(run_once=true)
    with C(delegate_to=localhost) and C(delegate_facts=true) (the rollout's state is the fact C(_gpurt_rollout)
    of C(localhost)).
  - O(step=start) sets the stop rule, O(max_fail_percentage), for the hosts of the play.
  - O(step=batch), after each batch, reads what the M(gpurt.runtime_gate.register_runtimes) action did on each
    host of the batch (the host variable named by O(result_var)) and what failed after it (O(failure_var),
    recorded by a block's rescue, such as the restart handler), re-audits the loaded config the remediation proved (the
    staged load in check mode) with every check of M(gpurt.runtime_gate.runtime_check), and returns RV(stop)
    when more than O(max_fail_percentage) percent of the rollout's hosts have failed so far. The percentage is
    counted over the whole rollout, so it means the same for every batch size; Ansible's own
    C(max_fail_percentage) stops a serial play at the first batch that fails whole, which makes every rule
    stop at the first failure with one-host batches.
  - O(step=collect) gathers every host's entry from its batch's result (O(batch_var)); a host that no batch
    reached is C(NOT PROCESSED), with the reason the rollout stopped.
  - O(step=report) builds the report from the collected entries (O(collected_var)), with the hosts without a
    Node object and the Nodes no host covers when O(nodes) are given, and the RuntimeClass gate's decisions,
    writes the JSON and JUnit reports (the audit's formats, mode C(remediation)), and returns the summary
    lines. Each node is C(OK) or C(FINDINGS) (its re-audit), C(NOT CHECKED), C(REFUSED) (nothing written, with
    the reasons), C(FAILED) (gather, write or restart failed, or unreachable) or C(NOT PROCESSED). Without any
    collected host it reports that no host was remediated.
  - No step fails for what happened on the nodes; the playbook fails the nodes RV(failing_nodes) names.
  - Runs on the controller only (action plugin).
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  step:
    description:
      - Which step of the rollout to run.
    type: str
    required: true
    choices: [start, batch, collect, report]
  max_fail_percentage:
    description:
      - The stop rule (O(step=start)), from 0 (stop at the first failed host) to 100 (never stop).
    type: int
    default: 0
  hosts:
    description:
      - The hosts to count (O(step=start), default C(ansible_play_hosts_all)), to judge (O(step=batch), default
        C(ansible_play_batch)) or to collect (O(step=collect), default C(ansible_play_hosts_all)).
    type: list
    elements: str
  result_var:
    description:
      - The host variable holding the M(gpurt.runtime_gate.register_runtimes) result.
    type: str
    default: containerd_runtime_result
  failure_var:
    description:
      - The host variable a rescue sets to C({task, msg}) when a task after the remediation failed.
    type: str
    default: _gpurt_rollout_failure
  batch_var:
    description:
      - The host variable each batch's O(step=batch) result was registered under.
    type: str
    default: _gpurt_batch
  collected_var:
    description:
      - The variable the O(step=collect) result was registered under, read by O(step=report).
    type: str
    default: _gpurt_collected
  runtimeclasses:
    description:
      - RuntimeClasses for the re-audit, as returned by M(gpurt.runtime_gate.runtimeclass_info).
    type: list
    elements: dict
    default: []
  nodes:
    description:
      - Node objects as returned by M(gpurt.runtime_gate.node_info), matched by the host variable
        C(gpurt_node_name) (default the host's name), give labels and allocatable for the re-audit (the host
        variables C(gpurt_node_labels) and C(gpurt_node_allocatable) win), and the report's coverage.
    type: list
    elements: dict
  reaudit:
    description:
      - Re-audit each remediated node. When false a remediated node is C(OK) with a note that it was not
        re-audited.
    type: bool
    default: true
  runtimeclass_gate:
    description:
      - The RuntimeClass gate's decisions (filter M(gpurt.runtime_gate.runtimeclass_gate)); a refused one is a
        run failure of the report.
    type: list
    elements: dict
    default: []
  manage_runtimeclasses:
    description:
      - Whether the run was asked to write RuntimeClasses (the report says none was written when the rollout
        stopped).
    type: bool
    default: false
  json_path:
    description:
      - Where O(step=report) writes the JSON report on the controller.
    type: path
  junit_path:
    description:
      - Where O(step=report) writes the JUnit XML report on the controller.
    type: path
extends_documentation_fragment:
  - gpurt.runtime_gate.judge
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.attributes.action
  - gpurt.runtime_gate.attributes.controller_report
seealso:
  - module: gpurt.runtime_gate.register_runtimes
  - module: gpurt.runtime_gate.audit_report
"""

EXAMPLES = r"""
# playbooks/remediate.yml, in short
- name: Re-audit the batch and decide whether the rollout goes on
  gpurt.runtime_gate.rollout:
    step: batch
    runtimeclasses: "{{ gpurt_runtimeclasses.runtimeclasses }}"
  run_once: true
  delegate_to: localhost
  delegate_facts: true
  register: _gpurt_batch

- name: Stop the rollout
  ansible.builtin.meta: end_play
  when: _gpurt_batch.stop
"""

RETURN = r"""
rollout:
  description: The rollout's state - C(total), C(batches), C(processed), C(failing), C(max_fail_percentage),
    C(stopped), C(stop_reason).
  returned: O(step=start), O(step=batch), O(step=collect)
  type: dict
nodes:
  description: Host to its report entry (O(step=batch) its batch's hosts, O(step=collect) every host).
  returned: O(step=batch), O(step=collect)
  type: dict
stop:
  description: Whether the rollout must stop after this batch.
  returned: O(step=batch)
  type: bool
stopped:
  description: Whether the rollout stopped before reaching every host.
  returned: O(step=collect)
  type: bool
run_nodes:
  description: Host to the Node name it stands for.
  returned: O(step=collect)
  type: dict
gate_nodes:
  description: Node name to C({labels, runtimes, why_not_checked}) of the hosts of the run, for the
    RuntimeClass gate.
  returned: O(step=collect)
  type: dict
report:
  description: The whole report, as written to O(json_path).
  returned: O(step=report)
  type: dict
summary:
  description: Counts of nodes by status and outcome.
  returned: O(step=report)
  type: dict
summary_lines:
  description: One line per node, the coverage, the rollout's notes, then the totals.
  returned: O(step=report)
  type: list
  elements: str
detail_lines:
  description: The same with every finding, refusal reason and skipped check under its node.
  returned: O(step=report)
  type: list
  elements: str
readable_lines:
  description: What a person reads of the run, each node once with its MISSING handlers, then each distinct error
    and warning once, with its fix and the nodes it applies to (a count and a few names; with C(-v) also the info
    findings and the skipped checks), then the coverage, the notes and the totals. The failing nodes' lines are left
    out - C(remediate.yml) prints each as the failed line of its node - and with them the refusals they hold.
  returned: O(step=report)
  type: list
  elements: str
node_lines:
  description: Each node's line as C(readable_lines) shows it, by node name.
  returned: O(step=report)
  type: dict
failing_nodes:
  description: Nodes that did not pass (findings at O(fail_on), not checked, refused, failed, not processed).
  returned: O(step=report)
  type: list
  elements: str
unreachable_nodes:
  description: Nodes that were unreachable.
  returned: O(step=report)
  type: list
  elements: str
passed:
  description: Whether the rollout passed as a whole.
  returned: O(step=report)
  type: bool
run_failures:
  description: Why the run fails whatever its nodes did (no host, RuntimeClasses the gate refused).
  returned: O(step=report)
  type: list
  elements: str
written:
  description: Report files written.
  returned: O(step=report)
  type: list
  elements: str
gpurt_summary_lines:
  description:
    - RV(readable_lines) without the lines of the failing nodes, which C(remediate.yml) prints as the failed line of
      each (with its reason, such as a refusal or a failure), for the C(gpurt.runtime_gate.summary) callback, which
      prints them after the recap.
  returned: O(step=report)
  type: list
  elements: str
"""
