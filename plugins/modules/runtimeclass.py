#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: runtimeclass
short_description: Create, update or delete one RuntimeClass with server-side apply
description:
  - Makes one RuntimeClass (C(node.k8s.io/v1)) carry the O(handler), O(overhead), O(node_selector),
    O(tolerations) and O(labels) you give, or removes it with O(state=absent).
  - Writes with server-side apply, as C(kubectl apply --server-side) does (C(PATCH) with
    C(application/apply-patch+yaml), field manager O(field_manager)), so Kubernetes merges. Only the
    fields you give are changed; the scheduling, overhead, labels and annotations that other tools or
    people set on a live RuntimeClass are kept.
  - A field you leave out is not touched, unless an earlier run of this module (the same field
    manager) set it; then Kubernetes removes it, as with any server-side apply.
  - When another field manager owns a field you give with another value (for example a RuntimeClass
    made with C(kubectl create) whose C(overhead) differs), the apiserver refuses the apply; the task
    fails naming each field and its owner (RV(conflicts)). O(force=true) takes the fields over.
  - A second run with the same options sends no write (the module reads the object, sees that its
    field manager already owns exactly these fields with these values, and stops).
  - The apiserver never checks that a node can run O(handler). Create a RuntimeClass only after
    every node it can select has loaded the handler; the C(gpurt.runtime_gate.remediate) playbook
    does exactly that with C(gpurt_manage_runtimeclasses=true).
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  name:
    description:
      - C(metadata.name) of the RuntimeClass, the name pods give as C(runtimeClassName).
    type: str
    required: true
  state:
    description:
      - C(present) creates or updates the RuntimeClass; C(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  handler:
    description:
      - The containerd runtime name pods of this class ask the node for (a DNS label).
      - Required with O(state=present).
      - Kubernetes does not allow changing the C(handler) of an existing RuntimeClass (the field is
        immutable). When the live object has another handler the task fails, unless O(recreate=true).
    type: str
  overhead:
    description:
      - "C(overhead.podFixed), the resources every pod of this class is charged on top of its
        containers, such as C({cpu: 250m, memory: 120Mi}). Each resource is a field of its own."
      - Quantities are compared by value, so C(0.25) matches the C(250m) the apiserver stores.
      - Left out or empty, the overhead is not part of the apply.
    type: dict
  node_selector:
    description:
      - C(scheduling.nodeSelector), the labels a node must have for pods of this class to be
        scheduled there. Kubernetes treats it as one field; given, it replaces the whole selector.
      - Left out or empty, it is not part of the apply.
      - Boolean values are written as C(true)/C(false), as label values are strings.
    type: dict
  tolerations:
    description:
      - C(scheduling.tolerations), added to the tolerations of every pod of this class. One field,
        replaced whole when given.
      - Each item may have C(key), C(operator) (C(Exists) or C(Equal)), C(value), C(effect) and
        C(tolerationSeconds).
    type: list
    elements: dict
  labels:
    description:
      - Labels the RuntimeClass must carry. Each label is a field of its own; other labels are kept.
    type: dict
  force:
    description:
      - Take over the fields other field managers own when their values differ from the ones given,
        instead of failing (C(force=true) on the apply, as C(kubectl apply --server-side
        --force-conflicts)). The other managers stop owning those fields.
    type: bool
    default: false
  recreate:
    description:
      - When the live RuntimeClass has a different O(handler), delete it and create it again.
        Its labels, annotations, overhead and scheduling are carried over, except the fields given here.
      - Between the delete and the create, new pods naming this RuntimeClass are rejected by
        admission; running pods are not affected. The delete carries the C(resourceVersion) that
        was read, so a RuntimeClass changed meanwhile is not deleted.
    type: bool
    default: false
  uid:
    description:
      - Pin the write to the RuntimeClass with this C(metadata.uid), as it was listed when it was judged
        (C(prevent.yml) passes it). A RuntimeClass deleted since is reported and not re-created; one re-created
        under the same name is reported and not written. The apply carries the uid, so the apiserver refuses
        the write when the object changed identity between the read and the write.
    type: str
  field_manager:
    description:
      - The field manager of the apply, the name C(managedFields) records as the owner of the fields given.
    type: str
    default: gpurt
extends_documentation_fragment:
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.attributes.k8s_group
  - gpurt.runtime_gate.k8s_auth
  - gpurt.runtime_gate.k8s_auth.request_options
attributes:
  check_mode:
    support: full
    details:
      - Sends the same apply (or delete) with C(dryRun=All), so the result is what the apiserver
        would store, conflicts, validation and RBAC refusals included; nothing is persisted.
      - A re-create (O(recreate=true)) is computed instead, since a dry-run create cannot run while
        the object it replaces still exists.
  diff_mode:
    support: full
    details: C(before) and C(after) hold the whole object, without the fields the apiserver maintains.
notes:
  - This module writes. It needs C(get) and C(patch) on C(runtimeclasses.node.k8s.io), plus C(delete)
    and C(create) for O(state=absent) and O(recreate=true); C(rbac/runtime-gate-remediate.yaml)
    grants them. Check mode needs them too (dry runs are authorized as writes). The read-only audit
    identity of C(rbac/runtime-gate-audit.yaml) gets a 403.
  - Run it once for a play, with C(run_once=true) and C(delegate_to=localhost).
seealso:
  - module: gpurt.runtime_gate.runtimeclass_info
  - name: Server-Side Apply
    description: How Kubernetes merges applied configurations and records field ownership.
    link: https://kubernetes.io/docs/reference/using-api/server-side-apply/
"""

EXAMPLES = r"""
- name: The nvidia RuntimeClass, for GPU nodes only, with a fixed overhead
  gpurt.runtime_gate.runtimeclass:
    name: nvidia
    handler: nvidia
    overhead:
      cpu: 250m
      memory: 120Mi
    node_selector:
      nvidia.com/gpu.present: "true"
    tolerations:
      - key: nvidia.com/gpu
        operator: Exists
        effect: NoSchedule
  run_once: true
  delegate_to: localhost

- name: Own only the handler; keep whatever overhead and scheduling others set
  gpurt.runtime_gate.runtimeclass:
    name: nvidia
    handler: nvidia
  run_once: true
  delegate_to: localhost

- name: Take the overhead over from the tool that created the class
  gpurt.runtime_gate.runtimeclass:
    name: nvidia
    handler: nvidia
    overhead:
      cpu: 250m
    force: true
  run_once: true
  delegate_to: localhost

- name: Point nvidia-cdi at another handler (immutable, so delete and re-create)
  gpurt.runtime_gate.runtimeclass:
    name: nvidia-cdi
    handler: nvidia-cdi
    recreate: true
    kubeconfig: ~/.kube/admin.yaml
  run_once: true
  delegate_to: localhost

- name: Remove a RuntimeClass
  gpurt.runtime_gate.runtimeclass:
    name: kata
    state: absent
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
action:
  description:
    - What was done (or in check mode, what would be done)
    - C(created), C(updated), C(recreated) (deleted and created for a new handler), C(deleted),
      or C(none).
  returned: always
  type: str
  sample: created
runtimeclass:
  description:
    - The RuntimeClass after the task, normalized as M(gpurt.runtime_gate.runtimeclass_info)
      returns it, plus its labels, annotations and C(resource_version). In check mode, what it would be.
    - Null when it does not exist (after O(state=absent)).
  returned: always
  type: dict
  sample:
    name: nvidia
    handler: nvidia
    overhead: {"podFixed": {"cpu": "250m", "memory": "120Mi"}}
    node_selector: {"nvidia.com/gpu.present": "true"}
    tolerations: []
    labels: {}
    annotations: {}
    resource_version: "1004"
    source: cluster
    uid: 6d1f1b8e-0c4e-4a55-9d2a-2b8f0f7c9a11
conflicts:
  description:
    - When the apply was refused because other field managers own fields it would change, each
      such field and its owner, as the apiserver names them. Empty otherwise.
  returned: always
  type: list
  elements: dict
  sample:
    - field: .overhead.podFixed.cpu
      manager: conflict with "kubectl-client-side-apply" using node.k8s.io/v1
server:
  description: The apiserver URL.
  returned: when the connection options could be used
  type: str
  sample: https://10.0.0.1:6443
api_requests:
  description: HTTP requests sent to the apiserver, retries included.
  returned: always
  type: int
  sample: 2
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import runtimeclass_apply


def main():
    module = AnsibleModule(argument_spec=runtimeclass_apply.argument_spec(), supports_check_mode=True,
                           required_if=[("state", "present", ("handler",))])
    runtimeclass_apply.run(module)


if __name__ == "__main__":
    main()
