#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: node_info
short_description: List the cluster's Nodes as the runtime gate needs them, or read them from manifests
description:
  - Lists Nodes from the apiserver, page by page, and returns for each its labels, taints,
    allocatable resources, kubelet and container runtime versions, and the runtime handlers the
    kubelet reports in C(status.runtimeHandlers), sorted by name.
  - C(status.runtimeHandlers) (beta in Kubernetes 1.31, GA in 1.33) is what the node's CRI
    loaded at start. When a Node has no such field the handlers are C(null), meaning not
    reported, which is not the same as none.
  - With O(src), reads Node manifests (for example C(kubectl get nodes -o yaml)) from a file or
    directory instead and contacts no cluster.
  - Read-only.
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  src:
    description:
      - A manifest file, or a directory whose C(*.yaml), C(*.yml) and C(*.json) files (not
        recursive) are read in name order. C(kind=List) and C(kind=NodeList) are understood.
      - When set, no cluster is contacted and the connection options are ignored.
    type: path
  names:
    description:
      - Only these Nodes. Names not found are listed in RV(names_not_found) with a warning.
      - With exactly one name the apiserver is asked for that Node only (C(fieldSelector)).
    type: list
    elements: str
  label_selector:
    description:
      - Only Nodes matching this label selector, such as C(nvidia.com/gpu.present=true).
      - With O(src) only equality terms (C(k=v), C(k!=v), C(k), C(!k)) are supported.
    type: str
extends_documentation_fragment:
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.attributes.k8s_group
  - gpurt.runtime_gate.attributes.action
  - gpurt.runtime_gate.attributes.listing
  - gpurt.runtime_gate.k8s_auth
  - gpurt.runtime_gate.k8s_auth.list_options
  - gpurt.runtime_gate.k8s_auth.request_options
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
notes:
  - In a play over many nodes use C(run_once=true) and C(delegate_to=localhost), so the
    cluster is listed once for the whole play and the result is registered for every host.
seealso:
  - module: gpurt.runtime_gate.runtimeclass_info
"""

EXAMPLES = r"""
# Listed once for the whole play, on the controller, then visible to every host.
- name: List the GPU nodes once
  gpurt.runtime_gate.node_info:
    label_selector: nvidia.com/gpu.present=true
  run_once: true
  delegate_to: localhost
  register: gpurt_nodes

- name: Runtime handlers this host's kubelet reports (null when not reported)
  ansible.builtin.debug:
    msg: >-
      {{ (gpurt_nodes.nodes | selectattr('name', 'equalto', inventory_hostname) | first).runtime_handlers }}

- name: A few nodes by name, with a token
  gpurt.runtime_gate.node_info:
    host: https://10.0.0.1:6443
    api_key: "{{ vault_audit_token }}"
    names: "{{ ansible_play_hosts }}"
  run_once: true
  delegate_to: localhost
  register: gpurt_nodes

- name: Nodes saved with kubectl get nodes -o yaml, without a cluster
  gpurt.runtime_gate.node_info:
    src: "{{ playbook_dir }}/snapshots/nodes.yaml"
  run_once: true
  delegate_to: localhost
  register: gpurt_nodes
"""

RETURN = r"""
nodes:
  description: Every Node that matched, normalized, sorted by name.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: C(metadata.name).
      type: str
    labels:
      description: C(metadata.labels).
      type: dict
    runtime_handlers:
      description:
        - Sorted names in C(status.runtimeHandlers), without the C("") entry (the default
          runtime, which no RuntimeClass can name).
        - Null when the Node does not report the field (Kubernetes before 1.30 or the feature off).
      type: list
      elements: str
      sample: [nvidia, runc]
    runtime_handler_features:
      description: Each C(status.runtimeHandlers) entry, C("") included, mapped to its C(features); null likewise.
      type: dict
    allocatable:
      description: C(status.allocatable), quantities as the apiserver writes them.
      type: dict
      sample: {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"}
    taints:
      description: C(spec.taints).
      type: list
      elements: dict
    unschedulable:
      description: C(spec.unschedulable) (cordoned).
      type: bool
    kubelet_version:
      description: C(status.nodeInfo.kubeletVersion), or null.
      type: str
      sample: v1.33.1
    container_runtime_version:
      description: C(status.nodeInfo.containerRuntimeVersion), or null.
      type: str
      sample: containerd://2.1.9
    labels_checked_at:
      description:
        - The annotation C(runtime-gate.gpurt.io/checked-at), when the run last wrote the Node's verified handler
          labels (M(gpurt.runtime_gate.node_labels)), or null.
      type: str
      sample: "2026-12-05T07:40:00Z"
    uid:
      description: C(metadata.uid), or null. M(gpurt.runtime_gate.node_labels) pins its writes to it.
      type: str
    verified_label_managers:
      description:
        - For each label under C(runtime-gate.gpurt.io/), the field managers that set it, as C(manager (Operation))
          from C(metadata.managedFields) (the rest of C(managedFields) is not returned).
      type: dict
      sample: {"runtime-gate.gpurt.io/nvidia": ["kubectl-label (Update)"]}
    source:
      description: C(cluster), or the manifest file (and document and item number) it came from.
      type: str
    listed_at:
      description:
        - When the cluster was listed (seconds since the epoch, controller clock), or null with O(src). The audit
          trusts C(runtime_handlers) as the running containerd's view only for a daemon that started well before.
      type: float
      sample: 1796501739.57
names_not_found:
  description: Names from O(names) that matched no Node.
  returned: always
  type: list
  elements: str
source:
  description: C(cluster), or O(src) when the Nodes came from manifests.
  returned: always
  type: str
server:
  description: The apiserver URL that was listed; absent with O(src).
  returned: when the cluster was contacted
  type: str
api_requests:
  description: HTTP requests sent to the apiserver, one per page and per retry; 0 with O(src).
  returned: always
  type: int
api_list_calls:
  description: Complete list operations (each possibly several pages); 0 with O(src).
  returned: always
  type: int
invalid:
  description:
    - Why each invalid object is invalid. The task failed for them, or with O(on_invalid=warn)
      they were left out of the result.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import listing as k8s_listing


def main():
    module = AnsibleModule(argument_spec=k8s_listing.NODE_INFO_SPEC, supports_check_mode=True)
    k8s_listing.run_module(module, k8s_listing.node_info)


if __name__ == "__main__":
    main()
