"""remediate.yml's rollout judged on the controller: outcomes, the stop rule, NOT PROCESSED."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _report as report
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _rollout as rollout

RC = [{"name": "nvidia", "handler": "nvidia", "node_selector": None}]


def loaded(*runtimes):
    return {"runtime_names": sorted(runtimes), "default_runtime_name": "runc", "runtimes": dict(
        (r, {"runtime_type": "io.containerd.runc.v2", "options": {}}) for r in runtimes)}


WROTE = {"changed": True, "files": ["/etc/containerd/conf.d/zz-gpurt-nvidia.toml"], "msg": "wrote /etc/x",
         "loaded_changes": ["plugins.x.runtimes.nvidia: (absent) -> {}"], "notes": [], "loaded_after": loaded("nvidia", "runc")}
NOOP = {"changed": False, "msg": "every runtime is loaded as wanted; nothing written", "loaded_after": loaded("nvidia", "runc")}
REFUSED = {"failed": True, "refused": True, "step": "proof", "reasons": ["n1: sandbox image: a -> b"],
           "msg": "n1: refused, nothing was written: sandbox image: a -> b"}


class TestRemediation(object):
    def test_changed_and_unchanged_are_left_to_the_reaudit(self):
        status, reason, rem = rollout.remediation(WROTE)
        assert (status, reason, rem["outcome"], rem["changed"]) == (None, None, "changed", True)
        assert rem["files"] == WROTE["files"] and rem["loaded_changes"] == WROTE["loaded_changes"]
        assert "loaded_after" not in rem and "gathered" not in rem
        assert rollout.remediation(NOOP)[2]["outcome"] == "unchanged"

    def test_refused_keeps_each_reason_without_the_host_prefix(self):
        status, reason, rem = rollout.remediation(REFUSED, host="n1")
        assert (status, reason) == (report.REFUSED, "sandbox image: a -> b")
        assert rem["reasons"] == ["sandbox image: a -> b"] and rem["step"] == "proof"

    def test_failures(self):
        assert rollout.remediation({"unreachable": True, "msg": "ssh: timeout"})[:2] == (
            report.FAILED, "unreachable: ssh: timeout")
        assert rollout.remediation({"failed": True, "msg": "n1: cannot gather"}, host="n1")[:2] == (
            report.FAILED, "cannot gather")
        assert rollout.remediation(None)[:2] == (report.FAILED, "the host has no result of the remediation")
        # The role wrote, then the restart failed (recorded by the block's rescue).
        status, reason, rem = rollout.remediation(WROTE, {"task": "Restart containerd with the configured command",
                                                          "msg": "exit 1"})
        assert (status, reason, rem["changed"]) == (
            report.FAILED, "Restart containerd with the configured command failed: exit 1", True)
        # The role's argument validation failed before its task registered anything.
        assert rollout.remediation(None, {"task": "Validating arguments", "msg": "bad"})[:2] == (
            report.FAILED, "Validating arguments failed: bad")

    def test_a_failure_the_role_only_reported_fails_the_host_and_counts_its_files(self):
        """containerd_runtime_on_failure=report (remediate.yml): the role wrote, then the restart did not happen;
        the task did not fail, its outcome says so, and the files written count as a change (issue 35)."""
        reported = dict(WROTE, failed=False, outcome="failed", step="restart",
                        msg="n1: containerd was not restarted (exit 1); written: /etc/x")
        status, reason, rem = rollout.remediation(reported, host="n1")
        assert (status, rem["changed"]) == (report.FAILED, True)
        assert reason == "containerd was not restarted (exit 1); written: /etc/x"
        assert rollout.remediation(dict(REFUSED, failed=False, outcome="refused"), host="n1")[:2] == (
            report.REFUSED, "sandbox image: a -> b")

    def test_a_refusal_reads_short(self):
        refused = dict(REFUSED, reasons=["n1: /x sets containerd under both a and b; which one is unknown. "
                                         "Nothing was written."])
        reason = rollout.remediation(refused, host="n1")[1]
        assert reason == "/x sets containerd under both a and b; which one is unknown."


class TestHostEntry(object):
    def test_reaudit_of_what_the_remediation_proved(self):
        entry = rollout.host_entry("n1", WROTE, runtimeclasses=RC)
        assert entry["status"] == report.OK and entry["runtimes"] == ["nvidia", "runc"]
        assert entry["remediation"]["outcome"] == "changed" and entry["node_object"] is None
        lacking = dict(WROTE, loaded_after=loaded("runc"))
        entry = rollout.host_entry("n1", lacking, runtimeclasses=RC)
        assert entry["status"] == report.FINDINGS and entry["missing"] == ["MISSING=nvidia"] and entry["failing"]

    def test_node_objects_give_labels_and_say_whether_one_matched(self):
        gpu_only = [{"name": "nvidia", "handler": "nvidia", "node_selector": {"gpu": "true"}}]
        lacking = dict(WROTE, loaded_after=loaded("runc"))
        nodes = [{"name": "n1", "labels": {"gpu": "false"}, "allocatable": {"cpu": "4"}}]
        entry = rollout.host_entry("n1", lacking, runtimeclasses=gpu_only, nodes=nodes)
        assert entry["status"] == report.OK and entry["node_object"] is True  # the class cannot land here
        entry = rollout.host_entry("n1", lacking, runtimeclasses=gpu_only, nodes=nodes, node_name="n1.example")
        assert entry["status"] == report.FINDINGS and entry["node_object"] is False  # labels unknown: matches

    def test_the_node_status_is_a_running_view_only_for_a_host_this_run_did_not_restart(self):
        """Nodes are listed before the batch: for a host the role changed, their status predates the restart."""
        gathered = {"loaded": loaded("nvidia", "runc"), "version": "2.1.9", "version_major": 2, "version_minor": 1,
                    "running": {"source": "none", "error": "crictl not found"}}
        nodes = [{"name": "n1", "labels": {}, "runtime_handlers": ["runc"], "listed_at": 1000000.0}]
        untouched = dict(NOOP, gathered=gathered)
        entry = rollout.host_entry("n1", untouched, runtimeclasses=RC, nodes=nodes)
        assert [(f["check"], f["subject"]) for f in entry["findings"]] == [("restart_pending", "nvidia")]
        assert entry["failing"]
        entry = rollout.host_entry("n1", dict(WROTE, gathered=gathered), runtimeclasses=RC, nodes=nodes)
        assert entry["status"] == report.OK and "restart_pending" in entry["checks_skipped"], entry

    def test_refused_and_failed_are_failing_without_a_reaudit(self):
        entry = rollout.host_entry("n1", REFUSED, runtimeclasses=RC)
        assert (entry["status"], entry["failing"], entry["findings"]) == (report.REFUSED, True, [])
        assert entry["gate_lines"] == ["REFUSED: sandbox image: a -> b"]
        entry = rollout.host_entry("n1", {"unreachable": True, "msg": "down"})
        assert entry["status"] == report.FAILED and entry["unreachable"] is True

    def test_without_reaudit(self):
        entry = rollout.host_entry("n1", dict(WROTE, loaded_after=loaded("runc")), runtimeclasses=RC, reaudit=False)
        assert entry["status"] == report.OK and entry["checks_run"] == []
        assert entry["remediation"]["msg"].endswith("not re-audited (gpurt_reaudit=false)")


def entries(**statuses):
    out = {}
    for host, failing in statuses.items():
        out[host] = rollout.host_entry(host, REFUSED if failing else NOOP, runtimeclasses=RC)
    return out


class TestStopRule(object):
    @pytest.mark.parametrize("pct", [-1, 101, "10", True, None])
    def test_the_rule_is_a_whole_percentage(self, pct):
        with pytest.raises(rollout.RolloutError, match="gpurt_max_fail_percentage must be a whole number from 0 to 100"):
            rollout.check_rule(pct, 4)

    def test_one_host_batches_follow_the_users_percentage(self):
        # 4 hosts, one per batch, 30%: one failure (25%) goes on, a second (50%) stops the rollout.
        state = rollout.check_rule(30, 4)
        state = rollout.after_batch(state, entries(a=False))
        state = rollout.after_batch(state, entries(b=True))
        assert not state["stopped"] and state["failing"] == ["b"]
        state = rollout.after_batch(state, entries(c=True))
        assert state["stopped"] and state["processed"] == 3
        assert state["stop_reason"] == ("the rollout stopped after batch 3: 2 of its 4 host(s) failed (b, c), more "
                                        "than gpurt_max_fail_percentage=30% allows")

    def test_zero_stops_at_the_first_failure_and_100_never(self):
        assert rollout.after_batch(rollout.check_rule(0, 4), entries(a=True))["stopped"]
        state = rollout.check_rule(100, 2)
        state = rollout.after_batch(state, entries(a=True))
        assert not state["stopped"]

    def test_exactly_the_percentage_goes_on(self):
        state = rollout.after_batch(rollout.check_rule(50, 4), entries(a=True, b=True))
        assert not state["stopped"]  # 2 of 4 is 50%, not more

    def test_a_failed_last_batch_stops_nothing(self):
        state = rollout.after_batch(rollout.check_rule(0, 2), entries(a=False))
        state = rollout.after_batch(state, entries(b=True))
        assert not state["stopped"] and state["failing"] == ["b"] and state["processed"] == 2

    def test_not_processed_hosts_say_why(self):
        state = rollout.after_batch(rollout.check_rule(0, 3), entries(a=True))
        entry = rollout.not_processed("c", state)
        assert entry["status"] == report.NOT_PROCESSED and entry["failing"]
        assert entry["gate_lines"] == ["NOT PROCESSED: " + state["stop_reason"]]
        notes = rollout.notes(state, manage_runtimeclasses=True)
        assert notes[1] == "STOPPED: %s; NOT PROCESSED: 2 host(s)" % state["stop_reason"]
        assert notes[2] == "RuntimeClasses: none written, the rollout stopped"


def test_gate_nodes_know_only_what_a_remediation_proved():
    state = rollout.check_rule(0, 5)
    found = entries(ok=False, refused=True)
    found["down"] = rollout.host_entry("down", {"unreachable": True, "msg": "x"})
    found["later"] = rollout.not_processed("later", state)
    found["named"] = rollout.host_entry("named", NOOP, runtimeclasses=RC, node_name="node-7")
    view = rollout.gate_nodes(found, {"ok": {"pool": "gpu"}})
    assert view["ok"] == {"labels": {"pool": "gpu"}, "runtimes": ["nvidia", "runc"], "why_not_checked": None}
    assert view["refused"]["why_not_checked"] == "its remediation was refused"
    assert view["down"]["why_not_checked"] == "unreachable during remediation"
    assert view["later"]["why_not_checked"] == "not processed: the rollout did not reach it"
    assert "node-7" in view and "named" not in view


def test_gate_refusals_are_run_failures():
    decisions = [{"name": "nvidia", "decision": "refused", "message": "RuntimeClass nvidia: not safe to write"},
                 {"name": "kata", "decision": "write", "message": "safe"}]
    failures = rollout.gate_failures(decisions)
    assert len(failures) == 1 and failures[0].startswith("RuntimeClass nvidia not written, because")
    assert failures[0].endswith("set gpurt_runtimeclass_gate_force=true to write anyway")
