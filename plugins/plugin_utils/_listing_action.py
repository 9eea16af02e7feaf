# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action plugin of a read-only list module (runtimeclass_info, node_info). When the task
would run the module on the controller with the controller's own Python (the implicit
localhost of a delegate_to: localhost task), it runs the module's listing in this process
instead: same code, same Python, same libraries, without starting a module and a second
interpreter. Otherwise (another host or interpreter, become, a task environment, async) it runs
the module as usual."""

import os
import sys

from ansible.module_utils.common.parameters import remove_values
from ansible.utils.display import Display

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _user_words as user_words
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._worker_action import WorkerAction

display = Display()


def same_interpreter(path, executable=None):
    """Whether path runs this Python: the same file in the same directory (a venv is found
    from the directory its python is started from, so a symlink elsewhere is another one)."""
    executable = executable or sys.executable
    if not path or not executable or not os.path.isabs(path):
        return False
    if os.path.dirname(os.path.normpath(path)) != os.path.dirname(os.path.normpath(executable)):
        return False
    try:
        return os.path.samefile(path, executable)
    except OSError:
        return False


class ListingAction(WorkerAction):
    """Subclasses set NAME, the module's name in module_utils/_k8s/listing.LISTINGS. (that module is imported
    only when the listing runs here: loading this class in the main process must not import the
    kubernetes client there.)"""

    NAME = None
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = self._list(tmp, task_vars)
        # Run by a playbook of the collection, the advice names its variables (set gpurt_kubeconfig).
        names = user_words.k8s_names(task_vars)
        if result.get("failed") and result.get("msg") and names:
            result["msg"] = user_words.in_user_words(result["msg"], names)
        return result

    def _list(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ListingAction, self).run(tmp, task_vars)
        module = "gpurt.runtime_gate." + self.NAME
        why_not = self._why_not_in_process(task_vars)
        if why_not:
            display.vvv("%s: running the module (%s)" % (module, why_not))
            # As ansible.builtin.normal runs a module, async included.
            wrap_async = self._task.async_val and not self._connection.has_native_async
            result.update(self._execute_module(module_name=module, module_args=self._task.args, task_vars=task_vars,
                                               wrap_async=wrap_async))
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        display.vvv("%s: listing in the controller process, no module started" % module)
        from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import listing as k8s_listing
        spec, listing = k8s_listing.LISTINGS[self.NAME]
        validation, params = self.validate_argument_spec(argument_spec=spec)
        warnings = []
        try:
            listed = listing(params, warnings.append)
        except k8s_listing.ListFailed as exc:
            listed = dict(exc.result, failed=True, msg=exc.msg)
        if warnings:
            listed["warnings"] = warnings
        # As AnsibleModule does: no value of a no_log option (a token) in what is returned.
        result.update(remove_values(listed, validation._no_log_values))
        return result

    def _why_not_in_process(self, task_vars):
        """Why the module must run (None when the listing can run here)."""
        if getattr(self._connection, "transport", None) != "local":
            return "not a local connection"
        if self._play_context.become:
            return "become"
        if self._task.async_val:
            return "async"
        environment = {}
        self._compute_environment_string(environment)
        if environment:
            return "the task sets environment"
        host_vars = task_vars
        if self._task.delegate_to:
            host_vars = (task_vars.get("ansible_delegated_vars") or {}).get(self._task.delegate_to) or {}
        interpreter = host_vars.get("ansible_python_interpreter")
        try:
            interpreter = self._templar.template(interpreter) if interpreter else None
        except Exception:  # anything unusual: let the module's own interpreter handling decide
            interpreter = None
        if not same_interpreter(interpreter):
            return "ansible_python_interpreter %s is not the controller's %s" % (interpreter or "(discovered)", sys.executable)
        return None
