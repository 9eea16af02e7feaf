# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""remediate.yml's rollout on the controller: the stop rule (start), the re-audit of each batch
and the decision to go on (batch), every host's outcome with NOT PROCESSED for the hosts never
reached (collect), the JSON and JUnit reports and the summary (report). Meant for run_once with
delegate_to localhost and delegate_facts: the rollout's state is a fact of localhost."""

from ansible.errors import AnsibleActionFail

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _audit as audit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _report as report
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _rollout as rollout
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._controller_action import ControllerAction

ARGUMENT_SPEC = dict(
    step=dict(type="str", required=True, choices=["start", "batch", "collect", "report"]),
    max_fail_percentage=dict(type="int", default=0),
    hosts=dict(type="list", elements="str"),
    result_var=dict(type="str", default="containerd_runtime_result"),
    failure_var=dict(type="str", default="_gpurt_rollout_failure"),
    batch_var=dict(type="str", default="_gpurt_batch"),
    collected_var=dict(type="str", default="_gpurt_collected"),
    runtimeclasses=dict(type="list", elements="dict", default=[]),
    nodes=dict(type="list", elements="dict"),
    reaudit=dict(type="bool", default=True),
    runtimeclass_gate=dict(type="list", elements="dict", default=[]),
    manage_runtimeclasses=dict(type="bool", default=False),
    json_path=dict(type="path"),
    junit_path=dict(type="path"),
)
ARGUMENT_SPEC.update(checks.JUDGE_SPEC)
STATE = "_gpurt_rollout"
_PER_HOST = ("gpurt_node_name", "gpurt_node_labels", "gpurt_node_allocatable", "gpurt_kubelet_cgroup_driver")


def _state(task_vars):
    try:
        facts = task_vars["hostvars"]["localhost"].get("ansible_facts") or {}
    except (KeyError, TypeError, AttributeError):
        return None
    return facts.get(STATE)


class ActionModule(ControllerAction):
    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result, args = self._validated(tmp, task_vars, ARGUMENT_SPEC)
        try:
            checks.validate_skip(args["skip_checks"])
            step = getattr(self, "_" + args["step"])
            return step(result, args, task_vars)
        except rollout.RolloutError as exc:
            raise AnsibleActionFail(str(exc))
        except (ValueError, KeyError, TypeError) as exc:
            raise AnsibleActionFail("cannot judge the rollout: %s" % exc)

    def _start(self, result, args, task_vars):
        hosts = args["hosts"] if args["hosts"] is not None else task_vars.get("ansible_play_hosts_all", [])
        try:
            state = rollout.check_rule(args["max_fail_percentage"], len(hosts))
        except rollout.RolloutError as exc:
            # a failed result, not a raise: ansible-core 2.19 applies no failed_when to a raise, and remediate.yml
            # prints this reason once (plays/not_judged.yml)
            result.update(failed=True, msg=str(exc))
            return result
        result.update(changed=False, rollout=state, ansible_facts={STATE: state},
                      msg="%d host(s); the rollout stops once more than %d%% of them failed"
                      % (len(hosts), args["max_fail_percentage"]))
        return result

    def _batch(self, result, args, task_vars):
        state = _state(task_vars)
        if state is None:
            raise AnsibleActionFail("step=batch before step=start: the rollout has no state")
        hostvars = task_vars.get("hostvars", {})
        hosts = args["hosts"]
        if hosts is None:
            hosts = list(task_vars.get("ansible_play_batch", []))
            # ansible-core 2.16 takes a host whose handler failed out of the play's hosts even though a rescue
            # ran; no host of this play fails otherwise. Not judged yet, such a host is of this batch.
            playing = set(task_vars.get("ansible_play_hosts", []))
            hosts += [h for h in task_vars.get("ansible_play_hosts_all", [])
                      if h not in playing and h not in hosts and h not in state["failing"]]
        entries = {}
        for host in hosts:
            hv = audit.host_vars(hostvars, host, (args["result_var"], args["failure_var"]) + _PER_HOST)
            options = dict(args, kubelet_cgroup_driver=hv["gpurt_kubelet_cgroup_driver"] or args["kubelet_cgroup_driver"])
            entries[host] = rollout.host_entry(
                host, hv[args["result_var"]], hv[args["failure_var"]], args["runtimeclasses"], options,
                node_name=hv["gpurt_node_name"], labels=hv["gpurt_node_labels"],
                allocatable=hv["gpurt_node_allocatable"], nodes=args["nodes"], reaudit=args["reaudit"],
                check_mode=self._play_context.check_mode)
        state = rollout.after_batch(state, entries)
        # A failing host's line and its findings are printed once, at the end (remediate.yml fails it with its line).
        warnings = rollout.precedence_lines(entries)
        if self._play_context.check_mode:
            warnings += rollout.check_mode_lines(entries)
        if state["stopped"]:
            # This batch stopped it: the play ends here (meta end_play), later batches never start.
            warnings.append("STOPPED: %s" % state["stop_reason"])
        result.update(changed=False, nodes=entries, stop=state["stopped"], rollout=state,
                      ansible_facts={STATE: state},
                      msg="batch %d: %d host(s), %d failing; %s" % (
                          state["batches"], len(entries), sum(1 for e in entries.values() if e["failing"]),
                          "the rollout stops" if state["stopped"] else "the rollout goes on"))
        if warnings:
            result["warnings"] = warnings
        return result

    def _collect(self, result, args, task_vars):
        state = _state(task_vars) or rollout.check_rule(0, 0)
        hostvars = task_vars.get("hostvars", {})
        hosts = args["hosts"] if args["hosts"] is not None else task_vars.get("ansible_play_hosts_all", [])
        entries, run_nodes, labels = {}, {}, {}
        for host in hosts:
            hv = audit.host_vars(hostvars, host, ("gpurt_node_name", "gpurt_node_labels"))
            entry = audit.host_result_item(hostvars, host, args["batch_var"], "nodes", host)
            entries[host] = entry if entry is not None else rollout.not_processed(
                host, state, hv["gpurt_node_name"], args["nodes"])
            run_nodes[host] = hv["gpurt_node_name"] or host
            labels[host] = hv["gpurt_node_labels"]
        result.update(changed=False, nodes=entries, run_nodes=run_nodes, gate_nodes=rollout.gate_nodes(entries, labels),
                      stopped=state["stopped"], rollout=state,
                      msg="%d host(s): %d not processed" % (
                          len(entries), sum(1 for e in entries.values() if e["status"] == report.NOT_PROCESSED)))
        return result

    def _report(self, result, args, task_vars):
        state = _state(task_vars)
        collected = task_vars.get(args["collected_var"]) or {}
        entries = list((collected.get("nodes") or {}).values())
        run_failures = []
        if not entries:
            run_failures.append("no host to remediate: the play had no host (check the inventory, "
                                "gpurt_remediate_hosts and --limit)")
        run_failures += rollout.gate_failures(args["runtimeclass_gate"])
        coverage = None
        if entries:
            coverage = audit.inventory_coverage(collected.get("run_nodes") or {}, audit.node_names(args["nodes"]),
                                                task_vars.get("hostvars", {}), task_vars.get("groups", {}))
        built = report.build(entries, args["fail_on"], "remediation", args["runtimeclasses"], run_failures,
                             coverage=coverage, notes=rollout.notes(state, args["runtimeclass_gate"], args["manage_runtimeclasses"]) if state else [],
                             extra={"check_mode": bool(self._play_context.check_mode), "rollout": state,
                                    "runtimeclass_gate": args["runtimeclass_gate"]})
        try:
            written = report.write_all(built, {"json": args["json_path"], "junit": args["junit_path"]})
        except report.WriteError as exc:
            raise AnsibleActionFail(str(exc))
        final = dict(state or rollout.check_rule(0, 0), run_failures=built["run_failures"], reported=True)
        result.update(report.result_of(built, written, own_lines=True), ansible_facts={STATE: final})
        return result
