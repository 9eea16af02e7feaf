#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

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
    policy resources (before Kubernetes 1.30, or turned off) fails the task and nothing is written.
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
  - Needs get and patch on the policy, the binding and the ConfigMap, and delete on the first two for O(mode=off).
"""

EXAMPLES = r"""
- name: Warn about RuntimeClasses whose handler no Node verified
  gpurt.runtime_gate.admission_policy:
    mode: warn
    policy: "{{ docs[0] }}"
    binding: "{{ docs[1] }}"
    params_data:
      handler.nvidia: "kubernetes.io/hostname=gpu-1,runtime-gate.gpurt.io/nvidia=true"
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
