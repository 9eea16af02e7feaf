# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the containerd_config_info module on the node, then parse its TOML on the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import loaded_config


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        result.update(self._execute_module(
            module_name="gpurt.runtime_gate.containerd_config_info",
            module_args=self._task.args,
            task_vars=task_vars,
        ))
        if result.get("skipped"):
            return result
        if not result.get("failed"):
            try:
                loaded_config.parse_gathered(result)
            except loaded_config.DumpError as exc:
                result.update(failed=True, msg=str(exc))
        if not boolean(self._task.args.get("keep_texts", False), strict=False):
            loaded_config.drop_texts(result)
        if result.get("failed"):
            host = (task_vars or {}).get("inventory_hostname", "this host")
            result["msg"] = "%s: %s" % (host, result.get("msg", "containerd_config_info failed"))
        return result
