# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of gpurt.runtime_gate: summarise a containerd config dump."""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered


def containerd_loaded(dump_text):
    """Summary of a `containerd config dump` text: runtimes, default runtime, imports, CDI."""
    try:
        return parse_gathered.summarize_dump(dump_text)
    except parse_gathered.DumpError as exc:
        raise AnsibleFilterError("containerd_loaded: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {
            "containerd_loaded": containerd_loaded,
        }
