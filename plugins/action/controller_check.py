# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fail at play start when the controller cannot run the collection; mark the previous run's
reports as not judged; warn about gpurt_* variables no playbook reads; hand the playbook's
argument spec to ansible.builtin.validate_argument_spec."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys

from ansible.errors import AnsibleActionFail
from ansible.module_utils.ansible_release import __version__ as ansible_version
from ansible.plugins.action import ActionBase

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import controller

ARGUMENT_SPEC = dict(
    playbook=dict(type="str"),
    variables=dict(type="list", elements="str", default=[]),
    reports=dict(type="dict", default={}),
)
# The report mode of each playbook (report.build's mode).
REPORT_MODES = {"audit": "hosts", "cluster_audit": "cluster", "crosscheck": "dump", "validate_bootstrap": "bootstrap",
                "remediate": "remediation"}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if args["reports"] and args["playbook"] not in REPORT_MODES:
            raise AnsibleActionFail("reports needs playbook, one of %s" % ", ".join(sorted(REPORT_MODES)))
        # First of all, so that a run that stops here already leaves no previous report as its own.
        result["not_judged"] = self._mark_reports(args)
        found = controller.facts(sys.version_info, sys.executable, ansible_version)
        result.update(changed=False, **found)
        if found["problems"]:
            result.update(failed=True, msg="\n".join(found["problems"]))
            return result
        if args["playbook"]:
            from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import inputs
            try:
                warnings, errors, spec = inputs.check(args["playbook"], args["variables"])
            except inputs.SpecError as exc:
                raise AnsibleActionFail(str(exc))
            result["argument_spec"] = spec
            if warnings:
                result["warnings"] = warnings
            if errors:
                result.update(failed=True, msg="\n".join(errors))
        return result

    @staticmethod
    def _mark_reports(args):
        """Put a not-judged report in place of each report this run will write."""
        paths = dict((kind, path) for kind, path in args["reports"].items() if path)
        if not paths:
            return []
        from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import report
        unknown = sorted(set(paths) - set(report.RENDERERS))
        if unknown:
            raise AnsibleActionFail("reports takes %s, not %s" % (", ".join(sorted(report.RENDERERS)), ", ".join(unknown)))
        try:
            return report.write_all(report.not_judged(REPORT_MODES[args["playbook"]]), paths)
        except report.WriteError as exc:
            raise AnsibleActionFail(str(exc))
