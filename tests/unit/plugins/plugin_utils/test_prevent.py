"""prevent.yml's planning (plugin_utils/_prevent): the selector gate and the admission parameters,
both derived from the verified labels on the Nodes."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _prevent

P = "runtime-gate.gpurt.io/"


def node(name, *handlers, **labels):
    out = {"kubernetes.io/hostname": name}
    out.update(labels)
    out.update((P + h, "true") for h in handlers)
    return {"name": name, "labels": out}


def rc(name, handler, selector=None):
    return {"name": name, "handler": handler, "node_selector": selector or {}}


NODES = [node("gpu-1", "nvidia", "runc", pool="gpu"), node("gpu-2", "runc", pool="gpu"), node("cpu-1", "runc")]


def test_default_gates_every_class_whose_handler_a_node_verified():
    plan = _prevent.gate([rc("nvidia", "nvidia"), rc("kata", "kata-qemu"), rc("runc", "runc")], NODES)
    assert [(p["name"], p["decision"]) for p in plan] == [("nvidia", "write"), ("runc", "write")]
    assert plan[0]["node_selector"] == {P + "nvidia": "true"} and plan[0]["matching"] == ["gpu-1"]


def test_the_selector_is_merged_and_a_class_matching_no_node_is_refused():
    plan = _prevent.gate([rc("nvidia-cpu", "nvidia", {"pool": "cpu"}), rc("nvidia-gpu", "nvidia", {"pool": "gpu"})],
                         NODES, ["nvidia-cpu", "nvidia-gpu"])
    assert plan[0]["decision"] == "refused" and "no Node would match" in plan[0]["message"]
    assert "verified on gpu-1" in plan[0]["message"]
    assert plan[1]["decision"] == "write" and plan[1]["node_selector"] == {"pool": "gpu", P + "nvidia": "true"}


def test_already_gated_is_unchanged_and_a_conflicting_value_is_refused():
    plan = _prevent.gate([rc("a", "nvidia", {P + "nvidia": "true"}), rc("b", "nvidia", {P + "nvidia": "false"})],
                         NODES, ["a", "b", "missing"])
    assert [p["decision"] for p in plan] == ["unchanged", "refused", "refused"]
    assert "no such RuntimeClass" in plan[2]["message"]


def test_admission_params_hold_each_verified_nodes_labels():
    data = _prevent.admission_params(NODES)
    assert data["loaded"] == "nvidia, runc"
    assert data["handler.nvidia"] == ",".join("%s=%s" % kv for kv in sorted(NODES[0]["labels"].items()))
    assert len(data["handler.runc"].split("\n")) == 3


@pytest.mark.parametrize("mode,names", [("strict", None), ("warn", "nvidia"), ("deny", [""])])
def test_bad_inputs_name_the_variable(mode, names):
    with pytest.raises(_prevent.PreventError, match="gpurt_admission_mode|gpurt_gate_runtimeclasses"):
        _prevent.validate_inputs(mode, names)
