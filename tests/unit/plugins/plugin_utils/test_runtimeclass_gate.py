import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _runtimeclass_gate as rg

GPU = {"nvidia.com/gpu.present": "true"}
CPU = {"nvidia.com/gpu.present": "false"}
GPU_TAINT = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def rc(name="nvidia", handler="nvidia", node_selector=None, **extra):
    entry = {"name": name, "handler": handler, "node_selector": node_selector}
    entry.update(extra)
    return entry


def run(labels, runtimes, why=None):
    """A host of this run: labels from the inventory (None: the Node's), its re-audit."""
    out = {"labels": labels, "runtimes": runtimes}
    if why:
        out["why_not_checked"] = why
    return out


def cluster(name, labels=None, handlers=None, taints=None):
    """A Node as node_info returns it; handlers None: status.runtimeHandlers not reported."""
    return {"name": name, "labels": labels or {}, "runtime_handlers": handlers, "taints": taints or []}


def judge(desired, run_nodes=None, cluster_nodes=(), **kwargs):
    return rg.gate(desired, run_nodes or {}, cluster_nodes=list(cluster_nodes), **kwargs)


def only(results):
    assert len(results) == 1
    return results[0]


# ----- nodes of the run ---------------------------------------------------------------

def test_every_selected_node_has_the_handler_is_safe():
    result = only(judge([rc(node_selector=GPU)], {
        "gpu-1": run(GPU, ["nvidia", "runc"]),
        "gpu-2": run(GPU, ["runc", "nvidia"]),
        "cpu-1": run(CPU, ["runc"]),  # not selectable: its lack of nvidia does not matter
    }))
    assert result["safe"] is True and result["decision"] == "write"
    assert result["selected"] == ["gpu-1", "gpu-2"]
    assert (result["lacking"], result["unknown"]) == ([], [])
    assert result["message"] == ("RuntimeClass nvidia (handler nvidia, nodeSelector nvidia.com/gpu.present=true): "
                                 "safe to write: all 2 selectable Node(s) have the handler (gpu-1, gpu-2 by re-audit)")


def test_a_selected_node_without_the_handler_makes_it_unsafe_and_is_named():
    result = only(judge([rc(node_selector=GPU)], {
        "gpu-1": run(GPU, ["nvidia", "runc"]),
        "gpu-2": run(GPU, ["nvidia-cdi", "runc"]),
    }))
    assert (result["safe"], result["decision"]) == (False, "refused")
    assert result["lacking"] == ["gpu-2"]
    assert result["loaded"] == {"gpu-2": ["nvidia-cdi", "runc"]}
    assert result["message"].endswith("not safe to write: of 2 selectable Node(s), lacking handler nvidia: "
                                      "gpu-2 (re-audit: nvidia-cdi, runc)")


def test_a_run_node_that_was_not_re_audited_is_unknown_whatever_its_kubelet_reports():
    result = only(judge([rc(node_selector=GPU)], {
        "gpu-1": run(GPU, ["nvidia"]),
        "gpu-2": run(GPU, None, why="failed or unreachable during remediation"),
        "gpu-3": run(GPU, None),
    }, [cluster("gpu-2", GPU, ["nvidia"])]))
    assert result["safe"] is False
    assert result["unknown"] == ["gpu-2", "gpu-3"]
    assert "unknown: gpu-2 (failed or unreachable during remediation), gpu-3 (not re-audited in this run)" \
        in result["message"]


def test_an_unknown_node_the_selector_excludes_does_not_matter():
    result = only(judge([rc(node_selector=GPU)], {"gpu-1": run(GPU, ["nvidia"]), "cpu-1": run(CPU, None)}))
    assert result["safe"] is True
    assert result["selected"] == ["gpu-1"]


def test_unknown_labels_are_assumed_selectable():
    result = only(judge([rc(node_selector=GPU)], {"gpu-1": run(GPU, ["nvidia"]), "mystery": run(None, ["runc"])}))
    assert result["selected"] == ["gpu-1", "mystery"]
    assert result["assumed_selectable"] == ["mystery"]
    assert result["lacking"] == ["mystery"]
    assert result["safe"] is False


# ----- the rest of the cluster --------------------------------------------------------

def test_a_node_outside_the_run_without_the_handler_blocks_and_is_named():
    # The issue: --limit to two hosts; four more Nodes the class can select lack nvidia-cdi.
    others = [cluster("b%d" % index, GPU, ["nvidia", "runc"]) for index in range(4)]
    result = only(judge([rc("nvidia-cdi", "nvidia-cdi", GPU)], {
        "a21": run(None, ["nvidia", "nvidia-cdi", "runc"]), "b17": run(None, ["nvidia", "nvidia-cdi", "runc"]),
    }, others + [cluster("a21", GPU, None), cluster("b17", GPU, None)]))
    assert result["safe"] is False
    assert result["selected"] == ["a21", "b0", "b1", "b17", "b2", "b3"]
    assert result["lacking"] == ["b0", "b1", "b2", "b3"]
    assert result["evidence"]["b0"] == "status.runtimeHandlers"
    assert result["evidence"]["a21"] == "re-audit"
    assert "lacking handler nvidia-cdi: b0 (status.runtimeHandlers: nvidia, runc)" in result["message"]


def test_a_node_outside_the_run_that_reports_the_handler_counts():
    result = only(judge([rc(node_selector=GPU)], {"gpu-1": run(None, ["nvidia"])},
                        [cluster("gpu-1", GPU), cluster("gpu-9", GPU, ["nvidia", "runc"])]))
    assert result["safe"] is True
    assert result["message"].endswith("(gpu-1 by re-audit; gpu-9 by status.runtimeHandlers)")


def test_a_node_outside_the_run_that_reports_nothing_is_unknown_and_blocks_unless_force():
    nodes = [cluster("old-1", GPU, None)]
    result = only(judge([rc(node_selector=GPU)], {"gpu-1": run(GPU, ["nvidia"])}, nodes))
    assert (result["safe"], result["decision"]) == (False, "refused")
    assert result["unknown"] == ["old-1"]
    assert "old-1 (not in this run and its kubelet reports no status.runtimeHandlers)" in result["message"]

    forced = only(judge([rc(node_selector=GPU)], {"gpu-1": run(GPU, ["nvidia"])}, nodes, force=True))
    assert (forced["safe"], forced["decision"]) == (False, "write")
    assert "written despite the gate (force): of 2 selectable Node(s), unknown: old-1" in forced["message"]


def test_inventory_labels_win_over_the_node_object():
    result = only(judge([rc(node_selector=GPU)], {"gpu-1": run(GPU, ["nvidia"])}, [cluster("gpu-1", CPU)]))
    assert result["selected"] == ["gpu-1"]
    result = only(judge([rc(node_selector=GPU)], {"gpu-1": run(None, ["runc"])}, [cluster("gpu-1", CPU)]))
    assert result["selected"] == []  # the Node object's labels: not selectable


def test_cluster_not_listed_is_never_safe():
    result = only(rg.gate([rc()], {"gpu-1": run(GPU, ["nvidia"])}, cluster_nodes=None))
    assert result["safe"] is False
    assert "the cluster's Nodes were not listed" in result["message"]


# ----- taints and tolerations ---------------------------------------------------------

def test_a_tainted_node_the_class_does_not_tolerate_cannot_be_selected():
    control_plane = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
    nodes = [cluster("control-plane", {}, ["runc"], [control_plane]),
             cluster("gpu-1", GPU, ["nvidia", "runc"], [GPU_TAINT])]
    result = only(judge([rc(tolerations=[GPU_TOLERATION])], {}, nodes))
    assert result["selected"] == ["gpu-1"]
    assert result["tainted_out"] == {"control-plane": ["node-role.kubernetes.io/control-plane:NoSchedule"]}
    assert result["safe"] is True

    # Without the toleration the class cannot land on the GPU Node either: it selects nothing.
    result = only(judge([rc()], {}, nodes))
    assert result["selected"] == [] and result["safe"] is False


def test_prefer_no_schedule_and_transient_taints_do_not_keep_pods_off():
    nodes = [cluster("gpu-1", GPU, ["runc"], [{"key": "x", "effect": "PreferNoSchedule"},
                                              {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                                              {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}])]
    result = only(judge([rc()], {}, nodes))
    assert result["selected"] == ["gpu-1"]
    assert result["lacking"] == ["gpu-1"]


@pytest.mark.parametrize("toleration, taint, tolerated", [
    ({"key": "k", "operator": "Exists"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
    ({"key": "k", "value": "v"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, True),
    ({"key": "k", "operator": "Equal", "value": "w"}, {"key": "k", "value": "v", "effect": "NoSchedule"}, False),
    ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, {"key": "k", "effect": "NoSchedule"}, False),
    ({"operator": "Exists"}, {"key": "anything", "effect": "NoExecute"}, True),
    ({"key": "", "operator": "Equal"}, {"key": "anything", "effect": "NoExecute"}, False),
    ({"key": "other", "operator": "Exists"}, {"key": "k", "effect": "NoSchedule"}, False),
])
def test_toleration_matching(toleration, taint, tolerated):
    assert rg.tolerates(toleration, taint) is tolerated


# ----- the default list ---------------------------------------------------------------

def test_default_entries_leave_existing_runtimeclasses_alone():
    live = [{"name": "nvidia", "handler": "nvidia"}, {"name": "gpu-cdi", "handler": "nvidia-cdi"}]
    results = judge([rc("nvidia"), rc("nvidia-cdi", "nvidia-cdi"), rc("kata", "kata")],
                    {"gpu-1": run(None, ["nvidia", "nvidia-cdi", "kata"])}, [cluster("gpu-1")],
                    live_runtimeclasses=live, defaults=True)
    assert [(r["name"], r["decision"]) for r in results] == [
        ("nvidia", "left_alone"), ("nvidia-cdi", "left_alone"), ("kata", "write")]
    assert results[0]["message"].endswith("left alone: RuntimeClass nvidia exists (handler nvidia); the default "
                                          "list does not rewrite it")
    assert "RuntimeClass gpu-cdi already serves handler nvidia-cdi" in results[1]["message"]


def test_named_entries_are_written_even_when_they_exist():
    results = judge([rc()], {"gpu-1": run(None, ["nvidia"])}, [cluster("gpu-1")],
                    live_runtimeclasses=[{"name": "nvidia", "handler": "nvidia"}])
    assert results[0]["decision"] == "write"


def test_defaults_without_the_live_list_write_nothing():
    result = only(judge([rc()], {"gpu-1": run(None, ["nvidia"])}, [cluster("gpu-1")], defaults=True))
    assert result["decision"] == "left_alone"
    assert "were not listed" in result["message"]


# ----- shapes of input ----------------------------------------------------------------

def test_no_selector_selects_every_node():
    result = only(judge([rc()], {"gpu-1": run(GPU, ["nvidia"]), "cpu-1": run({}, ["runc"])}))
    assert result["selected"] == ["cpu-1", "gpu-1"]
    assert result["lacking"] == ["cpu-1"]
    assert result["assumed_selectable"] == []
    assert result["safe"] is False
    assert "nodeSelector none" in result["message"]


def test_selecting_no_node_is_not_safe():
    result = only(judge([rc(node_selector={"pool": "gpu-a100"})], {"gpu-1": run(GPU, ["nvidia"])}))
    assert result["selected"] == []
    assert result["safe"] is False
    assert "selects none of the 1 Node(s)" in result["message"]


def test_no_nodes_at_all_is_not_safe():
    assert only(judge([rc()], {}))["safe"] is False


def test_multi_term_selector_needs_every_term():
    selector = {"nvidia.com/gpu.present": "true", "pool": "a100"}
    result = only(judge([rc(node_selector=selector)], {
        "a100-1": run({"nvidia.com/gpu.present": "true", "pool": "a100"}, ["nvidia"]),
        "t4-1": run({"nvidia.com/gpu.present": "true", "pool": "t4"}, ["runc"]),
    }))
    assert result["selected"] == ["a100-1"]
    assert result["safe"] is True


def test_results_follow_the_desired_order_and_judge_each_class_alone():
    results = judge([rc("nvidia-cdi", "nvidia-cdi", GPU), rc("nvidia", "nvidia", GPU)], {
        "gpu-1": run(GPU, ["nvidia", "nvidia-cdi"]),
        "gpu-2": run(GPU, ["nvidia"]),
    })
    assert [(r["name"], r["safe"], r["lacking"]) for r in results] == [
        ("nvidia-cdi", False, ["gpu-2"]), ("nvidia", True, [])]


def test_empty_runtime_list_is_checked_and_lacking():
    result = only(judge([rc()], {"gpu-1": run(GPU, [])}))
    assert result["lacking"] == ["gpu-1"]
    assert result["unknown"] == []
    assert "gpu-1 (re-audit: none)" in result["message"]


def test_extra_fields_of_desired_entries_are_allowed():
    result = only(judge([rc(overhead={"cpu": "250m"}, tolerations=[], labels={"a": "b"}, force=True)],
                        {"gpu-1": run(GPU, ["nvidia"])}))
    assert result["safe"] is True


@pytest.mark.parametrize("desired, run_nodes, cluster_nodes, message", [
    ("nvidia", {}, [], "desired RuntimeClasses must be a list"),
    (["nvidia"], {}, [], "desired RuntimeClass #1 is not a mapping"),
    ([{"handler": "nvidia"}], {}, [], "desired RuntimeClass #1 has no name"),
    ([{"name": "nvidia"}], {}, [], "desired RuntimeClass nvidia has no handler"),
    ([rc(), rc()], {}, [], "desired RuntimeClass nvidia is listed twice"),
    ([rc(node_selector="a=b")], {}, [], "node_selector must be a mapping"),
    ([rc(tolerations="x")], {}, [], "tolerations must be a list of mappings"),
    ([rc()], [], [], "run_nodes must be a mapping"),
    ([rc()], {"n": ["nvidia"]}, [], "run node n is not a mapping"),
    ([rc()], {"n": {"labels": "a=b", "runtimes": []}}, [], "run node n: labels must be a mapping or null"),
    ([rc()], {"n": {"labels": {}, "runtimes": "nvidia"}}, [], "run node n: runtimes must be a list or null"),
    ([rc()], {}, {"n": {}}, "cluster_nodes must be the list node_info returns"),
    ([rc()], {}, [{"labels": {}}], "cluster Node #1 has no name"),
    ([rc()], {}, [{"name": "n", "runtime_handlers": "nvidia"}], "cluster Node n: runtime_handlers must be a list"),
])
def test_bad_input_raises_gate_error(desired, run_nodes, cluster_nodes, message):
    with pytest.raises(rg.GateError, match=message):
        rg.gate(desired, run_nodes, cluster_nodes=cluster_nodes)
