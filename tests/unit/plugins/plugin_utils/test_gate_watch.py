"""The event-driven gate's decisions (plugin_utils/_gate_watch), without I/O: what is fenced at once,
what is re-audited once stable, in batches no larger than max_concurrent, and what is never done
(fence on silence, fence twice, drop a due Node)."""
import time

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.node_fence import fence_patch
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._gate_watch.options import source_options
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._gate_watch.signals import NodeView, change_reasons
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._gate_watch.watcher import GateWatcher

PREFIX = "runtime-gate.gpurt.io/"
NOW = 1_800_000_000.0


def node(name, live=("runc", "nvidia"), labels=("runc", "nvidia"), uid=None, checked=NOW, boot="b1", ready=True,
         runtime="containerd://2.3.7"):
    status = {"nodeInfo": {"bootID": boot, "containerRuntimeVersion": runtime, "kubeletVersion": "v1.37.2"},
              "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    if live is not None:
        status["runtimeHandlers"] = [{"name": h} for h in [""] + list(live)]
    annotations = {}
    if checked is not None:
        annotations[PREFIX + "checked-at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(checked))
    return {"metadata": {"name": name, "uid": uid or "uid-" + name, "annotations": annotations,
                         "labels": dict((PREFIX + h, "true") for h in labels)}, "status": status}


def watcher(settle=10, max_concurrent=2, max_age=86400):
    w = GateWatcher(settle, max_concurrent, max_age)
    return w


def fenced_names(fences):
    return [(view.name, handlers) for view, handlers in fences]


def test_a_lost_labeled_handler_is_fenced_at_once_and_re_audited_once_stable():
    w = watcher()
    assert w.relisted([node("gpu-a"), node("gpu-b")], NOW) == []
    fences = w.observe("MODIFIED", node("gpu-a", live=("runc",)), NOW + 1)
    assert fenced_names(fences) == [("gpu-a", ["nvidia"])]
    event = w.fenced(fences[0][0], ["nvidia"], {"action": "fenced", "removed": [PREFIX + "nvidia"]}, NOW + 1)
    assert event == {"type": "handler_lost", "node": "gpu-a", "handlers": ["nvidia"], "live_handlers": ["runc"],
                     "fence": "fenced", "detail": ""}
    # the watch shows the fence's own write; not yet stable: nothing to re-audit
    assert w.observe("MODIFIED", node("gpu-a", live=("runc",), labels=("runc",)), NOW + 1.1) == []
    assert w.tick(NOW + 5) == ([], [])
    _fences, batches = w.tick(NOW + 11.5)
    assert batches == [{"type": "node_changed", "nodes": ["gpu-a"], "reasons": {"gpu-a": ["lost handler nvidia"]}}]
    assert w.tick(NOW + 30) == ([], [])


def test_a_flapping_node_is_fenced_once_and_re_audited_once_after_it_settles():
    w = watcher(settle=10)
    w.relisted([node("gpu-a")], NOW)
    fences_made, t = 0, NOW
    labels = ("runc", "nvidia")
    for flap in range(5):
        t += 2
        fences = w.observe("MODIFIED", node("gpu-a", live=("runc",), labels=labels), t)
        for view, handlers in fences:
            fences_made += 1
            w.fenced(view, handlers, {"action": "fenced"}, t)
            labels = ("runc",)  # the fence took the label
        assert w.tick(t)[1] == []
        t += 2
        w.observe("MODIFIED", node("gpu-a", live=("runc", "nvidia"), labels=labels), t)
        assert w.tick(t)[1] == []
    assert fences_made == 1
    _f, batches = w.tick(t + 10.1)
    assert [b["nodes"] for b in batches] == [["gpu-a"]]
    assert w.tick(t + 60) == ([], [])


def test_silence_never_fences_and_each_silent_node_is_named_once():
    w = watcher()
    assert w.relisted([node("old-1x", live=None)], NOW) == []
    named = set()
    assert w.take_silent(named) == ["old-1x"]
    assert w.observe("MODIFIED", node("old-1x", live=None, labels=("nvidia",)), NOW + 1) == []
    assert w.take_silent(named) == []
    # it speaks, then falls silent again: named again
    w.observe("MODIFIED", node("old-1x", live=("nvidia",), labels=("nvidia",)), NOW + 2)
    assert w.take_silent(named) == []
    w.observe("MODIFIED", node("old-1x", live=None, labels=("nvidia",)), NOW + 3)
    assert w.take_silent(named) == ["old-1x"]


def test_a_hundred_nodes_changing_at_once_leave_in_batches_of_max_concurrent_and_none_is_dropped():
    w = watcher(settle=5, max_concurrent=7)
    names = ["gpu-%03d" % i for i in range(100)]
    w.relisted([node(n) for n in names], NOW)
    for n in names:
        w.observe("MODIFIED", node(n, boot="b2"), NOW + 1)
    _f, batches = w.tick(NOW + 7)
    assert all(len(b["nodes"]) <= 7 for b in batches)
    assert sorted(n for b in batches for n in b["nodes"]) == names
    assert batches[0]["reasons"][batches[0]["nodes"][0]] == ["bootID changed (b1 -> b2)"]


def test_the_first_list_re_audits_nothing_but_a_relist_sees_what_changed_in_the_gap():
    w = watcher(settle=0)
    w.relisted([node("gpu-a"), node("gpu-b")], NOW)
    assert w.tick(NOW)[1] == []
    # after a 410: gpu-a rebooted, gpu-b is gone, gpu-c is new
    w.relisted([node("gpu-a", boot="b2"), node("gpu-c")], NOW + 1)
    _f, batches = w.tick(NOW + 1)
    assert batches[0]["reasons"] == {"gpu-a": ["bootID changed (b1 -> b2)"], "gpu-c": ["new Node"]}
    assert "gpu-b" not in w.nodes


def test_stale_labels_are_re_audited_once_per_check_time():
    w = watcher(settle=10, max_age=3600)
    w.relisted([node("gpu-a", checked=NOW - 7200), node("gpu-b", checked=NOW - 60), node("gpu-c", checked=None)], NOW)
    _f, batches = w.tick(NOW)
    assert batches == [{"type": "label_stale", "nodes": ["gpu-a", "gpu-c"], "reasons": {
        "gpu-a": ["verified labels checked at %s, older than the maximum age" % time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 7200))],
        "gpu-c": ["verified labels carry no readable check time"]}}]
    assert w.tick(NOW + 1)[1] == []


def test_a_recreated_node_is_not_fenced_on_the_old_ones_labels_and_is_re_audited():
    w = watcher(settle=0)
    w.relisted([node("gpu-a")], NOW)
    fences = w.observe("MODIFIED", node("gpu-a", uid="new", live=("runc",), labels=()), NOW + 1)
    assert fences == []
    assert w.tick(NOW + 1)[1][0]["reasons"] == {"gpu-a": ["re-created (new uid)"]}


def test_a_failed_fence_is_tried_again():
    w = watcher()
    w.relisted([node("gpu-a")], NOW)
    view, handlers = w.observe("MODIFIED", node("gpu-a", live=("runc",)), NOW + 1)[0]
    event = w.fenced(view, handlers, {"action": "failed", "detail": "503"}, NOW + 1)
    assert event["fence"] == "failed" and event["detail"] == "503"
    assert w.tick(NOW + 2)[0] == []
    assert fenced_names(w.tick(NOW + 7)[0]) == [("gpu-a", ["nvidia"])]


def test_change_reasons():
    old = NodeView(node("n", live=("runc",), ready=False))
    new = NodeView(node("n", live=("runc", "nvidia", "kata"), ready=True, runtime="containerd://2.4.0"))
    assert change_reasons(old, new) == ["lists handlers kata, nvidia",
                                        "containerRuntimeVersion changed (containerd://2.3.7 -> containerd://2.4.0)",
                                        "Ready again"]
    assert change_reasons(new, new) == []


def test_the_fence_patch_is_pinned_to_the_uid_and_each_label():
    obj = node("gpu-a")
    assert fence_patch(obj, ["nvidia", "kata"]) == [
        {"op": "test", "path": "/metadata/uid", "value": "uid-gpu-a"},
        {"op": "test", "path": "/metadata/labels/runtime-gate.gpurt.io~1nvidia", "value": "true"},
        {"op": "remove", "path": "/metadata/labels/runtime-gate.gpurt.io~1nvidia"}]
    assert fence_patch(obj, ["kata"]) is None


@pytest.mark.parametrize("args, message", [
    ({"gpurt_watch_settle": "soon"}, "gpurt_watch_settle must be a number"),
    ({"gpurt_watch_max_concurrent": 0}, "gpurt_watch_max_concurrent must be at least 1"),
    ({"gpurt_watch_max_concurrent": 2.5}, "gpurt_watch_max_concurrent must be an integer"),
    ({"gpurt_label_max_age": "yesterday"}, "gpurt_label_max_age must be a positive duration"),
    ({"gpurt_kubeconfg": "/x"}, "unknown argument gpurt_kubeconfg"),
    ({"gpurt_k8s_validate_certs": "maybe"}, "gpurt_k8s_validate_certs must be true or false"),
])
def test_bad_source_arguments_are_named(args, message):
    with pytest.raises(ValueError) as info:
        source_options(args)
    assert message in str(info.value)


def test_source_arguments_unset_when_empty_and_never_echo_a_token():
    options = source_options({"gpurt_kubeconfig": "", "gpurt_k8s_api_key": None, "gpurt_context": "ctx",
                              "gpurt_k8s_validate_certs": "false", "gpurt_watch_settle": "2.5"})
    assert options["auth"] == {"context": "ctx", "validate_certs": False}
    assert options["settle"] == 2.5 and options["max_concurrent"] == 5 and options["max_age"] == 86400
    with pytest.raises(ValueError) as info:
        source_options({"gpurt_k8s_api_key": ["s3cr3t-token"]})
    assert "s3cr3t" not in str(info.value)
