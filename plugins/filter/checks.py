# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of gpurt.runtime_gate that read the check registry."""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks


def bootstrap_skip_checks(skip_checks):
    """The checks that judge what only a booted node has (binaries, CDI specs), then skip_checks."""
    if skip_checks is None:
        skip_checks = []
    if not isinstance(skip_checks, list):
        raise AnsibleFilterError("bootstrap_skip_checks: expected a list of check ids, got %s" % type(skip_checks).__name__)
    return checks.booted_node_checks() + list(skip_checks)


class FilterModule(object):
    def filters(self):
        return {
            "bootstrap_skip_checks": bootstrap_skip_checks,
        }
