# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The attributes every module documents (check mode, diff mode, platform); each module states its own support level."""


class ModuleDocFragment(object):
    # Descriptions of the attributes; each module states its own support level.
    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
"""

    # For modules that run as action plugins on the controller.
    ACTION = r"""
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
"""

    # Action plugins that read, judge and report on the controller: full check mode, nothing to diff.
    CONTROLLER_REPORT = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  action:
    support: full
"""

    # The list modules (runtimeclass_info, node_info), with ACTION: plugin_utils/_listing_action.
    LISTING = r"""
attributes:
  action:
    support: full
    details:
      - When the task runs on the controller with the controller's own Python (the implicit
        C(localhost), for example with C(delegate_to=localhost)) and without become, a task
        C(environment) or C(async), the listing runs in the controller process and no module is
        started. Otherwise the module runs as usual. Both return the same result.
"""

    # The cluster modules: one module_defaults entry sets the connection for all of them.
    K8S_GROUP = r"""
attributes:
  action_group:
    description: Use C(group/gpurt.runtime_gate.k8s) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - gpurt.runtime_gate.k8s
"""
