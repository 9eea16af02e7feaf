# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judge every host of the play (or every Node of the cluster) once, on the controller,
and write the JSON and JUnit reports. Meant for run_once."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _audit as audit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _report as report

ARGUMENT_SPEC = dict(
    mode=dict(type="str", default="hosts", choices=["hosts", "cluster", "dump", "bootstrap"]),
    hosts=dict(type="list", elements="str"),
    gathered_var=dict(type="str", default="gpurt_loaded"),
    runtimeclasses=dict(type="list", elements="dict", required=True),
    nodes=dict(type="list", elements="dict"),
    drift_groups=dict(type="list", elements="str"),
    json_path=dict(type="path"),
    junit_path=dict(type="path"),
    metrics_path=dict(type="path"),
    allow_no_runtimeclasses=dict(type="bool", default=False),
    fail_run=dict(type="bool", default=True),
    node_label_selector=dict(type="str"),
    checked=dict(type="dict"),
    not_validated=dict(type="list", elements="str", default=[]),
    node_name=dict(type="str"),
    containerd_version=dict(type="str"),
)
ARGUMENT_SPEC.update(checks.JUDGE_SPEC)
# One node judged by gpurt.runtime_gate.runtime_check: crosscheck.yml's dump, validate_bootstrap.yml's bootstrap.
SINGLE_MODES = ("dump", "bootstrap")

_IMPLICIT_GROUPS = ("all", "ungrouped")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        coverage = None
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
                entries, coverage = self._host_entries(args, task_vars)
        except (ValueError, KeyError, TypeError) as exc:
            raise AnsibleActionFail("cannot build the audit report: %s" % exc)
        built = report.build(entries, args["fail_on"], args["mode"], args["runtimeclasses"], run_failures(args, entries),
                             coverage=coverage)
        try:
            written = report.write_all(built, {"json": args["json_path"], "junit": args["junit_path"],
                                               "metrics": args["metrics_path"]})
        except report.WriteError as exc:
            raise AnsibleActionFail(str(exc))
        result.update(report.result_of(built, written, verbose=Display().verbosity > 0,
                                        own_lines=args["mode"] == "hosts"), judged=True,
                      missing_lines=sorted(checks.on_node(n, line) for n, e in built["nodes"].items() for line in e["missing"]))
        if args["mode"] in SINGLE_MODES:
            # runtime_check (or the sandbox) printed the node's lines already.
            result["gpurt_summary_lines"] = ["FAILED: %s" % checks.one_line(r) for r in built["run_failures"]]
        if self._task.delegate_facts:
            result["ansible_facts"] = {"gpurt_audit_failing": result["failing_nodes"],
                                       "gpurt_audit_run_failures": built["run_failures"],
                                       "gpurt_audit_judged_on": (task_vars or {}).get("inventory_hostname")}
        lines = result["summary_lines"]
        if built["run_failures"] and args["fail_run"]:
            # The run as a whole checked too little to pass: the reports are written, the task fails.
            result.update(failed=True, msg="; ".join(built["run_failures"]) + " (" + lines[-1] + ")")
        return result

    def _host_entries(self, args, task_vars):
        hostvars = task_vars.get("hostvars", {})
        hosts = args["hosts"] if args["hosts"] is not None else task_vars.get("ansible_play_hosts_all", [])
        listed = audit.node_names(args["nodes"])
        entries = []
        run_nodes = {}
        for host in hosts:
            hv = audit.host_vars(hostvars, host, (args["gathered_var"], "gpurt_node_labels", "gpurt_node_allocatable",
                                                  "gpurt_node_name", "gpurt_kubelet_cgroup_driver"),
                                 results=(args["gathered_var"],))
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
        groups = task_vars.get("groups", {})
        wanted = args["drift_groups"]
        drift_groups = dict((g, [h for h in members if h in hosts]) for g, members in groups.items()
                            if (g in wanted if wanted is not None else g not in _IMPLICIT_GROUPS))
        return (audit.add_drift(entries, drift_groups, args["fail_on"], args["skip_checks"]),
                audit.inventory_coverage(run_nodes, listed, hostvars, groups) if hosts else None)

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
        out.append("no RuntimeClass was read, so no handler was cross-checked (set "
                   "allow_no_runtimeclasses / gpurt_allow_no_runtimeclasses=true to audit the nodes alone)")
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
