# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The judging options of the plugins that judge every host of a play (plugin_utils/_checks JUDGE_SPEC)."""


class ModuleDocFragment(object):
    # The judging options of the plugins that judge every host of a play (plugin_utils/_checks JUDGE_SPEC).
    DOCUMENTATION = r"""
options:
  pod_requests:
    description:
      - The pod request to test RuntimeClass overhead with, for example a C(cpu) request of C(900m).
    type: dict
  kubelet_cgroup_driver:
    description:
      - The kubelet cgroup driver for every host; the host variable C(gpurt_kubelet_cgroup_driver) wins.
    type: str
    choices: [systemd, cgroupfs]
  skip_checks:
    description:
      - Check ids not to run.
    type: list
    elements: str
    default: []
  fail_on:
    description:
      - The lowest severity of a finding that fails a node. C(none) fails no node for its findings; a node
        that could not be checked (or whose remediation was refused or failed) fails all the same.
    type: str
    default: error
    choices: [error, warning, info, none]
"""
