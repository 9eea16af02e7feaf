#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: admission_policy
short_description: Keep the runtime gate's ValidatingAdmissionPolicy, its binding and its parameters current
description:
  - Applies, with server-side apply, the parameter ConfigMap C(runtime-gate-verified-handlers) (O(params_data)),
    then the ValidatingAdmissionPolicy and then its binding from C(playbooks/files/runtime-gate-policy.yaml),
    the binding's C(validationActions) set from O(mode) (C(warn) is C([Warn, Audit]), C(deny) is C([Deny])) and its
    C(paramRef) to the ConfigMap with C(parameterNotFoundAction=Allow).
  - Before any write it reads C(/apis/admissionregistration.k8s.io/v1); an apiserver that does not serve the
    policy resources (before Kubernetes 1.30, or turned off) fails the task and nothing is written. Then every
    object is dry-run; a missing O(namespace) or a refused verb fails the task with nothing written.
  - The three objects are the gate's alone. A field another manager changed is taken back (the applies are
    forced), and a ConfigMap key that O(params_data) does not hold (added by hand) is removed by a merge patch
    pinned to the resourceVersion it judged; RV(lines) names each, with the managers that had set it.
  - The ConfigMap gets a C(revision) key, a digest of its other keys, which the policy's message quotes; a
    C(revision) in O(params_data) is replaced.
  - After the writes it proves enforcement with a dry-run create of a RuntimeClass whose handler no Node loads
    (C(gpurt-enforcement-probe)); O(mode=deny) needs the policy to refuse it, O(mode=warn) to admit it with the
    policy's warning, quoting the revision just written, within O(enforcement_timeout). Otherwise the task fails
    naming the ValidatingAdmissionPolicy admission plugin, or the apiserver's stale copy of the parameters and
    the restart that ends it (the objects stay written). Check mode does not probe.
  - O(mode=off) deletes the binding and the policy.
  - Used by the C(gpurt.runtime_gate.prevent) playbook, which derives O(params_data) from the Nodes' verified labels.
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  mode:
    description: C(off), C(warn) or C(deny).
    type: str
    required: true
    choices: ['off', warn, deny]
  policy:
    description: The ValidatingAdmissionPolicy manifest.
    type: dict
  binding:
    description: The ValidatingAdmissionPolicyBinding manifest.
    type: dict
  params_data:
    description: The ConfigMap's data.
    type: dict
    default: {}
  namespace:
    description: The namespace of the parameter ConfigMap (it must exist).
    type: str
    default: gpurt-runtime-gate
  field_manager:
    description: The field manager of the applies.
    type: str
    default: gpurt-runtime-gate-prevent
  enforcement_timeout:
    description:
      - Seconds to wait for the policy to reach admission (through the apiserver's informers) before the task
        fails as not enforced; at most what the task's O(deadline) leaves. 0 probes once.
      - prevent.yml passes C(gpurt_admission_enforcement_timeout).
    type: float
    default: 30.0
extends_documentation_fragment:
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.attributes.k8s_group
  - gpurt.runtime_gate.k8s_auth
  - gpurt.runtime_gate.k8s_auth.request_options
attributes:
  check_mode:
    support: full
    details: Every write is sent with C(dryRun=All).
  diff_mode:
    support: none
notes:
  - Needs get, create and patch on the policy, the binding and the ConfigMap, delete on the first two for
    O(mode=off), and create on RuntimeClasses (the dry-run probe); C(rbac/runtime-gate-prevent.yaml) grants these.
"""

EXAMPLES = r"""
- name: Warn about RuntimeClasses whose handler no Node verified
  gpurt.runtime_gate.admission_policy:
    mode: warn
    policy: "{{ docs[0] }}"
    binding: "{{ docs[1] }}"
    params_data:
      handler.nvidia: "pool=gpu,runtime-gate.gpurt.io/nvidia=true"
      keys: "pool,runtime-gate.gpurt.io/nvidia"
      loaded: nvidia
  vars:
    docs: "{{ (lookup('ansible.builtin.file', 'playbooks/files/runtime-gate-policy.yaml') | ansible.builtin.from_yaml)['items'] }}"
"""

RETURN = r"""
objects:
  description: What was done to each object, C({kind, name, action}); action is C(created), C(updated), C(deleted) or C(none).
  returned: always
  type: list
  elements: dict
  sample: [{"kind": "ConfigMap", "name": "runtime-gate-verified-handlers", "action": "created"}]
lines:
  description: What the task did beyond the objects' actions, one line each (keys removed or taken back, and from whom).
  returned: always
  type: list
  elements: str
  sample: ["parameter handler.nvidai was removed from gpurt-runtime-gate/runtime-gate-verified-handlers: ..."]
params_removed:
  description: The ConfigMap keys removed because no verified label proves them, C({key, managers}).
  returned: always
  type: list
  elements: dict
  sample: [{"key": "handler.nvidai", "managers": ["kubectl-edit"]}]
params_taken_over:
  description: The ConfigMap keys whose value another manager had changed, taken back, C({key, managers}).
  returned: always
  type: list
  elements: dict
  sample: [{"key": "handler.nvidia", "managers": ["kubectl-patch"]}]
enforcement:
  description:
    - Whether the apiserver was seen enforcing the policy (C(proven ...)), or why it was not tried; null for O(mode=off).
  returned: always
  type: str
  sample: "proven: a RuntimeClass with a handler no Node loads is refused, judged with revision 5c1f0e2a9b7d3c44 of the parameters"
api_requests:
  description: Requests sent to the apiserver.
  returned: always
  type: int
  sample: 7
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import admission_apply


def main():
    module = AnsibleModule(argument_spec=admission_apply.argument_spec(), supports_check_mode=True)
    admission_apply.run(module)


if __name__ == "__main__":
    main()
