# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sliced audits (AWX job slicing): what each audit run publishes, and the merge of the slices into the
fleet verdict (playbooks/fleet_verdict.yml) that one run over all their hosts would give. Pure: no
Ansible, no I/O.

A slice judges the per-node checks alone; the fleet-wide verdicts (node_drift across a group, the
coverage of the cluster's Nodes, each RuntimeClass's coverage) it leaves "judged at merge", and it writes
no verified label (two hosts of two slices may name one Node): the merge hands the fleet verdict the Nodes
as the slices listed them, to label as one run would. The merge refuses, naming them, a slice missing, a
slice given twice, a host in two slices, and slices that listed different RuntimeClasses or Nodes or
judged with different settings: the fleet verdict is then unknown."""

import json

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _audit as audit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _report as report
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._playbook_inputs import ARTIFACT_PREFIX
JUDGED_AT_MERGE = "judged at merge (gpurt.runtime_gate.fleet_verdict), from every slice"
FLEET_CHECKS = ("node_drift", "coverage", "runtimeclass_coverage")
SLICE_NOTE = ("this run is one slice of a sliced audit: node_drift, the coverage of the cluster's Nodes and of "
              "each RuntimeClass are judged at merge (gpurt.runtime_gate.fleet_verdict), which also writes the "
              "verified labels (gpurt_label_nodes)")
# What the merged report carries of the slices' own publication (not part of the verdict).
SLICE_KEYS = ("slice", "slices")
# The keys of a listed Node that the merge reads: its name, what selects it, what its kubelet reports, and
# what pins a label write to the object judged (plugin_utils/_node_labels.plan).
_NODE_KEYS = ("name", "labels", "taints", "runtime_handlers", "uid", "labels_checked_at", "verified_label_managers")
_CLASS_KEYS = ("name", "handler", "node_selector", "tolerations", "overhead", "uid")


class MergeError(ValueError):
    """The slices cannot make one fleet verdict; .problems names each reason."""

    def __init__(self, problems):
        self.problems = list(problems)
        super(MergeError, self).__init__("; ".join(self.problems))


def artifact_key(slice_id):
    return ARTIFACT_PREFIX + str(slice_id)


def slice_id(sliced, given, job_id):
    """The run's id in its artifact: gpurt_slice_id, else AWX's awx_job_id, else "run" for a run that is
    not a slice. A slice needs one of them: its artifact must not overwrite another slice's."""
    if given not in (None, ""):
        return str(given)
    if job_id not in (None, ""):
        return str(job_id)
    if sliced:
        raise ValueError("gpurt_slice=true needs an id unique to the slice: AWX sets awx_job_id; elsewhere set "
                         "gpurt_slice_id")
    return "run"


def compact_nodes(nodes):
    """The listed Nodes as the merge reads them (None: not listed)."""
    if nodes is None:
        return None
    return [dict((key, node.get(key)) for key in _NODE_KEYS) for node in nodes]


def publication(sid, sliced, hosts, groups, inventory_nodes, runtimeclasses, nodes, settings):
    """The "slice" section of a run's report: what the merge needs besides the per-node entries.
    hosts: {host: {node_name, labels}} (labels: gpurt_node_labels, else None); groups: {group: [hosts of
    this run]} for node_drift; inventory_nodes: Node names of the inventory's hosts outside the run (those
    of the Nodes the run did not cover suffice);
    settings: fail_on, skip_checks, allow_no_runtimeclasses."""
    return {"id": sid, "sliced": bool(sliced), "hosts": hosts, "groups": groups,
            "inventory_nodes": sorted(inventory_nodes or []),
            "runtimeclasses": [dict((k, rc.get(k)) for k in _CLASS_KEYS) for rc in runtimeclasses or []],
            "nodes": compact_nodes(nodes), "settings": settings}


def _class_set(section):
    return sorted(json.dumps(rc, sort_keys=True) for rc in section["runtimeclasses"])


def _valid(artifact, where):
    if not isinstance(artifact, dict):
        return "%s is not an audit report but %s" % (where, type(artifact).__name__)
    section = artifact.get("slice")
    if artifact.get("tool") != "gpurt.runtime_gate" or artifact.get("mode") != "hosts" or not isinstance(section, dict):
        return "%s is not the report of a gpurt.runtime_gate audit run (no slice section: an audit.yml of this " \
               "collection version or later writes one)" % where
    for key, kind in (("id", str), ("hosts", dict), ("groups", dict), ("runtimeclasses", list), ("settings", dict)):
        if not isinstance(section.get(key), kind):
            return "%s: its slice section has no %s" % (where, key)
    if not isinstance(artifact.get("nodes"), dict):
        return "%s has no nodes" % where
    return None


def _differences(sections, key, what):
    """A problem when the slices do not agree on sections[...][key] (compared as JSON)."""
    seen = {}
    for section in sections:
        seen.setdefault(json.dumps(section[key], sort_keys=True), []).append(section["id"])
    if len(seen) < 2:
        return []
    return ["the slices disagree about %s: %s" % (what, "; ".join(
        "slice(s) %s: %s" % (", ".join(ids), value) for value, ids in sorted(seen.items(), key=lambda i: i[1])))]


def _set_differences(sets, what, name_of):
    """A problem when the slices' sets ({slice id: set}) differ, naming what each slice lacks."""
    union = set()
    for items in sets.values():
        union |= items
    parts = []
    for sid in sorted(sets):
        lacks = sorted(name_of(item) for item in union - sets[sid])
        if lacks:
            parts.append("slice %s lacks %s" % (sid, ", ".join("%s (as another slice listed it)" % n for n in lacks)))
    if not parts:
        return []
    return ["the slices listed different %s sets, so they did not see one cluster (or it changed between them): "
            "%s; run the sliced audit again" % (what, "; ".join(parts))]


def _class_differences(sections):
    return _set_differences(dict((s["id"], set(_class_set(s))) for s in sections), "RuntimeClass",
                            lambda item: json.loads(item)["name"])


def _node_differences(sections):
    """The slices that listed the cluster's Nodes must have listed the same Node names."""
    return _set_differences(dict((s["id"], set(n["name"] for n in s["nodes"])) for s in sections
                                 if s.get("nodes") is not None), "Node", lambda name: name)


def judged_at_merge(entries, fail_on):
    """A slice's entries with node_drift skipped as judged at merge: one slice's view of a group would be
    wrong (each checked node; a node not checked keeps its reason). Returns entries, changed in place."""
    for entry in entries:
        if entry["status"] != report.NOT_CHECKED:
            report.add_findings(entry, [], fail_on, (), {"node_drift": JUDGED_AT_MERGE})
    return entries


def _fresh_entry(entry, fail_on):
    """A node's entry without its node_drift verdict (judged again across the fleet's groups)."""
    kept = dict(entry)
    kept["findings"] = [f for f in entry["findings"] if f["check"] != "node_drift"]
    kept["checks_run"] = [c for c in entry["checks_run"] if c != "node_drift"]
    kept["checks_skipped"] = dict((c, why) for c, why in (entry.get("checks_skipped") or {}).items()
                                  if c != "node_drift")
    return report.add_findings(kept, [], fail_on)


def merge(artifacts, expected):
    """The fleet verdict's parts from the slices' reports: {entries, coverage, runtimeclass_coverage,
    runtimeclasses, nodes, settings, ids}. artifacts: [(where, report)] (where names it: a file, an
    artifact key); expected: how many slices the sliced job ran. MergeError names every problem."""
    problems = []
    sections = []
    for where, artifact in artifacts:
        problem = _valid(artifact, where)
        if problem:
            problems.append(problem)
        else:
            sections.append((artifact, dict(artifact["slice"], where=where)))
    ids = [section["id"] for _artifact, section in sections]
    twice = sorted(set(i for i in ids if ids.count(i) > 1))
    if twice:
        problems.append("slice(s) given twice: %s" % ", ".join(twice))
    owners = {}
    for _artifact, section in sections:
        for host in section["hosts"]:
            owners.setdefault(host, []).append(section["id"])
    shared = sorted(h for h, owned in owners.items() if len(owned) > 1)
    if shared and not twice:
        problems.append("host(s) in more than one slice: %s" % report.names_text(
            ["%s (slices %s)" % (h, ", ".join(owners[h])) for h in shared]))
    only = [section for _artifact, section in sections]
    if only:
        problems.extend(_class_differences(only))
        problems.extend(_node_differences(only))
        problems.extend(_differences(only, "settings", "the judging settings (gpurt_fail_on, gpurt_skip_checks, "
                                     "gpurt_allow_no_runtimeclasses)"))
        listed = [s for s in only if s.get("nodes") is not None]
        if listed and len(listed) != len(only):
            problems.append("slice(s) %s listed the cluster's Nodes and slice(s) %s did not" % (
                ", ".join(s["id"] for s in listed), ", ".join(s["id"] for s in only if s.get("nodes") is None)))
    if len(set(ids)) != expected:
        problems.insert(0, _count_problem(expected, sorted(set(ids)), only))
    if problems:
        raise MergeError(problems)
    return _merged(sections)


def _count_problem(expected, ids, sections):
    text = "expected %d slice(s), got %d%s" % (expected, len(ids), " (%s)" % ", ".join(ids) if ids else "")
    if len(ids) < expected:
        covered = set()
        listed = None
        for section in sections:
            covered.update(h.get("node_name") or host for host, h in section["hosts"].items())
            if section.get("nodes") is not None:
                listed = set(n["name"] for n in section["nodes"])
        text += ": %d slice(s) missing (a slice job that failed before it published, or was not run)" % (
            expected - len(ids))
        if listed is not None and listed - covered:
            text += "; the cluster's Nodes no slice judged: %s" % report.names_text(sorted(listed - covered))
    return text


def _merged(sections):
    first = sections[0][1]
    settings = first["settings"]
    fail_on = settings.get("fail_on") or "error"
    entries, groups, run_nodes, labels, inventory, nodes = [], {}, {}, {}, set(), None
    judged = {}  # each Node as the slice that judged it listed it (its uid and labels pin a label write)
    for artifact, section in sorted(sections, key=lambda pair: pair[1]["id"]):
        for host in sorted(artifact["nodes"]):
            entries.append(_fresh_entry(artifact["nodes"][host], fail_on))
        for group, members in section["groups"].items():
            groups.setdefault(group, []).extend(members)
        for host, item in section["hosts"].items():
            run_nodes[host] = item.get("node_name") or host
            if item.get("labels") is not None:
                labels[run_nodes[host]] = item["labels"]
        inventory.update(section.get("inventory_nodes") or [])
        if section.get("nodes") is not None:
            own = dict((n["name"], n) for n in section["nodes"])
            nodes = nodes or own  # the slices listed one cluster (one set of Nodes)
            judged.update((run_nodes[h], own[run_nodes[h]]) for h in section["hosts"] if run_nodes[h] in own)
    node_list = None if nodes is None else [judged.get(n, nodes[n]) for n in sorted(nodes)]
    entries = audit.add_drift(entries, dict((g, sorted(m)) for g, m in groups.items()), fail_on,
                              settings.get("skip_checks"))
    listed = None if node_list is None else [n["name"] for n in node_list]
    coverage = report.coverage(run_nodes, listed, sorted(inventory - set(run_nodes.values()))) if entries else None
    return {"entries": entries, "coverage": coverage, "runtimeclasses": first["runtimeclasses"], "nodes": node_list,
            "runtimeclass_coverage": audit.runtimeclass_coverage(first["runtimeclasses"], entries, node_list, labels),
            "settings": settings, "ids": sorted(s["id"] for _a, s in sections), "fail_on": fail_on}
