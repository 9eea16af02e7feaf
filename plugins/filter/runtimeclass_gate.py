# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter runtimeclass_gate: may each desired RuntimeClass be created yet?"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: runtimeclass_gate
short_description: Judge whether RuntimeClasses are safe to create on the checked nodes
description:
  - For each desired RuntimeClass, the nodes its C(nodeSelector) can select (unknown labels count
    as selectable), which of them lack the handler in their loaded config, which were not checked,
    and whether it is safe to create; safe means it selects at least one node and every selected
    node was checked and has the handler.
positional: nodes
options:
  _input:
    description: The desired RuntimeClasses, each with C(name), C(handler) and optional C(node_selector).
    type: list
    elements: dict
    required: true
  nodes:
    description:
      - Node name to C({labels, runtimes, why_not_checked}). C(labels) null means unknown;
        C(runtimes) null means the node was not checked (its remediation failed or was skipped).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Judge the RuntimeClasses against the re-audited nodes
  ansible.builtin.set_fact:
    gate: "{{ [{'name': 'nvidia', 'handler': 'nvidia'}] | gpurt.runtime_gate.runtimeclass_gate(nodes) }}"
  vars:
    nodes:
      gpu-1: {labels: {"nvidia.com/gpu.present": "true"}, runtimes: [nvidia, runc]}
      gpu-2: {labels: null, runtimes: null, why_not_checked: remediation failed}
"""

RETURN = r"""
_value:
  description:
    - One result per desired RuntimeClass, in order, with C(name), C(handler), C(node_selector),
      C(selected), C(assumed_selectable), C(lacking), C(not_checked), C(loaded),
      C(why_not_checked), C(safe) and C(message).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import runtimeclass_gate as _gate


def runtimeclass_gate(desired, nodes):
    try:
        return _gate.gate(desired, nodes)
    except _gate.GateError as exc:
        raise AnsibleFilterError("runtimeclass_gate: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"runtimeclass_gate": runtimeclass_gate}
