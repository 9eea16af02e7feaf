"""The admission objects' pure parts (module_utils/_k8s/admission_apply): who set which parameter key, which keys
no label proves, which the gate takes back, the probe's handler and the bodies."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import admission_apply

OURS = "gpurt-runtime-gate-prevent"


def configmap(data, managed, binary=None):
    obj = {"metadata": {"name": "runtime-gate-verified-handlers", "resourceVersion": "7", "managedFields": [
        {"manager": manager, "operation": operation, "fieldsV1": {"f:data": dict(("f:" + k, {}) for k in keys)}}
        for manager, operation, keys in managed]}, "data": data}
    if binary:
        obj["binaryData"] = binary
        obj["metadata"]["managedFields"].append({"manager": "kubectl-create", "operation": "Update",
                                                 "fieldsV1": {"f:binaryData": {"f:blob": {}}}})
    return obj


def test_foreign_keys_and_hand_edits_are_named_with_their_managers():
    live = configmap({"handler.nvidia": "zone=old", "handler.nvidai": "", "loaded": "nvidia", "keys": "zone"},
                     [(OURS, "Apply", ["handler.nvidia", "loaded", "keys"]), ("kubectl-edit", "Update",
                                                                              ["handler.nvidai", "handler.nvidia"])],
                     binary={"blob": "AA=="})
    wanted = {"handler.nvidia": "zone=new", "loaded": "nvidia", "keys": "zone"}
    foreign, taken = admission_apply.params_changes(live, wanted, OURS)
    assert foreign == [{"key": "handler.nvidai", "managers": ["kubectl-edit"]},
                       {"key": "binaryData.blob", "managers": ["kubectl-create"]}]
    assert taken == [{"key": "handler.nvidia", "managers": ["kubectl-edit"]}]


def test_nothing_to_say_when_the_configmap_is_ours_or_missing():
    wanted = {"handler.nvidia": "zone=new", "loaded": "nvidia"}
    live = configmap(dict(wanted), [(OURS, "Apply", list(wanted))])
    assert admission_apply.params_changes(live, wanted, OURS) == ([], [])
    assert admission_apply.params_changes(None, wanted, OURS) == ([], [])
    # a value we set ourselves and now change is an update, not a takeover
    assert admission_apply.params_changes(live, dict(wanted, loaded="nvidia, runc"), OURS) == ([], [])


def test_the_probe_handler_is_verified_nowhere():
    assert admission_apply.probe_handler({"handler.nvidia": ""}) == "gpurt-enforcement-probe"
    assert admission_apply.probe_handler({"handler.gpurt-enforcement-probe": "",
                                          "handler.gpurt-enforcement-probe-1": ""}) == "gpurt-enforcement-probe-2"


@pytest.mark.parametrize("namespace", ["", "Gpurt", "a_b", "x" * 64])
def test_a_bad_namespace_is_refused_before_any_request(namespace):
    params = {"namespace": namespace, "mode": "warn", "policy": {"kind": "ValidatingAdmissionPolicy"},
              "binding": {"kind": "ValidatingAdmissionPolicyBinding"}, "params_data": {}}
    with pytest.raises(ValueError, match="gpurt_admission_namespace"):
        admission_apply.desired(params)
