"""Regenerate docs/monitoring.md's metrics table from what the audit's writer prints.

    python3 tools/metrics_reference.py          rewrite the table between the metrics:start / metrics:end markers
    python3 tools/metrics_reference.py --check  exit 1 when the table is stale

The table comes from the real writer (report.to_prometheus) run on a report that has a node of each
status, a finding and a skipped check, so each family shows its labels.
"""
import os
import re

import doc_sections

doc_sections.import_collection()
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as findings  # noqa: E402
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _report as report  # noqa: E402

DOC = os.path.join(doc_sections.REPO, "docs", "monitoring.md")
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"')


def sample_report():
    """A report with a node of each audit status, a finding and a skipped check."""
    check = findings.REGISTRY[0]
    entries = [
        report.node_entry("ok", [], checks_run=[check.id], node_info={"containerd_version": "2.1.9"}),
        report.node_entry("bad", [findings.finding("bad", check.id, check.severities[0], "s", "m", "f")],
                          checks_run=[check.id], checks_skipped={"node_drift": "not in a group"},
                          node_info={"containerd_version": "1.7.24"}),
        report.node_entry("down", not_checked_reason="unreachable"),
    ]
    return report.build(entries, runtimeclasses=[{"name": "nvidia", "handler": "nvidia"}])


def families(text):
    """[(name, type, help, [label names])] in the order the writer prints them."""
    out = []
    by_name = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, help_text = line[len("# HELP "):].split(" ", 1)
            by_name[name] = {"name": name, "help": help_text, "type": None, "labels": []}
            out.append(by_name[name])
        elif line.startswith("# TYPE "):
            name, kind = line[len("# TYPE "):].split(" ", 1)
            by_name[name]["type"] = kind
        elif line and not line.startswith("#"):
            match = _SAMPLE.match(line)
            if not match or match.group(1) not in by_name:
                raise ValueError("not a sample of a declared family: %r" % line)
            labels = by_name[match.group(1)]["labels"]
            for label in _LABEL.findall(match.group(2) or ""):
                if label not in labels:
                    labels.append(label)
    return [(f["name"], f["type"], f["help"], f["labels"]) for f in out]


def table():
    rows = ["| metric | type | labels | meaning |", "|---|---|---|---|"]
    for name, kind, help_text, labels in families(report.to_prometheus(sample_report())):
        rows.append("| `%s` | %s | %s | %s |" % (name, kind, ", ".join("`%s`" % l for l in labels) or "none",
                                                 help_text.replace("|", "\\|")))
    return "\n".join(rows)


def main():
    doc_sections.update(DOC, "metrics", table(), "python3 tools/metrics_reference.py")


if __name__ == "__main__":
    main()
