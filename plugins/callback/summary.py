# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: summary
type: aggregate
short_description: Print the runtime gate verdict as plain lines at the end of the run
description:
  - Collects the summary lines that M(gpurt.runtime_gate.audit_report) and
    M(gpurt.runtime_gate.runtime_check) return and prints them, one per line and unindented,
    after the play recap, so that scripts and CI logs can grep for lines such as
    C(MISSING=<handler>) and C(OK).
  - The lines are built by the collection's one formatter of findings; any control character in
    them (a handler with a newline, an ANSI escape) is printed escaped, so no value can print a
    line of its own, such as a bare C(OK).
  - Enable it with C(callbacks_enabled = gpurt.runtime_gate.summary) in C(ansible.cfg) or
    E(ANSIBLE_CALLBACKS_ENABLED).
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
requirements:
  - enabled in callbacks_enabled
"""

from ansible.plugins.callback import CallbackBase

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils.findings import one_line

RESULT_KEY = "gpurt_summary_lines"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpurt.runtime_gate.summary"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self._blocks = []

    def _collect(self, result):
        lines = result._result.get(RESULT_KEY)
        if isinstance(lines, list) and lines and lines not in self._blocks:
            self._blocks.append(lines)

    def v2_runner_on_ok(self, result):
        self._collect(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._collect(result)

    def v2_playbook_on_stats(self, stats):
        if not self._blocks:
            return
        self._display.display("RUNTIME GATE " + "*" * 66)
        for lines in self._blocks:
            for line in lines:
                self._display.display(one_line(line))
