#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: node_labels
short_description: Make the labels under runtime-gate.gpurt.io/ of Nodes exactly their verified handlers
description:
  - For each Node in O(nodes), makes every label under C(runtime-gate.gpurt.io/) exactly the given set
    (C(runtime-gate.gpurt.io/<handler>=true) per handler a run verified), whoever had set the others - a
    person with C(kubectl label), or another server-side apply manager that co-owns it - and sets the
    annotation C(runtime-gate.gpurt.io/checked-at) (UTC). RV(nodes[].set_by) names who had set each label
    removed.
  - One JSON merge patch per Node to write (a null removes a label whatever field manager owns it, which
    a server-side apply cannot). Every patch carries the Node's C(metadata.uid), so the apiserver refuses
    it on a Node deleted and re-created with the same name since it was judged; that Node is reported
    C(recreated) and not labeled. Every other label and annotation is left alone.
  - With C(current) of an entry (the Node as the run's own list saw it) nothing is read before writing, and a
    Node whose labels already match and whose check time is younger than a quarter of O(max_age) gets no
    request at all (C(unchanged)); an older check time is refreshed (C(refreshed)). Without it, the Node is
    read first (one GET), and a given C(uid) it no longer has is C(recreated).
  - A Node that cannot be written is that Node's problem - every other Node is written (those that lose a
    label first), then the module fails naming it (RV(problems), with the problems given in
    C(problems) of the entries). A refused identity, the deadline or an apiserver that does not answer stops the run
    for every Node alike (RV(stopped)).
  - A Node that does not exist is not written (C(no node)); a merge patch never creates one.
  - Which handlers are verified is decided on the controller (the filter
    P(gpurt.runtime_gate.verified_labels#filter) from an audit report); the playbooks C(audit.yml) and
    C(remediate.yml) run both with C(gpurt_label_nodes=true). See C(docs/prevention.md).
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  nodes:
    description:
      - One entry per Node, C({name, labels, uid, current}); C(labels) maps C(runtime-gate.gpurt.io/<handler>)
        to C("true"). Each Node once.
      - An empty C(labels) removes every label under the prefix.
      - C(uid) (optional) is the C(metadata.uid) of the Node judged; the write is refused on another.
      - C(current) (optional, needs C(uid)) is the Node as listed, C({labels, checked_at, set_by}) - its
        labels, its C(runtime-gate.gpurt.io/checked-at), and who set each label under the prefix, as
        M(gpurt.runtime_gate.node_info) returns them (C(labels), C(labels_checked_at),
        C(verified_label_managers)). Without it the Node is read first.
      - C(problems) (optional, a list of strings) says why the plan could not label the Node as its proof says
        (P(gpurt.runtime_gate.verified_labels#filter) - a runtime name no label can carry, two hosts mapped to the
        Node); the given labels are still written, and the module reports them as the Node's problems.
      - Other keys (the plan's C(host), C(handlers)) are ignored.
    type: list
    elements: dict
    required: true
  max_age:
    description:
      - The age after which verified labels are stale (C(gpurt_label_max_age)), such as C(24h), C(90m), C(2d).
        A Node whose labels already match is written again only when its check time is older than a quarter
        of it, so a run every few hours keeps every judged Node fresh without a write per Node and run.
    type: str
    default: 24h
  checked_at:
    description:
      - The time to write in C(runtime-gate.gpurt.io/checked-at), in its format (C(2026-12-05T07:40:00Z), UTC),
        instead of now - for a caller that removes labels without proving the others again (a fence), so the
        remaining labels never look fresher than their proof. Refused when later than now.
    type: str
  field_manager:
    description:
      - The field manager the patches are recorded under in C(managedFields).
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
    details: Sends each patch with C(dryRun=All); the result says what would change and nothing is stored.
  diff_mode:
    support: none
notes:
  - Needs C(patch) on C(nodes), and C(get) for an entry without C(current); C(rbac/runtime-gate-labeler.yaml)
    grants these.
  - C(changed) is true when a label is added or removed; refreshing the check time alone is not a change.
"""

EXAMPLES = r"""
- name: Label node gpu-1 for the nvidia handler and remove every other label under the prefix
  gpurt.runtime_gate.node_labels:
    nodes:
      - name: gpu-1
        labels:
          runtime-gate.gpurt.io/nvidia: "true"
  run_once: true
  delegate_to: localhost

- name: Fence - remove one lost handler's label, keeping the others' check time
  gpurt.runtime_gate.node_labels:
    nodes:
      - name: gpu-1
        uid: 2f0c8a52-58c4-4f6e-9d1e-4f1b6f1b2a10
        labels: {}
    checked_at: "2026-12-05T07:40:00Z"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
nodes:
  description: What happened on each Node (in check mode, what would happen), in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    node:
      description: The Node's name.
      type: str
    action:
      description:
        - C(labeled) (labels added or removed), C(refreshed) (only the check time written), C(unchanged)
          (nothing sent), C(no node) (it does not exist), C(recreated) (not the object judged - not written),
          or C(failed) (the apiserver refused the write for this Node).
      type: str
    added:
      description: Labels under the prefix set to C("true").
      type: list
      elements: str
    removed:
      description: Labels under the prefix removed.
      type: list
      elements: str
    set_by:
      description: For each label removed that another field manager had set, who, as C(manager (Operation)).
      type: dict
    problem:
      description: Why a C(recreated) or C(failed) Node was not labeled; null otherwise.
      type: str
  sample: [{"node": "gpu-1", "action": "labeled", "added": ["runtime-gate.gpurt.io/nvidia"],
            "removed": ["runtime-gate.gpurt.io/kata"],
            "set_by": {"runtime-gate.gpurt.io/kata": ["kubectl-label (Update)"]}, "problem": null}]
problems:
  description:
    - One line per problem of a Node not labeled as proven (C(recreated), C(failed), or given in
      C(problems) of the entries); the module failed on them, after writing every other Node.
  returned: always
  type: list
  elements: str
stopped:
  description:
    - Why the run stopped before writing every Node (the module failed); the Nodes not written are in the message.
  returned: when it stopped
  type: str
gpurt_summary_lines:
  description:
    - The problems and why the run stopped, as the C(gpurt.runtime_gate.summary) callback prints them after the recap.
  returned: when a Node was not labeled as proven, or the run stopped
  type: list
  elements: str
  sample: ["labels: 1 judged Node(s) not labeled as proven (every other judged Node carries its proof)",
           "labels: gpu-7: re-created since it was judged (uid 2f0c8a52-58c4-4f6e-9d1e-4f1b6f1b2a10): not labeled"]
written:
  description: Nodes patched (in check mode, dry-run patches); the others got no request.
  returned: always
  type: int
  sample: 1
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
