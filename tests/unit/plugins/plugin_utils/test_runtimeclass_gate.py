import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import runtimeclass_gate as rg

GPU = {"nvidia.com/gpu.present": "true"}


def rc(name="nvidia", handler="nvidia", node_selector=None, **extra):
    entry = {"name": name, "handler": handler, "node_selector": node_selector}
    entry.update(extra)
    return entry


def node(labels, runtimes, why=None):
    out = {"labels": labels, "runtimes": runtimes}
    if why:
        out["why_not_checked"] = why
    return out


def only(results):
    assert len(results) == 1
    return results[0]


def test_every_selected_node_has_the_handler_is_safe():
    result = only(rg.gate([rc(node_selector=GPU)], {
        "gpu-1": node(GPU, ["nvidia", "runc"]),
        "gpu-2": node(GPU, ["runc", "nvidia"]),
        "cpu-1": node({}, ["runc"]),  # not selectable: its lack of nvidia does not matter
    }))
    assert result["safe"] is True
    assert result["selected"] == ["gpu-1", "gpu-2"]
    assert (result["lacking"], result["not_checked"]) == ([], [])
    assert result["message"].startswith("RuntimeClass nvidia (handler nvidia, nodeSelector "
                                        "nvidia.com/gpu.present=true): safe to create")


def test_a_selected_node_without_the_handler_makes_it_unsafe_and_is_named():
    result = only(rg.gate([rc(node_selector=GPU)], {
        "gpu-1": node(GPU, ["nvidia", "runc"]),
        "gpu-2": node(GPU, ["nvidia-cdi", "runc"]),
    }))
    assert result["safe"] is False
    assert result["lacking"] == ["gpu-2"]
    assert result["loaded"] == {"gpu-2": ["nvidia-cdi", "runc"]}
    assert "lacking handler nvidia: gpu-2 (loaded: nvidia-cdi, runc)" in result["message"]
    assert "not safe to create" in result["message"]


def test_a_selected_node_that_was_not_checked_makes_it_unsafe():
    result = only(rg.gate([rc(node_selector=GPU)], {
        "gpu-1": node(GPU, ["nvidia"]),
        "gpu-2": node(GPU, None, why="remediation failed"),
        "gpu-3": node(GPU, None),
    }))
    assert result["safe"] is False
    assert result["not_checked"] == ["gpu-2", "gpu-3"]
    assert result["lacking"] == []
    assert "not checked: gpu-2 (remediation failed), gpu-3 (not checked)" in result["message"]


def test_an_unchecked_node_the_selector_excludes_does_not_matter():
    result = only(rg.gate([rc(node_selector=GPU)], {
        "gpu-1": node(GPU, ["nvidia"]),
        "cpu-1": node({"nvidia.com/gpu.present": "false"}, None),
    }))
    assert result["safe"] is True
    assert result["selected"] == ["gpu-1"]


def test_unknown_labels_are_assumed_selectable():
    # Same semantics as findings.selector_matches: better checked than silently passed.
    result = only(rg.gate([rc(node_selector=GPU)], {
        "gpu-1": node(GPU, ["nvidia"]),
        "mystery": node(None, ["runc"]),
    }))
    assert result["selected"] == ["gpu-1", "mystery"]
    assert result["assumed_selectable"] == ["mystery"]
    assert result["lacking"] == ["mystery"]
    assert result["safe"] is False


def test_no_selector_selects_every_node():
    result = only(rg.gate([rc()], {
        "gpu-1": node(GPU, ["nvidia"]),
        "cpu-1": node({}, ["runc"]),
    }))
    assert result["selected"] == ["cpu-1", "gpu-1"]
    assert result["lacking"] == ["cpu-1"]
    assert result["assumed_selectable"] == []
    assert result["safe"] is False
    assert "nodeSelector none" in result["message"]


def test_selecting_no_node_is_not_safe():
    result = only(rg.gate([rc(node_selector={"pool": "gpu-a100"})], {
        "gpu-1": node(GPU, ["nvidia"]),
    }))
    assert result["selected"] == []
    assert result["safe"] is False
    assert "selects none of the 1 node(s)" in result["message"]


def test_no_nodes_at_all_is_not_safe():
    assert only(rg.gate([rc()], {}))["safe"] is False


def test_multi_term_selector_needs_every_term():
    selector = {"nvidia.com/gpu.present": "true", "pool": "a100"}
    result = only(rg.gate([rc(node_selector=selector)], {
        "a100-1": node({"nvidia.com/gpu.present": "true", "pool": "a100"}, ["nvidia"]),
        "t4-1": node({"nvidia.com/gpu.present": "true", "pool": "t4"}, ["runc"]),
    }))
    assert result["selected"] == ["a100-1"]
    assert result["safe"] is True


def test_results_follow_the_desired_order_and_judge_each_class_alone():
    results = rg.gate([rc("nvidia-cdi", "nvidia-cdi", GPU), rc("nvidia", "nvidia", GPU)], {
        "gpu-1": node(GPU, ["nvidia", "nvidia-cdi"]),
        "gpu-2": node(GPU, ["nvidia"]),
    })
    assert [(r["name"], r["safe"], r["lacking"]) for r in results] == [
        ("nvidia-cdi", False, ["gpu-2"]), ("nvidia", True, [])]


def test_empty_runtime_list_is_checked_and_lacking():
    result = only(rg.gate([rc()], {"gpu-1": node(GPU, [])}))
    assert result["lacking"] == ["gpu-1"]
    assert result["not_checked"] == []
    assert "gpu-1 (loaded: none)" in result["message"]


def test_extra_fields_of_desired_entries_are_allowed():
    result = only(rg.gate([rc(overhead={"cpu": "250m"}, tolerations=[], labels={"a": "b"})],
                          {"gpu-1": node(GPU, ["nvidia"])}))
    assert result["safe"] is True


@pytest.mark.parametrize("desired, nodes, message", [
    ("nvidia", {}, "desired RuntimeClasses must be a list"),
    (["nvidia"], {}, "desired RuntimeClass #1 is not a mapping"),
    ([{"handler": "nvidia"}], {}, "desired RuntimeClass #1 has no name"),
    ([{"name": "nvidia"}], {}, "desired RuntimeClass nvidia has no handler"),
    ([rc(), rc()], {}, "desired RuntimeClass nvidia is listed twice"),
    ([rc(node_selector="a=b")], {}, "node_selector must be a mapping"),
    ([rc()], [], "nodes must be a mapping"),
    ([rc()], {"n": ["nvidia"]}, "node n is not a mapping"),
    ([rc()], {"n": {"labels": "a=b", "runtimes": []}}, "node n: labels must be a mapping or null"),
    ([rc()], {"n": {"labels": {}, "runtimes": "nvidia"}}, "node n: runtimes must be a list or null"),
])
def test_bad_input_raises_gate_error(desired, nodes, message):
    with pytest.raises(rg.GateError, match=message):
        rg.gate(desired, nodes)
