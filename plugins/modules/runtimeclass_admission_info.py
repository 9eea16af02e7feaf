#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: runtimeclass_admission_info
short_description: Prove that kube-apiserver copies a RuntimeClass's node selector into its pods
description:
  - kube-apiserver's RuntimeClass admission plugin (on by default) copies a RuntimeClass's
    C(scheduling.nodeSelector) into every pod of the class. The selector gate of the C(gpurt.runtime_gate.prevent)
    playbook works only when it is on; this module proves it is.
  - It sends a dry-run create of a RuntimeClass whose handler no Node loads (C(gpurt-enforcement-probe)), which
    passes the apiserver's admission plugins and persists nothing, then reads the apiserver's own metrics
    (C(GET /metrics)). Their stable histogram C(apiserver_admission_controller_admission_duration_seconds) has a
    series for each admission plugin that has handled a request since the apiserver started, and the RuntimeClass
    plugin handles every create.
  - The task fails when the metrics show creates handled by other plugins but never by the RuntimeClass plugin
    (it is off), when they show no create at all or have no admission metrics (not proven), and when the metrics
    cannot be read (a 403 names the permission to grant).
  - Behind a load balancer the metrics are one replica's (the one that answered); replicas started with
    different admission flags are not told apart.
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  field_manager:
    description: The field manager of the dry-run create.
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
    details: The same proof; its one create is a dry run in any mode.
  diff_mode:
    support: none
notes:
  - Needs create on RuntimeClasses (the dry run) and get on the non-resource URL C(/metrics);
    C(rbac/runtime-gate-prevent.yaml) grants both.
"""

EXAMPLES = r"""
- name: Prove the RuntimeClass selectors are enforced
  gpurt.runtime_gate.runtimeclass_admission_info:
    kubeconfig: ~/.kube/config
  register: selectors
"""

RETURN = r"""
enforced:
  description: True when the RuntimeClass plugin was seen in the admission metrics; false when it is off; null when unknown.
  returned: always
  type: bool
  sample: true
proof:
  description: What the metrics showed, or why enforcement is not proven.
  returned: always
  type: str
  sample: "proven: kube-apiserver at https://10.0.0.1:6443: its admission metrics show the RuntimeClass plugin handling CREATE"
plugins:
  description: Each admission plugin the metrics name, with the operations it handled since the apiserver started.
  returned: always
  type: dict
  sample: {"RuntimeClass": ["CREATE"], "ValidatingAdmissionPolicy": ["CREATE", "UPDATE"]}
api_requests:
  description: Requests sent to the apiserver.
  returned: always
  type: int
  sample: 2
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import selector_enforcement


def main():
    module = AnsibleModule(argument_spec=selector_enforcement.argument_spec(), supports_check_mode=True)
    selector_enforcement.run(module)


if __name__ == "__main__":
    main()
