# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The base class of the action plugins that work in the controller process and run no module. It transfers no
file, supports check mode but not async, and checks the task's arguments against the plugin's own spec."""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._worker_action import WorkerAction


class ControllerAction(WorkerAction):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def _validated(self, tmp, task_vars, argument_spec, **constraints):
        """(ActionBase's result for this task, the arguments validated against argument_spec); constraints as
        validate_argument_spec takes them (mutually_exclusive, required_one_of...)."""
        result = super(ControllerAction, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=argument_spec, **constraints)
        return result, args
