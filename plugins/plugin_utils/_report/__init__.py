# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit report (controller only): one model (model.py: per-node entries, the run's summary,
coverage) and its writers beside it: text (summary lines), JSON, JUnit XML and a Prometheus
textfile, and files.py, which writes them whole or not at all. What the actions use is named here."""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.model import (  # noqa: F401
    COLLECTION_ROOT, FAILED, FAILED_OUTCOME, FINDINGS, MODE_STATUSES, NOT_CHECKED, NOT_JUDGED, NOT_JUDGED_REASON,
    NOT_PROCESSED, NOT_VALIDATED, OK, OTHER_STATUSES, PASSED, REFUSED, REPORT_FORMAT, STATUSES, add_findings, build,
    collection_version, coverage, coverage_warnings, gate_lines, names_text, node_entry, not_judged)
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.text_writer import (  # noqa: F401
    distinct_lines, node_line, readable_lines, readable_node_line, result_of, summary_lines, totals_line)
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.json_writer import to_json  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.junit_writer import to_junit  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.prometheus_writer import to_prometheus  # noqa: F401
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.files import (  # noqa: F401
    RENDERERS, WriteError, write, write_all)
