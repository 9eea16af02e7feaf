import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import objects as rc


def runtimeclass(name, handler, **extra):
    obj = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": handler}
    obj.update(extra)
    return obj


# ----- normalize_runtimeclass ---------------------------------------------------------

def test_runtimeclass_with_every_field():
    obj = runtimeclass(
        "nvidia", "nvidia-cdi",
        overhead={"podFixed": {"cpu": "250m", "memory": "64Mi"}},
        scheduling={"nodeSelector": {"nvidia.com/gpu.present": "true"},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
    )
    assert rc.normalize_runtimeclass(obj, "cluster") == {
        "name": "nvidia",
        "handler": "nvidia-cdi",
        "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
        "node_selector": {"nvidia.com/gpu.present": "true"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "source": "cluster",
        "uid": None,
    }


def test_runtimeclass_without_optional_fields_gets_empty_defaults():
    item = rc.normalize_runtimeclass({"metadata": {"name": "kata"}, "handler": "kata"}, "a.yaml")
    assert item["overhead"] is None
    assert item["node_selector"] == {}
    assert item["tolerations"] == []
    assert item["source"] == "a.yaml"


def test_runtimeclass_overhead_without_podfixed_is_an_empty_map():
    item = rc.normalize_runtimeclass(runtimeclass("x", "x", overhead={}), "cluster")
    assert item["overhead"] == {"podFixed": {}}


def test_runtimeclass_without_handler_names_the_object_and_source():
    with pytest.raises(ValueError) as err:
        rc.normalize_runtimeclass({"metadata": {"name": "nvidia"}}, "rc.yaml, document 2")
    assert str(err.value) == "RuntimeClass 'nvidia' (from rc.yaml, document 2) has no handler"


@pytest.mark.parametrize("handler,words", [
    ("", "has no handler"), (None, "has no handler"), (5, "handler must be a string, got an integer: 5")])
def test_runtimeclass_with_empty_or_non_string_handler_is_invalid(handler, words):
    with pytest.raises(ValueError, match=words):
        rc.normalize_runtimeclass(runtimeclass("nvidia", handler), "cluster")


@pytest.mark.parametrize("metadata", [None, {}, {"name": ""}, "nvidia"])
def test_runtimeclass_without_name_is_invalid(metadata):
    with pytest.raises(ValueError) as err:
        rc.normalize_runtimeclass({"metadata": metadata, "handler": "nvidia"}, "cluster")
    assert "has no metadata.name" in str(err.value)
    assert "cluster" in str(err.value)


def test_runtimeclass_that_is_not_a_mapping_is_invalid():
    with pytest.raises(ValueError, match="RuntimeClass from x.yaml is not a mapping but list"):
        rc.normalize_runtimeclass(["nvidia"], "x.yaml")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
objects = st.fixed_dictionaries({}, optional={
    "metadata": json_values | st.fixed_dictionaries({"name": json_values}),
    "handler": json_values, "overhead": json_values, "scheduling": json_values, "status": json_values,
    "spec": json_values,
})


@settings(max_examples=150, deadline=None)
@given(objects)
def test_any_json_object_is_normalized_or_rejected_with_valueerror(obj):
    for normalize in (rc.normalize_runtimeclass, rc.normalize_node):
        try:
            item = normalize(obj, "generated")
        except ValueError:
            continue
        assert isinstance(item["name"], str) and item["name"]
        json.dumps(item)  # results must be plain JSON for Ansible


# ----- normalize_node -----------------------------------------------------------------

def node(name="gpu-1", **status):
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true"}},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
        "status": dict({
            "allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "1"},
            "nodeInfo": {"kubeletVersion": "v1.33.1", "containerRuntimeVersion": "containerd://2.1.9"},
        }, **status),
    }


def test_node_reports_sorted_named_handlers_without_the_default_entry():
    obj = node(runtimeHandlers=[
        {"name": "", "features": {"recursiveReadOnlyMounts": True}},
        {"name": "runc", "features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}},
        {"name": "nvidia", "features": {"recursiveReadOnlyMounts": True}},
    ])
    item = rc.normalize_node(obj)
    assert item["runtime_handlers"] == ["nvidia", "runc"]
    assert item["runtime_handler_features"][""] == {"recursiveReadOnlyMounts": True}
    assert item["runtime_handler_features"]["runc"]["userNamespaces"] is True
    assert item["labels"] == {"nvidia.com/gpu.present": "true"}
    assert item["allocatable"]["nvidia.com/gpu"] == "1"
    assert item["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert item["kubelet_version"] == "v1.33.1"
    assert item["container_runtime_version"] == "containerd://2.1.9"
    assert item["unschedulable"] is False


def test_node_without_runtimehandlers_key_is_not_reported_rather_than_empty():
    assert rc.normalize_node(node())["runtime_handlers"] is None
    assert rc.normalize_node(node())["runtime_handler_features"] is None
    assert rc.normalize_node(node(runtimeHandlers=[]))["runtime_handlers"] == []
    assert rc.normalize_node(node(runtimeHandlers=[{"name": ""}]))["runtime_handlers"] == []


def test_node_with_only_a_name_gets_empty_defaults():
    item = rc.normalize_node({"metadata": {"name": "bare"}})
    assert item == {
        "name": "bare", "labels": {}, "runtime_handlers": None, "runtime_handler_features": None,
        "allocatable": {}, "taints": [], "unschedulable": False, "kubelet_version": None,
        "container_runtime_version": None, "labels_checked_at": None, "uid": None, "verified_label_managers": {},
        "source": None,
    }


def test_node_names_who_set_each_label_under_our_prefix_and_nothing_else_of_managed_fields():
    labels = {"f:runtime-gate.gpurt.io/nvidia": {}, "f:team": {}}
    managed = [{"manager": "kubectl-label", "operation": "Update", "fieldsV1": {"f:metadata": {"f:labels": labels}}},
               {"manager": "argocd", "operation": "Apply",
                "fieldsV1": {"f:metadata": {"f:labels": {"f:runtime-gate.gpurt.io/nvidia": {}}}}},
               {"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}}, "junk"]
    item = rc.normalize_node({"metadata": {"name": "n", "uid": "u-1", "managedFields": managed}})
    assert item["uid"] == "u-1"
    assert item["verified_label_managers"] == {
        "runtime-gate.gpurt.io/nvidia": ["kubectl-label (Update)", "argocd (Apply)"]}


def test_node_without_name_is_invalid():
    with pytest.raises(ValueError, match=r"Node without metadata.name \(from nodes.yaml\) has no metadata.name"):
        rc.normalize_node({"metadata": {"labels": {}}}, "nodes.yaml")


def test_node_with_runtimehandlers_not_a_list_is_invalid():
    with pytest.raises(ValueError, match="Node 'gpu-1' has status.runtimeHandlers that is not a list"):
        rc.normalize_node(node(runtimeHandlers={"name": "nvidia"}))


# ----- normalize_objects --------------------------------------------------------------

def test_normalize_objects_sorts_by_name_and_reports_every_bad_object():
    pairs = [
        (runtimeclass("zeta", "zeta"), "cluster"),
        ({"metadata": {"name": "nohandler"}}, "cluster"),
        (runtimeclass("alpha", "alpha"), "cluster"),
        ({"handler": "nameless"}, "cluster"),
    ]
    items, errors = rc.normalize_objects(pairs, "RuntimeClass")
    assert [item["name"] for item in items] == ["alpha", "zeta"]
    assert errors == [
        "RuntimeClass 'nohandler' (from cluster) has no handler",
        "RuntimeClass without metadata.name (from cluster) has no metadata.name",
    ]


def test_normalize_objects_reports_a_name_defined_twice_and_keeps_the_first():
    pairs = [(runtimeclass("nvidia", "nvidia"), "a.yaml"), (runtimeclass("nvidia", "nvidia-cdi"), "b.yaml")]
    items, errors = rc.normalize_objects(pairs, "RuntimeClass")
    assert [item["handler"] for item in items] == ["nvidia"]
    assert errors == ["RuntimeClass 'nvidia' is defined twice (from a.yaml and from b.yaml)"]


# ----- load_manifests -----------------------------------------------------------------

def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def names(pairs):
    return [obj["metadata"]["name"] for obj, _unused in pairs]


def test_single_yaml_file(tmp_path):
    path = write(tmp_path / "rc.yaml",
                 "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n")
    pairs = rc.load_manifests(path, "RuntimeClass")
    assert pairs == [(runtimeclass("nvidia", "nvidia"), path)]


RC_API = "apiVersion: node.k8s.io/v1\n"


def test_multi_document_yaml_lists_other_kinds_and_numbers_documents(tmp_path):
    path = write(tmp_path / "all.yaml", "\n".join([
        RC_API + "kind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia",
        "---",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-me}",
        "---",
        "",  # an empty document, as `---` at the end leaves
        "---",
        RC_API + "kind: RuntimeClass\nmetadata: {name: kata}\nhandler: kata",
    ]))
    others = []
    pairs = rc.load_manifests(path, "RuntimeClass", others)
    assert names(pairs) == ["nvidia", "kata"]
    assert [source for _unused, source in pairs] == ["%s, document 1" % path, "%s, document 4" % path]
    assert others == ["%s, document 2: kind ConfigMap, apiVersion v1" % path]


def test_list_and_kind_list_items(tmp_path):
    path = write(tmp_path / "lists.yaml", "\n".join([
        "apiVersion: v1",
        "kind: List",
        "items:",
        "- {apiVersion: node.k8s.io/v1, kind: RuntimeClass, metadata: {name: a}, handler: a}",
        "- {apiVersion: v1, kind: Node, metadata: {name: some-node}}",
        "---",
        "apiVersion: node.k8s.io/v1",
        "kind: RuntimeClassList",
        "items:",
        "- {metadata: {name: b}, handler: b}",  # apiserver list items may omit kind and apiVersion
    ]))
    pairs = rc.load_manifests(path, "RuntimeClass")
    assert names(pairs) == ["a", "b"]
    assert pairs[1][1] == "%s, document 2, item 1" % path
    assert names(rc.load_manifests(path, "Node")) == ["some-node"]


def test_kind_list_without_any_api_version_is_taken_by_its_kind(tmp_path):
    path = write(tmp_path / "list.json", json.dumps({"kind": "RuntimeClassList",
                                                     "items": [{"metadata": {"name": "kata"}, "handler": "kata"}]}))
    assert names(rc.load_manifests(path, "RuntimeClass")) == ["kata"]
    # but a list that names another version is one kubectl refuses
    path = write(tmp_path / "old.json", json.dumps({"apiVersion": "node.k8s.io/v1beta1", "kind": "RuntimeClassList",
                                                    "items": [{"metadata": {"name": "kata"}, "handler": "kata"}]}))
    with pytest.raises(ValueError, match="item 1: apiVersion 'node.k8s.io/v1beta1' is not node.k8s.io/v1"):
        rc.load_manifests(path, "RuntimeClass")


def test_directory_reads_yaml_yml_json_recursively_in_path_order(tmp_path):
    write(tmp_path / "b.yml", RC_API + "kind: RuntimeClass\nmetadata: {name: from-yml}\nhandler: x\n")
    write(tmp_path / "a.json", json.dumps({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                           "metadata": {"name": "from-json"}, "handler": "y"}))
    write(tmp_path / "c.yaml", RC_API + "kind: RuntimeClass\nmetadata: {name: from-yaml}\nhandler: z\n")
    write(tmp_path / "notes.txt", RC_API + "kind: RuntimeClass\nmetadata: {name: from-txt}\nhandler: z\n")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub" / "d.yaml", RC_API + "kind: RuntimeClass\nmetadata: {name: nested}\nhandler: z\n")
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".git" / "e.yaml", RC_API + "kind: RuntimeClass\nmetadata: {name: hidden}\nhandler: z\n")
    assert names(rc.load_manifests(str(tmp_path), "RuntimeClass")) == ["from-json", "from-yml", "from-yaml", "nested"]


def test_kustomize_layout_reads_the_base(tmp_path):
    # The false OK of issue 10: manifests in base/, only a kustomization.yaml at the top.
    write(tmp_path / "kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                           "resources: [base]\n")
    write(tmp_path / "base" / "kustomization.yaml", "resources: [runtimeclass.yaml]\n")
    write(tmp_path / "base" / "runtimeclass.yaml", RC_API + "kind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n")
    others = []
    assert names(rc.load_manifests(str(tmp_path), "RuntimeClass", others)) == ["nvidia"]
    assert others == ["%s: kind (none), apiVersion (none)" % (tmp_path / "base" / "kustomization.yaml"),
                      "%s: kind Kustomization, apiVersion kustomize.config.k8s.io/v1beta1" % (tmp_path / "kustomization.yaml")]


@pytest.mark.parametrize("doc, why", [
    ("apiVersion: node.k8s.io/v1\nkind: Runtimeclass\nmetadata: {name: x}\nhandler: x\n",
     "kind 'Runtimeclass' is not 'RuntimeClass' (kinds are case-sensitive)"),
    ("apiVersion: node.k8s.io/v1\nkind: runtimeclass\nmetadata: {name: x}\nhandler: x\n",
     "kind 'runtimeclass' is not 'RuntimeClass'"),
    ("apiVersion: node.k8s.io/v1beta1\nkind: RuntimeClass\nmetadata: {name: x}\nhandler: x\n",
     "apiVersion 'node.k8s.io/v1beta1' is not node.k8s.io/v1"),
    ("kind: RuntimeClass\nmetadata: {name: x}\nhandler: x\n",
     "apiVersion is missing (RuntimeClass is served as node.k8s.io/v1)"),
])
def test_almost_a_runtimeclass_is_an_error_even_next_to_good_ones(tmp_path, doc, why):
    write(tmp_path / "good.yaml", RC_API + "kind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n")
    bad = write(tmp_path / "bad.yaml", doc)
    with pytest.raises(ValueError) as err:
        rc.load_manifests(str(tmp_path), "RuntimeClass")
    assert "1 document(s) in %s look like a RuntimeClass but are not one" % tmp_path in str(err.value)
    assert "%s: %s" % (bad, why) in str(err.value)


def test_a_source_without_runtimeclasses_is_an_error_naming_what_it_holds(tmp_path):
    write(tmp_path / "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    with pytest.raises(ValueError) as err:
        rc.load_manifests(str(tmp_path), "RuntimeClass")
    assert str(err.value) == ("no RuntimeClass (apiVersion node.k8s.io/v1) in %s: read 1 file(s), holding %s: "
                              "kind ConfigMap, apiVersion v1" % (tmp_path, tmp_path / "cm.yaml"))
    (tmp_path / "cm.yaml").unlink()
    with pytest.raises(ValueError, match="no RuntimeClass .* read 0 file\\(s\\), holding no document"):
        rc.load_manifests(str(tmp_path), "RuntimeClass")


def test_manifest_that_is_a_fifo_or_a_device_is_refused_not_read(tmp_path):
    fifo = str(tmp_path / "rc.yaml")
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="is a FIFO, not a regular file"):
        rc.load_manifests(fifo, "RuntimeClass")
    os.unlink(fifo)
    os.symlink("/dev/zero", fifo)
    with pytest.raises(ValueError, match="is a character device, not a regular file"):
        rc.load_manifests(fifo, "RuntimeClass")


def test_bad_yaml_names_the_file_and_line(tmp_path):
    path = write(tmp_path / "broken.yaml", RC_API + "kind: RuntimeClass\nmetadata: {name: nvidia\nhandler: nvidia\n")
    with pytest.raises(ValueError) as err:
        rc.load_manifests(str(tmp_path), "RuntimeClass")
    assert str(err.value).startswith("manifest %s is not valid YAML (line " % path)


def test_bad_json_names_the_file(tmp_path):
    path = write(tmp_path / "broken.json", '{"kind": "RuntimeClass",')
    with pytest.raises(ValueError, match="manifest %s is not valid JSON" % path):
        rc.load_manifests(path, "RuntimeClass")


def test_document_that_is_not_a_mapping_is_an_error(tmp_path):
    path = write(tmp_path / "list.yaml", "- kind: RuntimeClass\n")
    with pytest.raises(ValueError, match="%s is not a mapping but list" % path):
        rc.load_manifests(path, "RuntimeClass")


def test_missing_path_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="manifest path .*/nope does not exist"):
        rc.load_manifests(str(tmp_path / "nope"), "RuntimeClass")


def test_manifest_with_missing_fields_loads_then_fails_normalization(tmp_path):
    path = write(tmp_path / "rc.yaml", RC_API + "kind: RuntimeClass\nmetadata: {name: nvidia}\n")
    items, errors = rc.normalize_objects(rc.load_manifests(path, "RuntimeClass"), "RuntimeClass")
    assert items == []
    assert errors == ["RuntimeClass 'nvidia' (from %s) has no handler" % path]


# ----- labels_match -------------------------------------------------------------------

@pytest.mark.parametrize("selector, expected", [
    ("", True),
    ("gpu=true", True),
    ("gpu==true", True),
    ("gpu=false", False),
    ("gpu!=false", True),
    ("gpu!=true", False),
    ("gpu", True),
    ("!gpu", False),
    ("zone", False),
    ("!zone", True),
    ("gpu=true, pool=a100", True),
    ("gpu=true,pool=h100", False),
])
def test_labels_match(selector, expected):
    assert rc.labels_match({"gpu": "true", "pool": "a100"}, selector) is expected


def test_set_based_selector_is_refused_for_manifests():
    with pytest.raises(ValueError, match="only equality terms"):
        rc.labels_match({}, "pool in (a100,h100)")
