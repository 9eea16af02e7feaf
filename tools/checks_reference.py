"""Regenerate docs/checks.md's check table from the check registry (plugins/plugin_utils/_checks/).

    python3 tools/checks_reference.py          rewrite the table between the checks:start / checks:end markers
    python3 tools/checks_reference.py --check  exit 1 when the table is stale
"""
import os

import doc_sections

doc_sections.import_collection()
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks import docs  # noqa: E402

DOC = os.path.join(doc_sections.REPO, "docs", "checks.md")


def main():
    doc_sections.update(DOC, "checks", docs.checks_table(), "python3 tools/checks_reference.py")


if __name__ == "__main__":
    main()
