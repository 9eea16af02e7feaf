"""The planning of verified handler labels (plugin_utils/_node_labels): loaded AND running, with the
running view from crictl first, the Node's status.runtimeHandlers second, and nothing without either."""
import calendar
import time

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _node_labels as nl

P = "runtime-gate.gpurt.io/"


def entry(runtimes, running=None, status="OK", node_name=None):
    return {"status": status, "runtimes": runtimes, "running": running, "reason": None, "node_name": node_name}


def test_crictl_and_the_node_status_must_agree():
    verified = nl.verified_handlers(
        entry(["nvidia", "runc"], {"source": "crictl", "runtimes": ["runc"]}), {"runtime_handlers": ["nvidia", "runc"]})
    assert verified[:2] == (["runc"], "crictl and node status")
    # the daemon restarted with nvidia; the kubelet has not listed it yet: the fence would remove the label
    verified = nl.verified_handlers(
        entry(["nvidia", "runc"], {"source": "crictl", "runtimes": ["nvidia", "runc"]}), {"runtime_handlers": ["runc"]})
    assert verified[:2] == (["runc"], "crictl and node status; the Node's status does not list nvidia yet")
    # a kubelet that lists none (containerd 1.x): crictl alone
    verified = nl.verified_handlers(
        entry(["nvidia", "runc"], {"source": "crictl", "runtimes": ["nvidia", "runc"]}), {"runtime_handlers": []})
    assert verified[:2] == (["nvidia", "runc"], "crictl")


def test_node_status_when_crictl_did_not_answer():
    verified = nl.verified_handlers(
        entry(["nvidia", "runc"], {"source": "process", "runtimes": None}), {"runtime_handlers": ["runc"]})
    assert verified[:2] == (["runc"], "node status")


def test_loaded_but_not_running_and_running_but_not_loaded_are_not_verified():
    verified = nl.verified_handlers(entry(["runc"], {"source": "crictl", "runtimes": ["nvidia", "runc"]}), None)
    assert verified[0] == ["runc"]


def test_no_running_view_verifies_nothing():
    gathered = entry(["nvidia", "runc"], {"source": "process"})
    handlers, source, reason = nl.verified_handlers(gathered, {"runtime_handlers": None})
    assert handlers == [] and source is None and "no running view" in reason


def test_a_node_not_checked_keeps_no_label():
    plan = nl.plan({"h": entry(None, status="NOT CHECKED", node_name="n1")},
                   [{"name": "n1", "runtime_handlers": ["nvidia"]}])
    assert plan[0]["labels"] == {} and "not checked" in plan[0]["reason"]


def test_hosts_without_a_node_object_are_left_out():
    assert nl.plan({"h": entry(["runc"], node_name="gone")}, [{"name": "n1"}]) == []


@pytest.mark.parametrize("handler", ["a" * 64, "-x", "x_", "nvidia/cdi", "", "gpu runtime"])
def test_a_handler_that_cannot_form_a_label_key_is_a_problem_of_its_node_only(handler):
    report = {"good": entry(["runc"], {"source": "crictl", "runtimes": ["runc"]}, node_name="n0"),
              "bad": entry(["runc", handler], {"source": "crictl", "runtimes": ["runc", handler]}, node_name="n1")}
    good, bad = nl.plan(report, [{"name": "n0"}, {"name": "n1"}])
    assert good["labels"] == {P + "runc": "true"} and good["problems"] == []
    # the bad node keeps what it can carry, and says what it cannot
    assert bad["labels"] == {P + "runc": "true"} and bad["handlers"] == sorted(["runc", handler])
    (problem,) = bad["problems"]
    assert "not labeled for a verified runtime" in problem and repr(handler) in problem
    assert nl.failures({"problems": ["n1: " + problem]}) == ["n1: " + problem]


def test_two_hosts_mapped_to_one_node_earn_it_nothing_and_are_named():
    report = {"a": entry(["nvidia"], {"source": "crictl", "runtimes": ["nvidia"]}, node_name="n1"),
              "b": entry(["runc"], {"source": "crictl", "runtimes": ["runc"]}, node_name="n1"),
              "c": entry(["runc"], {"source": "crictl", "runtimes": ["runc"]}, node_name="n2")}
    shared, alone = nl.plan(report, [{"name": "n1"}, {"name": "n2"}])
    assert shared["labels"] == {} and shared["hosts"] == ["a", "b"]
    assert "inventory hosts a and b all map to this Node (gpurt_node_name)" in shared["problems"][0]
    assert alone["labels"] == {P + "runc": "true"} and alone["problems"] == []


def test_the_plan_carries_the_listed_state_that_pins_the_write():
    node = {"name": "n1", "uid": "u1", "labels": {P + "nvidia": "true", "team": "ml"},
            "labels_checked_at": "2026-12-05T09:00:00Z",
            "verified_label_managers": {P + "nvidia": ["kubectl-label (Update)"]}}
    (item,) = nl.plan({"h": entry(["runc"], {"source": "crictl", "runtimes": ["runc"]}, node_name="n1")}, [node])
    assert item["uid"] == "u1"
    assert item["current"] == {"labels": {P + "nvidia": "true"}, "checked_at": "2026-12-05T09:00:00Z",
                               "set_by": {P + "nvidia": ["kubectl-label (Update)"]}}
    # without a uid (nodes not from a cluster) the writer reads the Node itself
    (bare,) = nl.plan({"h": entry(["runc"], node_name="n1")}, [{"name": "n1"}])
    assert "uid" not in bare and "current" not in bare


def result(node="n1", action="labeled", added=(), removed=(), set_by=None, problem=None):
    return {"node": node, "action": action, "added": list(added), "removed": list(removed), "set_by": set_by or {},
            "problem": problem}


def test_lines_name_who_set_a_removed_label():
    plan = [{"name": "n1", "handlers": ["runc"], "source": "node status", "problems": []}]
    line = nl.result_line(result(added=[P + "runc"], removed=[P + "nvidia"],
                                 set_by={P + "nvidia": ["kubectl-label (Update)"]}), plan)
    assert line == ("n1: verified handlers runc (confirmed by node status); labels changed: +runc "
                    "-nvidia (set by kubectl-label (Update))")
    assert "labels would be changed: +runc" in nl.result_line(result(added=[P + "runc"]), plan, True)
    assert nl.result_line(result(action="unchanged"), plan).endswith("; labels unchanged")
    assert nl.result_line(result(action="refreshed"), plan).endswith("; labels unchanged, check time refreshed")


def test_lines_and_failures_of_nodes_not_labeled_as_proven():
    recreated = result(action="recreated", problem="re-created since it was judged (uid u1): not labeled")
    assert nl.result_line(recreated, []) == "n1: re-created since it was judged (uid u1): not labeled"
    module = {"failed": False, "msg": "1 Node(s) not labeled", "problems": ["n1: re-created since it was judged"]}
    assert nl.failures(module) == ["n1: re-created since it was judged"]
    stopped = {"msg": "stopped ...", "problems": [], "stopped": "stopped after 1 of 2 Node(s): 403; not written: n2"}
    assert nl.failures(stopped) == ["labeling stopped after 1 of 2 Node(s): 403; not written: n2"]
    assert nl.failures({"msg": "max_age must be a positive duration", "problems": []}) == [
        "labeling failed: max_age must be a positive duration"]
    assert nl.failures({"changed": False, "nodes": [], "problems": []}) == []


@pytest.mark.parametrize("handler", ["nvidia", "nvidia-cdi", "kata.qemu", "runsc_v2", "a" * 63])
def test_real_handler_names_form_keys(handler):
    assert nl.label_key(handler) == P + handler


def test_plan_needs_the_cluster_nodes():
    with pytest.raises(ValueError, match="gpurt_label_nodes needs the cluster's Nodes"):
        nl.plan({}, None)


@pytest.mark.parametrize("value,seconds", [("24h", 86400), ("90m", 5400), ("2d", 172800), ("3600", 3600), (60, 60)])
def test_ages(value, seconds):
    assert nl.age_seconds(value) == seconds


@pytest.mark.parametrize("value", ["0h", "a day", "-1h", True, "1w"])
def test_bad_ages_name_the_variable(value):
    with pytest.raises(ValueError, match="gpurt_label_max_age"):
        nl.age_seconds(value)


def test_stale_labels():
    now = calendar.timegm(time.strptime("2026-12-05T10:00:00Z", "%Y-%m-%dT%H:%M:%SZ"))
    nodes = [{"name": "old", "labels": {P + "nvidia": "true"}, "labels_checked_at": "2026-12-04T09:00:00Z"},
             {"name": "new", "labels": {P + "nvidia": "true"}, "labels_checked_at": "2026-12-05T09:00:00Z"},
             {"name": "untimed", "labels": {P + "runc": "true"}, "labels_checked_at": None},
             {"name": "unlabeled", "labels": {"team": "ml"}, "labels_checked_at": None}]
    lines = nl.stale(nodes, "24h", now=now)
    assert len(lines) == 2
    assert lines[0].startswith("old: verified labels (%snvidia) were checked at 2026-12-04T09:00:00Z, 1d1h ago" % P)
    assert lines[1].startswith("untimed:")


def test_all_lines_in_one_pass_end_with_what_was_sent():
    plan = [{"name": "n%d" % i, "handlers": ["runc"], "source": "crictl", "problems": []} for i in range(3)]
    module = {"nodes": [result("n0", added=[P + "runc"]), result("n1", action="unchanged"),
                        result("n2", action="refreshed")], "written": 2, "api_requests": 2}
    lines = nl.result_lines(module, plan)
    assert lines == ["n0: verified handlers runc (confirmed by crictl); labels changed: +runc",
                     "n1: verified handlers runc (confirmed by crictl); labels unchanged",
                     "n2: verified handlers runc (confirmed by crictl); labels unchanged, check time refreshed",
                     "wrote 2 of 3 judged Node(s), 2 apiserver request(s)"]
    assert [nl.result_line(entry, plan) for entry in module["nodes"]] == lines[:3]
    assert nl.result_lines({}, plan, True) == ["would write 0 of 3 judged Node(s), 0 apiserver request(s)"]
