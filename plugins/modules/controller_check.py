#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
module: controller_check
short_description: Fail at play start when the controller cannot run this collection
description:
  - Checks the controller that runs C(ansible-playbook), once, before any node is touched, and fails with
    what it needs, instead of letting every node end up C(NOT CHECKED) for the same reason.
  - Needs ansible-core 2.16 or later (C(requires_ansible) in C(meta/runtime.yml)), hence Python 3.10 or later,
    and a TOML reader - the standard library's C(tomllib) (Python 3.11+) or the C(tomli) package
    (C(requirements.txt) installs it on Python 3.10).
  - Every playbook of the collection runs it first, with O(playbook), O(variables) and O(reports). Then it
    also puts a not-judged report in place of each report the run will write (before anything else, so
    that a run that fails before judging never leaves the previous run's report looking like its own),
    warns about each C(gpurt_*) variable that no playbook of the collection reads, naming the closest
    one that exists (C(gpurt_kubconfig) - did you mean C(gpurt_kubeconfig)?), fails on a variable the
    playbook no longer reads (naming its C(gpurt_*) name), returns the playbook's argument spec
    (C(playbooks/vars/argument_specs.yml)), and validates the values of the run's variables against it, as
    M(ansible.builtin.validate_argument_spec) does, failing with its message (C(Validation of arguments failed:)
    and one line per error); a playbook needs no task of its own for that.
  - Runs on the controller only (action plugin).
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options:
  playbook:
    description:
      - The playbook of the collection being run (C(audit), C(cluster_audit), C(crosscheck), C(remediate),
        C(validate_bootstrap), C(fleet_verdict)), for its argument spec and its retired variable names.
    type: str
  variables:
    description:
      - The names of the variables the run defines, for example
        C({{ q('ansible.builtin.varnames', '.+') }}). Names only; with O(playbook), their values are read
        from the host's variables and validated against RV(argument_spec).
    type: list
    elements: str
    default: []
  reports:
    description:
      - The reports the run will write, by kind (C(json), C(junit), C(metrics)) to a path on the
        controller; each is replaced now by a report whose C(outcome) is C(not_judged), with one run
        failure that says so (and one C(<error>) testcase in JUnit). Needs O(playbook).
    type: dict
    default: {}
extends_documentation_fragment:
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.attributes.action
  - gpurt.runtime_gate.attributes.controller_report
"""

EXAMPLES = r"""
- name: Check the controller before anything else
  gpurt.runtime_gate.controller_check:
  run_once: true

- name: Check the controller and the run's variables, and mark the previous reports as not judged
  gpurt.runtime_gate.controller_check:
    playbook: audit
    variables: "{{ q('ansible.builtin.varnames', '.+') }}"
    reports:
      json: "{{ gpurt_report_dir }}/audit.json"
      junit: "{{ gpurt_report_dir }}/audit.junit.xml"
  run_once: true
  register: gpurt_start
"""

RETURN = r"""
python_version:
  description: The controller's Python version.
  returned: always
  type: str
  sample: 3.10.13
python:
  description: The controller's Python interpreter.
  returned: always
  type: str
ansible_version:
  description: The controller's ansible-core version.
  returned: always
  type: str
toml_reader:
  description: The TOML parser found (C(tomllib) or C(tomli <version>)), or null.
  returned: always
  type: str
problems:
  description: Why the controller cannot run the collection; empty when it can.
  returned: always
  type: list
  elements: str
argument_spec:
  description: The options of O(playbook), as M(ansible.builtin.validate_argument_spec) takes them.
  returned: when O(playbook) is set
  type: dict
argument_errors:
  description: The values that fail RV(argument_spec), as M(ansible.builtin.validate_argument_spec) words them.
  returned: when the values fail the argument spec
  type: list
  elements: str
not_judged:
  description: The reports replaced by a not-judged report.
  returned: always
  type: list
  elements: str
ansible_facts:
  description: With C(delegate_facts) and O(playbook), that the playbook's host pattern matched hosts, as a fact of
    the delegated host (the playbook's "checked nothing" guard reads it).
  returned: when the task sets C(delegate_facts) and O(playbook) is set
  type: dict
  sample: {"gpurt_audit_matched": 3}
"""
