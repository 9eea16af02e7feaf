# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fail at play start when the controller cannot run the collection; mark the previous run's
reports as not judged; warn about gpurt_* variables no playbook reads; validate the run's values
against the playbook's argument spec, as ansible.builtin.validate_argument_spec does (one task, not two)."""

import sys
from collections.abc import Mapping

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.module_utils.ansible_release import __version__ as ansible_version
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

# Imported here, not in the methods: the strategy loads this plugin in ansible-playbook's own process, so the
# task's worker (and the judge's, later) inherit these modules instead of each importing them again.
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _audit as audit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _controller_requirements as controller_requirements
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _input_types as input_types
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _playbook_inputs as playbook_inputs
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _report as report
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._controller_action import ControllerAction

ARGUMENT_SPEC = dict(
    playbook=dict(type="str"),
    variables=dict(type="list", elements="str", default=[]),
    reports=dict(type="dict", default={}),
)
# The report mode of each playbook (report.build's mode).
REPORT_MODES = {"audit": "hosts", "cluster_audit": "cluster", "crosscheck": "dump", "validate_bootstrap": "bootstrap",
                "remediate": "remediation", "fleet_verdict": "hosts"}


def first_line(exc):
    """The cause of a template error without the origin snippet ansible-core 2.19 appends."""
    text = getattr(exc, "message", None) or str(exc)
    return str(text).strip().splitlines()[0] if str(text).strip() else type(exc).__name__


def _still_templates(raw, values):
    """'name = value' of each variable whose value is its own template text after templating (raw: the host's
    untemplated variables)."""
    out = []
    for name, value in sorted(values.items()):
        written = raw.get(name) if isinstance(raw, Mapping) else None
        if isinstance(value, str) and value == written and any(mark in value for mark in ("{{", "{%")):
            out.append("%s = %r keeps a template (an undefined name in it)" % (name, value))
    return out


class ActionModule(ControllerAction):
    def run(self, tmp=None, task_vars=None):
        result, args = self._validated(tmp, task_vars, ARGUMENT_SPEC)
        if args["reports"] and args["playbook"] not in REPORT_MODES:
            raise AnsibleActionFail("reports needs playbook, one of %s" % ", ".join(sorted(REPORT_MODES)))
        # First of all, so that a run that stops here already leaves no previous report as its own.
        result["not_judged"] = self._mark_reports(args)
        found = controller_requirements.facts(sys.version_info, sys.executable, ansible_version)
        found["problems"] = found["problems"] + self._package_problems(args["playbook"], task_vars or {})
        result.update(changed=False, **found)
        if found["problems"]:
            result.update(failed=True, msg="\n".join(found["problems"]))
            return result
        if args["playbook"] and self._task.delegate_facts:
            result["ansible_facts"] = {"gpurt_%s_matched" % args["playbook"]: len(
                (task_vars or {}).get("ansible_play_hosts_all") or [])}
        if args["playbook"]:
            try:
                warnings, errors, spec = playbook_inputs.check(args["playbook"], args["variables"])
            except playbook_inputs.SpecError as exc:
                raise AnsibleActionFail(str(exc))
            result["argument_spec"] = spec
            errors = errors + self._untemplatable(spec, task_vars or {})
            if warnings:
                result["warnings"] = warnings
            spec = playbook_inputs.validation_spec(playbook_inputs.load(), args["playbook"])
            errors = errors + self._type_errors(spec, task_vars or {})
            if errors:
                result.update(failed=True, msg="\n".join(errors))
            else:
                # only the options the run sets are in the spec (playbook_inputs.check): none is required
                result.update(self._spec_errors(result["argument_spec"], task_vars or {}))
        return result

    def _spec_errors(self, spec, task_vars):
        """What ansible.builtin.validate_argument_spec returns for the spec and the host's variables when they
        fail it, with its message; {} when they pass. Here rather than in a task of its own: a task is a
        worker fork and a result for the main process, about 25 ms of a small run."""
        values = self._templar.template(dict((name, task_vars[name]) for name in spec if name in task_vars))
        found = ArgumentSpecValidator(spec).validate(values, validate_role_argument_spec=True)
        if not found.error_messages:
            return {}
        return dict(failed=True, msg="Validation of arguments failed:\n%s" % "\n".join(found.error_messages),
                    argument_errors=found.error_messages)

    def _package_problems(self, playbook, task_vars):
        """Every controller package the playbook will import, checked once here rather than failing
        each node when the first import happens (tomlkit for remediate, kubernetes for a cluster)."""
        if not playbook:
            return []
        values = {}
        for name in controller_requirements.PACKAGE_SWITCHES:
            if name in task_vars:
                try:
                    values[name] = self._templar.template(task_vars[name])
                except AnsibleError:
                    values[name] = "unresolved"  # reported by name by _untemplatable; assume it is set
        needed = controller_requirements.needed_packages(playbook, values)
        return controller_requirements.missing_packages(needed, controller_requirements.present, sys.executable)

    def _untemplatable(self, spec, task_vars):
        """An error naming each variable the playbook reads (by name or alias) whose value cannot be
        templated for this host, with the cause: validate_argument_spec would stop on the first one
        with a bare template error. Only the playbook's own variables are templated, so an inventory
        variable meant for other hosts (one built from inventory_dir, undefined for the implicit
        localhost) does not stop a playbook that never reads it."""
        errors = []
        for name, option in sorted(spec.items()):
            for variable in [name] + list(option.get("aliases") or []):
                if variable not in task_vars:
                    continue
                try:
                    self._templar.template(task_vars[variable])
                except AnsibleError as exc:
                    host = task_vars.get("inventory_hostname", "localhost")
                    errors.append("%s cannot be resolved for %s: %s (set it to a value this host can resolve, "
                                  "or leave it unset here)" % (variable, host, first_line(exc)))
        return errors

    @staticmethod
    def _type_errors(spec, task_vars):
        """Every host's value of each variable the playbook's spec declares, strictly typed
        (_input_types): a variable set on one node only is checked too, not just the first host's."""
        hostvars = task_vars.get("hostvars", {})
        errors = []
        for host in task_vars.get("ansible_play_hosts_all") or []:
            try:
                raw = hostvars.raw_get(host) if host in hostvars else None
                values = audit.host_vars(hostvars, host, sorted(spec), raw=raw)
            except Exception as exc:  # a variable that does not template: validate_argument_spec names it
                errors.append("host %s: a gpurt_* variable cannot be resolved: %s" % (host, str(exc).splitlines()[0]))
                continue
            unresolved = _still_templates(raw, values)
            if unresolved:
                # ansible-core < 2.19 leaves a template with an undefined name as it was, without an error
                errors.append("host %s: a gpurt_* variable cannot be resolved: %s" % (host, "; ".join(unresolved)))
                continue
            for message in input_types.type_errors(spec, values, host):
                if message not in errors:
                    errors.append(message)
        return errors

    @staticmethod
    def _mark_reports(args):
        """Put a not-judged report in place of each report this run will write."""
        paths = dict((kind, path) for kind, path in args["reports"].items() if path)
        if not paths:
            return []
        unknown = sorted(set(paths) - set(report.RENDERERS))
        if unknown:
            raise AnsibleActionFail("reports takes %s, not %s" % (", ".join(sorted(report.RENDERERS)), ", ".join(unknown)))
        try:
            return report.write_all(report.not_judged(REPORT_MODES[args["playbook"]]), paths)
        except report.WriteError as exc:
            raise AnsibleActionFail(str(exc))
