#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: runtimeclass_info
short_description: List the cluster's RuntimeClasses, or read them from manifests
description:
  - Lists every RuntimeClass (C(node.k8s.io/v1)) from the apiserver, page by page, and returns
    each one's C(handler), C(overhead) and C(scheduling) in a normalized form, sorted by name.
  - With O(src), reads RuntimeClass manifests from a file or directory instead and contacts no
    cluster, so a bootstrap template can be checked against the RuntimeClasses kept in git.
  - With O(list_nodes=true), also lists the Nodes in the same API session and returns them as
    M(gpurt.runtime_gate.node_info) does, so a play that needs both pays for one task (and one start
    of the kubernetes client) instead of two.
  - A RuntimeClass C(handler) is never validated by the apiserver; this module only reports
    what the cluster holds. Compare it with the nodes' loaded runtimes to find missing handlers.
  - Read-only.
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  src:
    description:
      - A manifest file, or a directory whose C(*.yaml), C(*.yml) and C(*.json) files (not
        recursive) are read in name order.
      - Multi-document YAML, C(kind=List) and C(kind=RuntimeClassList) are understood; objects
        of other kinds are skipped.
      - When set, no cluster is contacted for the RuntimeClasses; the connection options are used
        only for O(list_nodes).
    type: path
  list_nodes:
    description:
      - Also list every Node of the cluster, in the same session as the RuntimeClasses (one list
        request per resource, page by page), and return them as RV(nodes).
      - The Nodes always come from the cluster, also with O(src).
    type: bool
    default: false
  on_none:
    description:
      - What to do when O(src) holds no RuntimeClass at all (or the cluster has none).
      - C(fail) fails the task, naming what O(src) holds instead. C(report) returns an empty RV(runtimeclasses)
        and the reason in RV(none_reason), so that the run that needed them fails once, saying why
        (C(audit.yml), C(cluster_audit.yml), C(crosscheck.yml), C(validate_bootstrap.yml)). A cluster with no
        RuntimeClass never fails the task.
    type: str
    choices: [fail, report]
    default: fail
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
  - module: gpurt.runtime_gate.node_info
  - module: gpurt.runtime_gate.containerd_config_info
"""

EXAMPLES = r"""
# Listed once for the whole play, on the controller, then visible to every host.
- name: List the RuntimeClasses once
  gpurt.runtime_gate.runtimeclass_info:
  run_once: true
  delegate_to: localhost
  register: gpurt_runtimeclasses

- name: Show the handlers pods can ask for
  ansible.builtin.debug:
    msg: "{{ gpurt_runtimeclasses.runtimeclasses | map(attribute='handler') | list }}"

- name: A given kubeconfig and context
  gpurt.runtime_gate.runtimeclass_info:
    kubeconfig: ~/.kube/prod.yaml
    context: gpu-cluster
  run_once: true
  delegate_to: localhost
  register: gpurt_runtimeclasses

- name: A URL and a token (for example from a vault)
  gpurt.runtime_gate.runtimeclass_info:
    host: https://10.0.0.1:6443
    api_key: "{{ vault_audit_token }}"
    ca_cert: /etc/kubernetes/pki/ca.crt
  run_once: true
  delegate_to: localhost
  register: gpurt_runtimeclasses

- name: The RuntimeClasses and the Nodes (labels, allocatable, runtime handlers) in one task
  gpurt.runtime_gate.runtimeclass_info:
    list_nodes: true
  run_once: true
  delegate_to: localhost
  register: gpurt_cluster

- name: The RuntimeClasses kept in git, without a cluster
  gpurt.runtime_gate.runtimeclass_info:
    src: "{{ playbook_dir }}/manifests/runtimeclasses/"
  run_once: true
  delegate_to: localhost
  register: gpurt_runtimeclasses
"""

RETURN = r"""
runtimeclasses:
  description: Every RuntimeClass, normalized, sorted by name.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: C(metadata.name).
      type: str
      sample: nvidia
    handler:
      description: The containerd runtime name pods of this class ask the node for.
      type: str
      sample: nvidia
    overhead:
      description: C(overhead) with its C(podFixed) map (empty when unset), or null when the class sets no overhead.
      type: dict
      sample: {"podFixed": {"cpu": "250m", "memory": "64Mi"}}
    node_selector:
      description: C(scheduling.nodeSelector); empty when pods of this class may land on any node.
      type: dict
    tolerations:
      description: C(scheduling.tolerations).
      type: list
      elements: dict
    source:
      description: C(cluster), or the manifest file (and document and item number) it came from.
      type: str
    uid:
      description: C(metadata.uid) (null for a manifest); C(prevent.yml) pins its write to it.
      type: str
  sample:
    - name: nvidia
      handler: nvidia
      overhead: null
      node_selector: {"nvidia.com/gpu.present": "true"}
      tolerations: []
      source: cluster
      uid: 6d1f1b8e-0c4e-4a55-9d2a-2b8f0f7c9a11
nodes:
  description:
    - With O(list_nodes=true), every Node, normalized, sorted by name, with the keys
      M(gpurt.runtime_gate.node_info) returns for each (C(name), C(labels),
      C(runtime_handlers), C(runtime_handler_features), C(allocatable), C(taints), C(unschedulable),
      C(kubelet_version), C(container_runtime_version), C(labels_checked_at), C(uid), C(verified_label_managers),
      C(source), C(listed_at)).
  returned: success, when O(list_nodes=true)
  type: list
  elements: dict
none_reason:
  description: Why no RuntimeClass was read - what O(src) holds instead, or that the cluster has none.
  returned: with O(on_none=report), when no RuntimeClass was read
  type: str
  sample: "no RuntimeClass (apiVersion node.k8s.io/v1) in /repo/manifests: read 1 file(s), holding no document"
source:
  description: C(cluster), or O(src) when the RuntimeClasses came from manifests.
  returned: always
  type: str
  sample: cluster
server:
  description: The apiserver URL that was listed; absent with O(src).
  returned: when the cluster was contacted
  type: str
  sample: https://10.0.0.1:6443
api_requests:
  description: HTTP requests sent to the apiserver, one per page and per retry (both resources with O(list_nodes)); 0 with O(src) alone.
  returned: always
  type: int
  sample: 1
api_list_calls:
  description: Complete list operations (each possibly several pages), one per resource listed; 0 with O(src) alone.
  returned: always
  type: int
  sample: 1
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
    module = AnsibleModule(argument_spec=k8s_listing.RUNTIMECLASS_INFO_SPEC, supports_check_mode=True)
    k8s_listing.run_module(module, k8s_listing.runtimeclass_info)


if __name__ == "__main__":
    main()
