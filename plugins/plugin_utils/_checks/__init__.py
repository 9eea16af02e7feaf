# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's checks (controller only): pure functions from what a node reported (and the
cluster's RuntimeClasses) to findings, each with node, check id, severity, evidence and a fix.

Every check judges the *loaded* config (the dump); the files on disk only explain why something is
missing from it, and the running view (crictl info) says what runs now. A check is declared once,
next to its function, in its family's module; importing this package registers the families in a
fixed order (docs/checks.md's table's and the Prometheus series' order). What the actions use is named
here; see docs/architecture.md for where to add a check.
"""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks import registry
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.model import (  # noqa: F401
    FAIL_ON_CHOICES, SEVERITIES, SHOWN_NODES, NotRun, finding, finding_line, missing_lines, names_text,
    not_checked_line, on_node, on_nodes, one_line, reaches, sort_findings)
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.registry import (  # noqa: F401
    BY_ID, CHECKS, JUDGE_SPEC, NEEDS, REGISTRY, Check, booted_node_checks, check_ids, validate_skip)
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.context import (  # noqa: F401
    Context, applicable_runtimeclasses, selector_matches)
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.kubelet import kubelet_cgroup_driver  # noqa: F401
# The families, in the registry's order.
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks import handlers  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks import daemon  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks import files  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks import runtimes  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks import cluster  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.cluster import check_drift  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.files import (  # noqa: F401
    file_readings, is_backup_name)
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.handlers import (  # noqa: F401
    KNOWN_HANDLERS, check_missing_handler, suggestion)
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.runtimes import injects_cdi_itself  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.runner import (  # noqa: F401
    check_node, check_reported_node, run_checks)
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.docs import checks_table  # noqa: F401
