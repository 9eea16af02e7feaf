# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fail at play start when the controller cannot run the collection."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys

from ansible.module_utils.ansible_release import __version__ as ansible_version
from ansible.plugins.action import ActionBase

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import controller

ARGUMENT_SPEC = {}  # no options


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        found = controller.facts(sys.version_info, sys.executable, ansible_version)
        result.update(changed=False, **found)
        if found["problems"]:
            result.update(failed=True, msg="\n".join(found["problems"]))
        return result
