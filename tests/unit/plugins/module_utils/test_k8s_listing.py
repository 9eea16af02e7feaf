"""The list modules' listings as plain functions (params, warn) -> result, as both the module and,
on the controller, its action plugin run them. From manifests: no cluster, no Ansible."""
import pytest
import yaml

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import listing as k8s_listing


def params(spec, **values):
    """The validated params of spec: every option at its default, then values."""
    out = dict((name, option.get("default")) for name, option in spec.items())
    out.update(values)
    return out


def write_manifests(path, *objects):
    path.write_text(yaml.safe_dump_all(list(objects)))
    return str(path)


NVIDIA = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "nvidia"}
BROKEN = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "broken"}}
GPU_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-1", "labels": {"pool": "gpu"}}}
CPU_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu-1", "labels": {"pool": "cpu"}}}


def test_runtimeclass_info_from_manifests_contacts_no_cluster(tmp_path):
    src = write_manifests(tmp_path / "rc.yaml", NVIDIA)
    warnings = []
    result = k8s_listing.runtimeclass_info(params(k8s_listing.RUNTIMECLASS_INFO_SPEC, src=src), warnings.append)
    assert [item["name"] for item in result["runtimeclasses"]] == ["nvidia"]
    assert result["source"] == src
    assert (result["api_requests"], result["api_list_calls"], result["invalid"]) == (0, 0, [])
    assert "nodes" not in result and warnings == []


def test_an_invalid_object_fails_the_listing_with_what_was_read(tmp_path):
    src = write_manifests(tmp_path / "rc.yaml", NVIDIA, BROKEN)
    with pytest.raises(k8s_listing.ListFailed) as raised:
        k8s_listing.runtimeclass_info(params(k8s_listing.RUNTIMECLASS_INFO_SPEC, src=src), [].append)
    assert raised.value.msg.startswith("1 invalid RuntimeClass object(s) from %s: " % src)
    assert "broken" in raised.value.msg
    assert raised.value.result["source"] == src
    assert len(raised.value.result["invalid"]) == 1


def test_on_invalid_warn_leaves_the_object_out_and_warns(tmp_path):
    src = write_manifests(tmp_path / "rc.yaml", NVIDIA, BROKEN)
    warnings = []
    result = k8s_listing.runtimeclass_info(params(k8s_listing.RUNTIMECLASS_INFO_SPEC, src=src, on_invalid="warn"),
                                           warnings.append)
    assert [item["name"] for item in result["runtimeclasses"]] == ["nvidia"]
    assert len(warnings) == 1 and warnings[0].startswith("left out: ") and "broken" in warnings[0]


def test_node_info_filters_by_label_and_name_and_warns_for_a_missing_name(tmp_path):
    src = write_manifests(tmp_path / "nodes.yaml", GPU_NODE, CPU_NODE)
    warnings = []
    result = k8s_listing.node_info(params(k8s_listing.NODE_INFO_SPEC, src=src, label_selector="pool=gpu",
                                          names=["gpu-1", "gpu-9"]), warnings.append)
    assert [item["name"] for item in result["nodes"]] == ["gpu-1"]
    assert result["names_not_found"] == ["gpu-9"]
    assert warnings == ["no Node named gpu-9"]


def test_a_missing_manifest_is_a_failed_listing_not_a_traceback(tmp_path):
    with pytest.raises(k8s_listing.ListFailed) as raised:
        k8s_listing.node_info(params(k8s_listing.NODE_INFO_SPEC, src=str(tmp_path / "absent.yaml")), [].append)
    assert "absent.yaml" in raised.value.msg


def test_every_list_module_has_its_listing():
    assert sorted(k8s_listing.LISTINGS) == ["node_info", "runtimeclass_info"]
    for spec, listing in k8s_listing.LISTINGS.values():
        assert "src" in spec and callable(listing)
