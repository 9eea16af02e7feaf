#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_labels
short_description: Write the verified handler labels of Nodes with server-side apply
description:
  - For each Node in O(nodes), makes the labels under C(runtime-gate.gpurt.io/) that the field manager
    O(field_manager) owns exactly the given set (C(runtime-gate.gpurt.io/<handler>=true) per handler a
    run verified), and sets the annotation C(runtime-gate.gpurt.io/checked-at) to the time of the task (UTC).
  - Server-side apply of the whole set, so the apiserver removes the labels this manager applied before
    and no longer applies. Every other label is left alone, including one under our prefix that another
    manager (a person with C(kubectl label)) set; RV(nodes[].kept_by_others) names those.
  - A Node that does not exist is not written (an apply would create it).
  - Which handlers are verified is decided on the controller (the filter
    P(gpurt.runtime_gate.verified_labels#filter) from an audit report); the playbooks C(audit.yml) and
    C(remediate.yml) run both with C(gpurt_label_nodes=true). See C(docs/prevention.md).
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  nodes:
    description:
      - One entry per Node, C({name, labels}); C(labels) maps C(runtime-gate.gpurt.io/<handler>) to C("true").
      - An empty C(labels) removes every label this manager set on the Node.
    type: list
    elements: dict
    required: true
  field_manager:
    description:
      - The field manager of the apply. Keep the default so each run removes what the previous one set.
    type: str
    default: gpurt-runtime-gate-labels
extends_documentation_fragment:
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.attributes.k8s_group
  - gpurt.runtime_gate.k8s_auth
  - gpurt.runtime_gate.k8s_auth.request_options
attributes:
  check_mode:
    support: full
    details: Sends each apply with C(dryRun=All); the result says what would change and nothing is stored.
  diff_mode:
    support: none
notes:
  - Needs C(get) and C(patch) on C(nodes); C(rbac/runtime-gate-labeler.yaml) grants exactly these.
  - C(changed) is true when a label is added or removed; refreshing the check time alone is not a change.
"""

EXAMPLES = r"""
- name: Label node gpu-1 for the nvidia handler and remove the labels it no longer earns
  gpurt.runtime_gate.node_labels:
    nodes:
      - name: gpu-1
        labels:
          runtime-gate.gpurt.io/nvidia: "true"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
nodes:
  description: What happened on each Node (in check mode, what would happen).
  returned: always
  type: list
  elements: dict
  contains:
    node:
      description: The Node's name.
      type: str
    action:
      description: C(labeled) (labels added or removed), C(refreshed) (only the check time), or C(no node).
      type: str
    added:
      description: Our labels added.
      type: list
      elements: str
    removed:
      description: Our labels removed.
      type: list
      elements: str
    kept_by_others:
      description: Labels under our prefix that are not verified but stay, since another manager set them.
      type: list
      elements: str
  sample: [{"node": "gpu-1", "action": "labeled", "added": ["runtime-gate.gpurt.io/nvidia"], "removed": [],
            "kept_by_others": []}]
checked_at:
  description: The check time written in the annotation, UTC.
  returned: always
  type: str
  sample: "2026-12-05T07:40:00Z"
api_requests:
  description: Requests sent to the apiserver.
  returned: always
  type: int
  sample: 4
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import node_labels


def main():
    module = AnsibleModule(argument_spec=node_labels.argument_spec(), supports_check_mode=True)
    node_labels.run(module)


if __name__ == "__main__":
    main()
