# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter runtimeclass_gate: may each desired RuntimeClass be written yet?"""

DOCUMENTATION = r"""
name: runtimeclass_gate
version_added: 0.1.0
short_description: Judge whether RuntimeClasses are safe to write, against every Node of the cluster
description:
  - For each desired RuntimeClass, the Nodes it can select - its C(nodeSelector) matches their labels
    (unknown labels count as selectable) and its C(tolerations) tolerate their C(NoSchedule) and
    C(NoExecute) taints - and whether each of them has the handler.
  - The Nodes of this run are judged by their re-audit (the loaded containerd config); every other
    Node of the cluster by the handlers its kubelet reports (C(status.runtimeHandlers)). A Node
    with neither is unknown.
  - A RuntimeClass is safe to write when it selects at least one Node and every Node it selects
    has the handler. Lacking or unknown Nodes block it, unless O(force).
  - Taints under C(node.kubernetes.io/) (not-ready, unreachable, cordoned, pressure) are ignored;
    the control plane lifts them by itself. Pods may carry tolerations of their own, so a class
    without a C(nodeSelector) is best kept off tainted Nodes that lack the handler by a selector.
positional: run_nodes
options:
  _input:
    description:
      - The desired RuntimeClasses, each with C(name), C(handler) and optional C(node_selector)
        and C(tolerations).
    type: list
    elements: dict
    required: true
  run_nodes:
    description:
      - Node name to C({labels, runtimes, why_not_checked}) for the hosts of this run. C(labels)
        (the inventory's) win over the Node object's; null means the Node object's, or unknown.
        C(runtimes) null means the host was not re-audited (its remediation failed or was skipped).
    type: dict
    required: true
  cluster_nodes:
    description:
      - The cluster's Nodes, as M(gpurt.runtime_gate.node_info) returns them. Left out, every Node
        outside the run is unknown, so nothing is safe.
    type: list
    elements: dict
  live_runtimeclasses:
    description:
      - The cluster's RuntimeClasses, as M(gpurt.runtime_gate.runtimeclass_info) returns them;
        used with O(defaults).
    type: list
    elements: dict
  defaults:
    description:
      - The desired list is a default the user did not write. Its entries are left alone when
        the cluster already has a RuntimeClass of that name, or one with that handler.
    type: bool
    default: false
  force:
    description:
      - Write even the RuntimeClasses the gate refuses; their message says what was overridden.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Judge the RuntimeClasses against the re-audited hosts and the other Nodes
  ansible.builtin.set_fact:
    gate: >-
      {{ [{'name': 'nvidia', 'handler': 'nvidia', 'node_selector': {'nvidia.com/gpu.present': 'true'}}]
         | gpurt.runtime_gate.runtimeclass_gate(run_nodes, cluster_nodes=gpurt_nodes.nodes) }}
  vars:
    run_nodes:
      gpu-1: {labels: null, runtimes: [nvidia, runc]}
      gpu-2: {labels: null, runtimes: null, why_not_checked: failed or unreachable during remediation}
"""

RETURN = r"""
_value:
  description:
    - One result per desired RuntimeClass, in order, with C(name), C(handler), C(node_selector),
      C(selected), C(assumed_selectable), C(tainted_out), C(lacking), C(unknown), C(evidence),
      C(loaded), C(why_unknown), C(safe), C(decision) (C(write), C(refused) or C(left_alone)) and
      C(message), which names every blocking Node and why.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _runtimeclass_gate as _gate


def runtimeclass_gate(desired, run_nodes, cluster_nodes=None, live_runtimeclasses=None, defaults=False, force=False):
    try:
        return _gate.gate(desired, run_nodes, cluster_nodes=cluster_nodes, live_runtimeclasses=live_runtimeclasses,
                          defaults=bool(defaults), force=bool(force))
    except _gate.GateError as exc:
        raise AnsibleFilterError("runtimeclass_gate: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"runtimeclass_gate": runtimeclass_gate}
