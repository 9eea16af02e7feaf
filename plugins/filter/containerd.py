# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of gpurt.runtime_gate: plan containerd runtime files, verify what containerd loaded."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import loaded_config
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import remediation


def containerd_runtime_plan(existing_text, default_text, containerd_major, runtimes, dropin_dir, **options):
    try:
        return remediation.plan(existing_text, default_text, int(containerd_major), runtimes, dropin_dir, **options)
    except (remediation.PlanError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("containerd_runtime_plan: %s" % exc)


def containerd_runtime_verify(gathered, expected_runtimes, dropin_paths, import_pattern, require_binaries=False):
    return remediation.verify(gathered, expected_runtimes, dropin_paths, import_pattern, bool(require_binaries))


def containerd_without_imports(text):
    try:
        return remediation.without_imports(text)
    except remediation.PlanError as exc:
        raise AnsibleFilterError("containerd_without_imports: %s" % exc)


def containerd_loaded(dump_text):
    """Summary of a `containerd config dump` text: runtimes, default runtime, imports, CDI."""
    try:
        return loaded_config.summarize_dump(dump_text)
    except loaded_config.DumpError as exc:
        raise AnsibleFilterError("containerd_loaded: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {
            "containerd_runtime_plan": containerd_runtime_plan,
            "containerd_runtime_verify": containerd_runtime_verify,
            "containerd_loaded": containerd_loaded,
            "containerd_without_imports": containerd_without_imports,
        }
