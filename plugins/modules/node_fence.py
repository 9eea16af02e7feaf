#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: node_fence
short_description: Remove the verified handler labels a Node can no longer back, and find the hosts that re-prove it
description:
  - For each Node in O(nodes), removes the labels C(runtime-gate.gpurt.io/<handler>) whose handler its
    C(status.runtimeHandlers) no longer lists (the running containerd as its kubelet reports it), whoever
    set them. A Node that lists no handler at all (containerd 1.x) gives no live signal and keeps its
    labels, since silence proves nothing.
  - A Node that no host of O(hosts) maps to, or that several hosts map to, loses every verified label
    (no run can prove them) and is named; it is not returned in RV(hosts), so it is never re-audited against
    another host.
  - One JSON patch per Node, pinned to its uid and to each label's value; the check time annotation is
    left as it is (a fence proves nothing). Needs no node access.
  - The playbook C(gpurt.runtime_gate.fence) runs it before it re-audits RV(hosts); the event source
    C(gpurt.runtime_gate.runtime_handlers) fences with the same code as the change happens. See C(docs/continuous.md).
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  nodes:
    description: The names of the Nodes to fence.
    type: list
    elements: str
    required: true
  hosts:
    description:
      - The inventory's hosts. A host maps to the Node of its own name unless O(node_names) says otherwise, as
        the audit maps them.
    type: list
    elements: str
    default: []
  node_names:
    description: The Node of each host that sets C(gpurt_node_name), host to Node name.
    type: dict
    default: {}
extends_documentation_fragment:
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.attributes.k8s_group
  - gpurt.runtime_gate.k8s_auth
  - gpurt.runtime_gate.k8s_auth.request_options
attributes:
  check_mode:
    support: full
    details: Sends each patch with C(dryRun=All); the lines say what would be removed.
  diff_mode:
    support: none
notes:
  - Needs C(get) and C(patch) on C(nodes); C(rbac/runtime-gate-labeler.yaml) grants exactly these.
"""

EXAMPLES = r"""
- name: Fence gpu-1 if its containerd no longer runs a handler its labels claim
  gpurt.runtime_gate.node_fence:
    nodes: [gpu-1]
    hosts: "{{ groups['all'] }}"
    node_names: {gpu-1-host: gpu-1}
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
nodes:
  description: What happened on each Node.
  returned: always
  type: list
  elements: dict
  contains:
    node:
      description: The Node's name.
      type: str
    action:
      description: C(fenced), C(kept) (nothing to remove), C(already), C(recreated) (another object under that name now), C(gone).
      type: str
    removed:
      description: The labels removed.
      type: list
      elements: str
    hosts:
      description: The one host that maps to the Node, or none.
      type: list
      elements: str
    line:
      description: One line for a person.
      type: str
  sample: [{"node": "gpu-1", "action": "fenced", "removed": ["runtime-gate.gpurt.io/nvidia"], "hosts": ["gpu-1"],
            "line": "gpu-1: labels removed runtime-gate.gpurt.io/nvidia: not in its live handlers (runc)"}]
hosts:
  description: The hosts that re-prove the Nodes (each mapped to exactly one Node that exists).
  returned: always
  type: list
  elements: str
  sample: [gpu-1]
lines:
  description: One line per Node.
  returned: always
  type: list
  elements: str
  sample: ["gpu-1: verified labels kept (nvidia, runc)"]
api_requests:
  description: Requests sent to the apiserver.
  returned: always
  type: int
  sample: 2
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import node_fence


def main():
    module = AnsibleModule(argument_spec=node_fence.argument_spec(), supports_check_mode=True)
    node_fence.run(module)


if __name__ == "__main__":
    main()
