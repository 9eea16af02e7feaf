# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge every host of the play (or every Node of the cluster) once, on the controller,
and write the JSON and JUnit reports. Meant for run_once."""

import json

from ansible.errors import AnsibleActionFail
from ansible.utils.display import Display

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _audit as audit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _report as report
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _slices as slices
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._controller_action import ControllerAction

ARGUMENT_SPEC = dict(
    mode=dict(type="str", default="hosts", choices=["hosts", "cluster", "dump", "bootstrap", "merge"]),
    hosts=dict(type="list", elements="str"),
    gathered_var=dict(type="str", default="gpurt_loaded"),
    listing_var=dict(type="str"),
    runtimeclasses=dict(type="list", elements="dict"),
    nodes=dict(type="list", elements="dict"),
    drift_groups=dict(type="list", elements="str"),
    json_path=dict(type="path"),
    junit_path=dict(type="path"),
    metrics_path=dict(type="path"),
    allow_no_runtimeclasses=dict(type="bool", default=False),
    runtimeclasses_none_reason=dict(type="str"),
    fail_run=dict(type="bool", default=True),
    node_label_selector=dict(type="str"),
    checked=dict(type="dict"),
    not_validated=dict(type="list", elements="str", default=[]),
    node_name=dict(type="str"),
    containerd_version=dict(type="str"),
    slice=dict(type="bool", default=False),
    slice_id=dict(type="str"),
    slice_reports=dict(type="list", elements="path", default=[]),
    expected_slices=dict(type="int"),
)
ARGUMENT_SPEC.update(checks.JUDGE_SPEC)
# One node judged by gpurt.runtime_gate.runtime_check: crosscheck.yml's dump, validate_bootstrap.yml's bootstrap.
SINGLE_MODES = ("dump", "bootstrap")

_IMPLICIT_GROUPS = ("all", "ungrouped")


class ActionModule(ControllerAction):
    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result, args = self._validated(tmp, task_vars, ARGUMENT_SPEC)
        coverage = None
        extra, notes = {}, []
        if args["mode"] == "merge":
            return self._merge(args, task_vars, result)
        if args["listing_var"]:
            self._take_listing(args, task_vars)
        if args["runtimeclasses"] is None:
            raise AnsibleActionFail("runtimeclasses is required (as gpurt.runtime_gate.runtimeclass_info returns them)")
        try:
            checks.validate_skip(args["skip_checks"])
            if args["mode"] == "cluster":
                entries = self._cluster_entries(args)
            elif args["mode"] in SINGLE_MODES:
                entries = _single_entries(args)
                if entries is None:
                    # Nothing was judged (the dump could not be read, ...): the report written at play
                    # start says so; the failed task before this one fails the play.
                    result.update(changed=False, judged=False, written=[], msg="nothing was judged; no report written")
                    return result
            else:
                entries, coverage, extra, notes = self._host_entries(args, task_vars)
        except (ValueError, KeyError, TypeError) as exc:
            raise AnsibleActionFail("cannot build the audit report: %s" % exc)
        built = report.build(entries, args["fail_on"], args["mode"], args["runtimeclasses"], run_failures(args, entries),
                             coverage=coverage, extra=extra, notes=notes)
        return self._finish(args, built, result, task_vars)

    def _finish(self, args, built, result, task_vars):
        """Write the report's files and return the task's result (failed when the run as a whole fails)."""
        try:
            written = report.write_all(built, {"json": args["json_path"], "junit": args["junit_path"],
                                               "metrics": args["metrics_path"]})
        except report.WriteError as exc:
            raise AnsibleActionFail(str(exc))
        result.update(report.result_of(built, written, verbose=Display().verbosity > 0,
                                       own_lines=args["mode"] == "hosts"), judged=True,
                      missing_lines=sorted(checks.on_node(n, line) for n, e in built["nodes"].items() for line in e["missing"]))
        if args["mode"] in ("cluster", "merge"):
            # The Nodes (cluster) or the slices' hosts (merge) are no hosts of the play: every node's line, then
            # each distinct finding once.
            result["gpurt_summary_lines"] = result["readable_lines"]
        if args["mode"] in SINGLE_MODES:
            # runtime_check (or the sandbox) printed the node's lines already.
            result["gpurt_summary_lines"] = ["FAILED: %s" % checks.one_line(r) for r in built["run_failures"]]
        if self._task.delegate_facts:
            result["ansible_facts"] = {"gpurt_audit_failing": result["failing_nodes"],
                                       "gpurt_audit_run_failures": built["run_failures"],
                                       "gpurt_audit_judged_on": (task_vars or {}).get("inventory_hostname")}
        if "slice" in built:
            # What AWX hands to the next node of a workflow: one top-level key per run, published as
            # ansible.builtin.set_stats does (the strategy reads ansible_stats from any task result): no task of
            # its own, which would print its lines in every run.
            key = slices.artifact_key(built["slice"]["id"])
            result.update(artifact_key=key, ansible_stats={"data": {key: built}, "per_host": False, "aggregate": False})
        lines = result["summary_lines"]
        if built["run_failures"] and args["fail_run"]:
            # The run as a whole checked too little to pass: the reports are written, the task fails.
            result.update(failed=True, msg="; ".join(built["run_failures"]) + " (" + lines[-1] + ")")
        return result

    def _take_listing(self, args, task_vars):
        """runtimeclasses, nodes and runtimeclasses_none_reason not given, from the runtimeclass_info result that
        listing_var names: as registered when it is plain data (templating a task argument walks all of it: with
        thousands of Nodes, seconds), else templated."""
        name = args["listing_var"]
        if name not in task_vars:
            raise AnsibleActionFail("listing_var: no variable %s is set (the register of gpurt.runtime_gate.runtimeclass_info)"
                                    % name)
        listing = task_vars[name]
        if not audit.plain_data(listing):
            listing = self._templar.template(listing)
        if not isinstance(listing, dict):
            raise AnsibleActionFail("listing_var: %s is not a gpurt.runtime_gate.runtimeclass_info result" % name)
        for option, key, kind in (("runtimeclasses", "runtimeclasses", list), ("nodes", "nodes", list),
                                  ("runtimeclasses_none_reason", "none_reason", str)):
            value = listing.get(key)
            if args[option] is not None or value is None:
                continue
            if not isinstance(value, kind) or (kind is list and not all(isinstance(item, dict) for item in value)):
                raise AnsibleActionFail("listing_var: %s.%s is not a %s" % (name, key, "list of objects" if kind is list else "string"))
            args[option] = value

    def _host_entries(self, args, task_vars):
        hostvars = task_vars.get("hostvars", {})
        hosts = args["hosts"] if args["hosts"] is not None else task_vars.get("ansible_play_hosts_all", [])
        listed = audit.node_names(args["nodes"])
        entries = []
        run_nodes = {}
        published = {}
        for host in hosts:
            hv = audit.host_vars(hostvars, host, (args["gathered_var"], "gpurt_node_labels", "gpurt_node_allocatable",
                                                  "gpurt_node_name", "gpurt_kubelet_cgroup_driver"))
            node_name = hv["gpurt_node_name"] or host
            run_nodes[host] = node_name
            labels, allocatable = audit.node_facts(node_name, args["nodes"], hv["gpurt_node_labels"],
                                                   hv["gpurt_node_allocatable"])
            options = dict(args, kubelet_cgroup_driver=hv["gpurt_kubelet_cgroup_driver"] or args["kubelet_cgroup_driver"],
                           node_reported=audit.node_reported(node_name, args["nodes"]))
            entry = audit.audit_host(host, hv[args["gathered_var"]], args["runtimeclasses"], labels, allocatable, options)
            entry["node_object"] = None if listed is None else node_name in listed
            entry["node_name"] = node_name
            entries.append(entry)
            published[host] = {"node_name": node_name, "labels": hv["gpurt_node_labels"]}
        groups = task_vars.get("groups", {})
        wanted = args["drift_groups"]
        drift_groups = dict((g, [h for h in members if h in hosts]) for g, members in groups.items()
                            if (g in wanted if wanted is not None else g not in _IMPLICIT_GROUPS))
        sid = slices.slice_id(args["slice"], args["slice_id"], task_vars.get("awx_job_id"))
        coverage = audit.inventory_coverage(run_nodes, listed, hostvars, groups) if hosts else None
        publication = slices.publication(
            sid, args["slice"], published, drift_groups,
            # the inventory's hosts outside the run, as far as a coverage reads them: for the Nodes it did not cover
            (coverage or {}).get("nodes_not_checked_in_inventory") or [],
            args["runtimeclasses"], args["nodes"],
            {"fail_on": args["fail_on"], "skip_checks": sorted(args["skip_checks"]),
             "allow_no_runtimeclasses": args["allow_no_runtimeclasses"]})
        if args["slice"]:
            # Fleet-wide verdicts from one slice's view would be wrong: fleet_verdict judges them.
            slices.judged_at_merge(entries, args["fail_on"])
            return entries, None, {"slice": publication, "runtimeclass_coverage": None}, [slices.SLICE_NOTE]
        entries = audit.add_drift(entries, drift_groups, args["fail_on"], args["skip_checks"])
        classes = audit.runtimeclass_coverage(args["runtimeclasses"], entries, args["nodes"], dict(
            (item["node_name"], item["labels"]) for item in published.values() if item["labels"] is not None))
        return (entries, coverage, {"slice": publication, "runtimeclass_coverage": classes},
                audit.runtimeclass_notes(classes))

    def _merge(self, args, task_vars, result):
        """fleet_verdict: the slices' reports (set_stats artifacts among the run's variables, and files)
        merged into the verdict one run over all their hosts gives; refused, naming why, when they cannot be."""
        if args["expected_slices"] is None or args["expected_slices"] < 1:
            # a result, not a raise: fleet_verdict.yml prints why once (failed_when cannot catch a raise in 2.19)
            result.update(failed=True, msg="expected_slices (gpurt_slices_expected) is required: how many slices the "
                          "sliced job ran (its job template's Job Slicing), so that a missing slice is refused")
            return result
        found = [(key, task_vars[key]) for key in sorted(task_vars) if key.startswith(slices.ARTIFACT_PREFIX)]
        found.extend(_read_report(path) for path in args["slice_reports"])
        try:
            merged = slices.merge(found, args["expected_slices"])
        except slices.MergeError as exc:
            refused = ["the slices cannot be merged: %s" % problem for problem in exc.problems]
            built = report.build([], args["fail_on"], "hosts", run_failures=refused,
                                 coverage={"nodes_listed": False, "why": "coverage unknown: the slices were not merged"},
                                 extra={"runtimeclass_coverage": None,
                                        "slices": {"expected": args["expected_slices"], "merged": []}})
            # no fleet view: no Node to label on it
            return dict(self._finish(args, built, result, task_vars), cluster_nodes=None)
        settings = merged["settings"]
        entries = merged["entries"]
        failures = run_failures({"mode": "hosts", "runtimeclasses": merged["runtimeclasses"],
                                 "allow_no_runtimeclasses": settings.get("allow_no_runtimeclasses")}, entries)
        built = report.build(entries, merged["fail_on"], "hosts", merged["runtimeclasses"], failures,
                             coverage=merged["coverage"],
                             notes=audit.runtimeclass_notes(merged["runtimeclass_coverage"]),
                             extra={"runtimeclass_coverage": merged["runtimeclass_coverage"],
                                    "slices": {"expected": args["expected_slices"], "merged": merged["ids"]}})
        # The Nodes as the slices listed them (each as the slice that judged it did): the labeling's input, as the
        # unsliced run's list is its (playbooks/plays/label_nodes.yml).
        return dict(self._finish(args, built, result, task_vars), cluster_nodes=merged["nodes"])

    @staticmethod
    def _cluster_entries(args):
        if args["nodes"] is None:
            raise ValueError("mode=cluster needs nodes (from gpurt.runtime_gate.node_info)")
        entries = []
        for node in args["nodes"]:
            checked, found, ran, skipped = checks.check_reported_node(
                node, args["runtimeclasses"], args["pod_requests"], args["skip_checks"])
            reason = None if checked else "Node reports no status.runtimeHandlers"
            entries.append(report.node_entry(
                node["name"], found, not_checked_reason=reason, fail_on=args["fail_on"], checks_run=ran,
                checks_skipped=skipped, runtimes=[h for h in node["runtime_handlers"] if h] if checked else None,
                node_info={"containerd_version": node.get("container_runtime_version")}))
        return entries


def _read_report(path):
    """(path, the report it holds); a report that cannot be read is named by the merge."""
    try:
        with open(path) as handle:
            return path, json.load(handle)
    except (IOError, OSError) as exc:
        return path, "unreadable (%s)" % (exc.strerror or exc)
    except ValueError as exc:
        return path, "not JSON (%s)" % exc


def run_failures(args, entries):
    """Why the run as a whole fails however its nodes fared: a gate that checked nothing,
    or cross-checked against no RuntimeClass, never passes."""
    out = []
    if not entries:
        if args["mode"] == "cluster":
            selector = args.get("node_label_selector")
            out.append("no Node to judge: the cluster listed none%s" % (
                " matching label selector '%s'" % selector if selector else ""))
        else:
            out.append("no host to judge: the play had no host (check the inventory, gpurt_audit_hosts and --limit)")
    # A bootstrap that cannot be evaluated was never cross-checked: its RuntimeClasses were not read.
    if not args["runtimeclasses"] and not args["allow_no_runtimeclasses"] and not args.get("not_validated"):
        why = args.get("runtimeclasses_none_reason")
        out.append("no RuntimeClass was read, so no handler was cross-checked%s (set allow_no_runtimeclasses / "
                   "gpurt_allow_no_runtimeclasses=true to audit the nodes alone)" % (": " + why if why else ""))
    return out


def _single_entries(args):
    """The one node a runtime_check result (args["checked"]) or a bootstrap that cannot be
    evaluated (args["not_validated"]) stands for; None when nothing was judged."""
    name = args["node_name"] or ("bootstrap" if args["mode"] == "bootstrap" else "dump")
    info = {"containerd_version": args["containerd_version"]}
    if args["not_validated"]:
        return [report.node_entry(name, not_checked_reason="; ".join(args["not_validated"]), status=report.NOT_VALIDATED,
                                  fail_on=args["fail_on"], node_info=info, extra={"reasons": args["not_validated"]})]
    checked = args["checked"] or {}
    if checked.get("status") not in report.STATUSES:
        return None
    info["running"] = checked.get("running")
    return [report.node_entry(name, checked.get("findings") or [], fail_on=args["fail_on"],
                              checks_run=checked.get("checks_run"), checks_skipped=checked.get("checks_skipped"),
                              node_info=info,
                              not_checked_reason=checked.get("msg") if checked["status"] == report.NOT_CHECKED else None)]
