# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the containerd_config_info module on the node, then parse its TOML on the controller."""

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _node_options as node_options
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _user_words as user_words
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._worker_action import WorkerAction


class ActionModule(WorkerAction):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        host = (task_vars or {}).get("inventory_hostname", "this host")
        try:
            module_args, from_vars = self._module_args(task_vars or {})
        except node_options.HostVarError as exc:
            result.update(failed=True, msg="%s: %s" % (host, exc))
            return result
        result.update(self._execute_module(
            module_name="gpurt.runtime_gate.containerd_config_info",
            module_args=module_args,
            task_vars=task_vars,
        ))
        if result.get("skipped"):
            return result
        if not result.get("failed"):
            try:
                parse_gathered.parse_gathered(result)
            except parse_gathered.DumpError as exc:
                result.update(failed=True, msg=str(exc))
        if not boolean(self._task.args.get("keep_texts", False), strict=False):
            parse_gathered.drop_texts(result)
        if result.get("failed"):
            msg = result.get("msg", "containerd_config_info failed")
            # The module names its option; the user set a variable.
            named = ["%s from %s" % (option, variable) for option, variable in from_vars if "'%s'" % option in msg]
            if from_vars:
                msg = user_words.in_user_words(msg, node_options.variable_names())
            result["msg"] = "%s: %s%s" % (host, msg, " (host variables: %s)" % ", ".join(named) if named else "")
        if boolean(self._task.args.get("packed", False), strict=False):
            result = parse_gathered.pack(result)
        return result

    def _module_args(self, task_vars):
        """The task's arguments, with host_vars=true those it leaves out taken from the host's
        variables (templated only when they are templates, unlike a task argument per host)."""
        args = dict(self._task.args)
        try:
            use_vars = boolean(args.get("host_vars", False), strict=True)
        except TypeError:
            raise node_options.HostVarError("host_vars must be a boolean, not %r" % (args.get("host_vars"),))
        from_vars = []
        if not use_vars:
            return args, from_vars
        taken = node_options.from_host_vars(args, task_vars, self._templar)
        args.update(taken)
        from_vars = [(option, variable) for option, variable in node_options.NODE_OPTIONS if option in taken]
        return args, from_vars
