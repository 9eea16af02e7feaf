# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/checks.md's check table, generated from the registry (tools/checks_reference.py writes it; a unit
test fails when the page's copy is stale)."""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks import registry


def checks_table():
    """docs/checks.md's check table, one row per registered check."""
    lines = ["| id | severity | condition | needs | remediation (role containerd_runtime) |", "|---|---|---|---|---|"]
    for check in registry.REGISTRY:
        needs = ", ".join(check.needs) if check.needs else "an inventory group of two or more checked nodes"
        lines.append("| `%s` | %s | %s | %s | %s |" % (check.id, check.severity_rule, check.condition, needs,
                                                       check.remediation))
    return "\n".join(lines)
