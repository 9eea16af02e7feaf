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
def test_a_handler_that_cannot_form_a_label_key_fails_the_whole_plan(handler):
    report = {"good": entry(["runc"], {"source": "crictl", "runtimes": ["runc"]}, node_name="n0"),
              "bad": entry(["runc", handler], {"source": "crictl", "runtimes": ["runc", handler]}, node_name="n1")}
    with pytest.raises(ValueError) as info:
        nl.plan(report, [{"name": "n0"}, {"name": "n1"}])
    assert "no label written" in str(info.value) and repr(handler) in str(info.value)


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
