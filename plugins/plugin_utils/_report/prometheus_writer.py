# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report as a Prometheus textfile (node_exporter's textfile collector)."""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.model import NOT_CHECKED, STATUSES


def _label(value):
    return checks.one_line(value).replace("\\", "\\\\").replace('"', '\\"')


def _sample(metric, labels, value):
    body = ",".join('%s="%s"' % (key, _label(val)) for key, val in labels)
    return "%s{%s} %s" % (metric, body, value) if body else "%s %s" % (metric, value)


def _containerd_release(version):
    """A node's containerd version as one label value: the gathered `containerd --version` (2.1.9)
    and a Node's containerRuntimeVersion (containerd://2.1.9) alike."""
    version = version or ""
    return version[len("containerd://"):] if version.startswith("containerd://") else version


def to_prometheus(report):
    """Prometheus text format: per node its status, whether it fails, its containerd version, its
    finding counts by check and severity (every severity a check can have, zeros included, so
    alerts see the series drop to 0), and which checks could not run; plus the run's verdict."""
    prefix = "gpurt_runtime_gate_"
    out = []

    def family(name, kind, help_text, samples):
        out.append("# HELP %s%s %s" % (prefix, name, help_text))
        out.append("# TYPE %s%s %s" % (prefix, name, kind))
        out.extend(_sample(prefix + name, labels, value) for labels, value in samples)

    nodes = [report["nodes"][n] for n in sorted(report["nodes"])]
    family("info", "gauge", "The collection version and the run's settings.",
           [((("version", report.get("collection_version") or ""), ("mode", report["mode"]),
              ("fail_on", report["fail_on"])), 1)])
    family("run_passed", "gauge", "1 when the run passed: nodes checked and none failing.",
           [((), 1 if report["summary"].get("passed") else 0)])
    family("nodes", "gauge", "Nodes of the run by status.",
           [((("status", s.lower().replace(" ", "_")),), sum(1 for e in nodes if e["status"] == s)) for s in STATUSES])
    family("node_status", "gauge", "1 for the node's status (ok, findings, not_checked), 0 for the others.",
           [((("node", e["node"]), ("status", s.lower().replace(" ", "_"))), 1 if e["status"] == s else 0)
            for e in nodes for s in STATUSES])
    family("node_failing", "gauge", "1 when the node fails the gate at fail_on.",
           [((("node", e["node"]),), 1 if e["failing"] else 0) for e in nodes])
    family("node_info", "gauge", "1 per node, labelled with its containerd version (empty when unknown).",
           [((("node", e["node"]), ("containerd_version", _containerd_release(e.get("containerd_version")))), 1)
            for e in nodes])
    samples = []
    for entry in nodes:
        for check in checks.REGISTRY:
            for severity in check.severities:
                count = sum(1 for f in entry["findings"] if f["check"] == check.id and f["severity"] == severity)
                if entry["status"] == NOT_CHECKED or (check.id not in entry["checks_run"] and not count):
                    continue
                samples.append(((("node", entry["node"]), ("check", check.id), ("severity", severity)), count))
    family("findings", "gauge", "Findings of a node by check and severity, for the checks that ran.", samples)
    family("check_skipped", "gauge", "1 for a check that could not run on the node (or was skipped).",
           [((("node", e["node"]), ("check", c)), 1) for e in nodes for c in sorted(e.get("checks_skipped", {}))])
    return "\n".join(out) + "\n"
