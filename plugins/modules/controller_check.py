#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

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
  - Runs on the controller only (action plugin); takes no options.
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
options: {}
extends_documentation_fragment:
  - gpurt.runtime_gate.attributes
  - gpurt.runtime_gate.attributes.action
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  action:
    support: full
"""

EXAMPLES = r"""
- name: Check the controller before anything else
  gpurt.runtime_gate.controller_check:
  run_once: true
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
"""
