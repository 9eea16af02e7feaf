"""The apiserver's label syntax (module_utils/_k8s/label_syntax.py) on the manifests' label maps: a
RuntimeClass's scheduling.nodeSelector and metadata.labels, a Node's metadata.labels. The same cases
run against the real kube-apiserver in tests/integration/test_label_syntax_apiserver.py."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import label_syntax
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import objects

# (selector, stored by the apiserver) as measured on the real kube-apiserver (POST of a RuntimeClass)
CASES = [
    ({"gpu": ""}, True),
    ({"gpu": "a" * 63}, True),
    ({"gpu": "a" * 64}, False),
    ({"gpu": "-a"}, False),
    ({"gpu": "a b"}, False),
    ({"gpu": "V.1_x"}, True),
    ({"example.com/x": "v"}, True),
    ({"Example.com/x": "v"}, False),
    ({"/x": "v"}, False),
    ({"a/b/c": "v"}, False),
    ({"x" * 63: "v"}, True),
    ({"x" * 64: "v"}, False),
    ({"a." * 126 + "a/x": "v"}, True),  # a prefix of 253 characters
    ({"a" * 254 + "/x": "v"}, False),
    ({"": "v"}, False),
    ({"example.com/": "v"}, False),
    ({"_a": "v"}, False),
    ({"a_b.c-d": "v"}, True),
]


@pytest.mark.parametrize("selector,stored", CASES, ids=[repr(c[0])[:40] for c in CASES])
def test_the_rule_is_the_apiservers(selector, stored):
    assert (label_syntax.map_error(selector, "scheduling.nodeSelector") is None) == stored


def rc(selector=None, labels=None):
    obj = {"metadata": {"name": "nvidia"}, "handler": "nvidia"}
    if selector is not None:
        obj["scheduling"] = {"nodeSelector": selector}
    if labels is not None:
        obj["metadata"]["labels"] = labels
    return obj


def refusal(obj, normalize=objects.normalize_runtimeclass):
    with pytest.raises(ValueError) as err:
        normalize(obj, "rc/gpu.yaml")
    return str(err.value)


@pytest.mark.parametrize("value,kind", [(["gpu"], "a list"), (True, "a boolean"), (1, "an integer"), (1.5, "a number")])
def test_a_value_of_another_type_is_refused_without_a_quoted_guess(value, kind):
    """Before: `quote it: "['gpu']"`, a value that selects no Node (and `"True"` for a boolean)."""
    message = refusal(rc({"gpu": value}))
    assert message.startswith("RuntimeClass 'nvidia' (from rc/gpu.yaml): scheduling.nodeSelector['gpu'] is %s, "
                              "which the apiserver rejects: a label value is a string of at most 63 characters" % kind)
    assert "quote it" not in message and repr(value) not in message.split("rejects")[1]
    assert "\n" not in message


def test_a_null_value_names_both_meanings_and_suggests_neither_guess():
    message = refusal(rc({"gpu": None}))
    assert message == ("RuntimeClass 'nvidia' (from rc/gpu.yaml): scheduling.nodeSelector['gpu'] is null, which means "
                       "two things: the apiserver stores it as \"\" when it creates the object, and kubectl apply's "
                       "patch of an existing object removes the key; write \"\" or remove the key")
    assert "None" not in message


@pytest.mark.parametrize("selector,words", [
    ({"gpu": "a b"}, "scheduling.nodeSelector['gpu'] 'a b' is not a label value"),
    ({"gpu": "x" * 64}, "scheduling.nodeSelector['gpu'] is 64 characters long"),
    ({"Example.com/gpu": "true"}, "scheduling.nodeSelector key 'Example.com/gpu' is not a label key: its prefix "
                                  "'Example.com' is not a DNS subdomain"),
    ({"nvidia gpu": "true"}, "scheduling.nodeSelector key 'nvidia gpu' is not a label key: its name 'nvidia gpu'"),
    ({"a/b/c": "true"}, "holds at most one '/'"),
    ({True: "true"}, "scheduling.nodeSelector key True is not a label key: a label key must be a string, got a "
                     "boolean"),
])
def test_a_selector_outside_the_label_syntax_is_refused_naming_file_object_and_key(selector, words):
    message = refusal(rc(selector))
    assert message.startswith("RuntimeClass 'nvidia' (from rc/gpu.yaml): ") and words in message, message
    assert message.endswith("(the apiserver refuses it; a manifest must hold what it would store)")
    assert "\n" not in message


def test_runtimeclass_and_node_labels_are_checked_too():
    assert "metadata.labels key 'bad key' is not a label key" in refusal(rc(labels={"bad key": "v"}))
    assert "metadata.labels must be a mapping, got a list" in refusal(rc(labels=["a"]))
    node = {"metadata": {"name": "gpu-1", "labels": {"gpu": "a/b"}}}
    message = refusal(node, objects.normalize_node)
    assert message.startswith("Node 'gpu-1' (from rc/gpu.yaml): metadata.labels['gpu'] 'a/b' is not a label value")


def test_valid_maps_are_kept_as_written():
    item = objects.normalize_runtimeclass(rc({"example.com/gpu": "", "pool": "A_1.b-2"}, {"app": "x"}), "rc.yaml")
    assert item["node_selector"] == {"example.com/gpu": "", "pool": "A_1.b-2"}
    node = objects.normalize_node({"metadata": {"name": "n", "labels": {"kubernetes.io/hostname": "n"}}})
    assert node["labels"] == {"kubernetes.io/hostname": "n"}
