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


def test_the_parameters_carry_a_revision_of_their_data_and_only_of_it():
    params = {"namespace": "gpurt-runtime-gate", "mode": "deny", "policy": {"kind": "ValidatingAdmissionPolicy"},
              "binding": {"kind": "ValidatingAdmissionPolicyBinding"},
              "params_data": {"handler.nvidia": "a=b", "loaded": "nvidia", "revision": "given-by-the-caller"}}
    data = admission_apply.desired(params)[0]["data"]
    assert data["revision"] == admission_apply.revision({"handler.nvidia": "a=b", "loaded": "nvidia"})
    assert len(data["revision"]) == 16
    # the same data in another order: the same revision (an unchanged run writes nothing)
    again = dict(params, params_data={"loaded": "nvidia", "handler.nvidia": "a=b"})
    assert admission_apply.desired(again)[0]["data"] == data
    changed = dict(params, params_data={"handler.nvidia": "a=c", "loaded": "nvidia"})
    assert admission_apply.desired(changed)[0]["data"]["revision"] != data["revision"]


class ProbeSession(object):
    """Answers each dry-run create with the next of answers: ("deny", message) or ("warn", warning) or (None, None)."""

    def __init__(self, answers):
        self.answers, self.last_warnings, self.created = list(answers), [], []

    def create(self, resource, body, field_manager, dry_run=False):
        assert resource == "runtimeclasses" and dry_run is True
        self.created.append(body["handler"])
        kind, text = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        self.last_warnings = [text] if kind == "warn" else []
        if kind == "deny":
            raise admission_apply.kube.KubeError(text, status=422)
        return body


def said(revision, policy="runtime-gate.gpurt.io"):
    return ("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: handler 'gpurt-enforcement-probe' is "
            "loaded on no node; loaded: nvidia (parameters %s)" % (policy, policy, revision))


class Clock(object):
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


@pytest.mark.parametrize("mode", ["deny", "warn"])
def test_enforcement_is_proven_only_with_the_revision_just_written(mode):
    data = {"handler.nvidia": "", "revision": "new"}
    clock = Clock()
    # a stale copy first (the informer not there yet), then the parameters written
    session = ProbeSession([(mode, said("old")), (mode, said("new"))])
    assert admission_apply.prove_enforcement(session, mode, data, "m", 5, sleep=clock.sleep, clock=clock) is None
    assert session.created == ["gpurt-enforcement-probe"] * 2


@pytest.mark.parametrize("mode", ["deny", "warn"])
def test_a_policy_judging_with_a_stale_copy_fails_naming_it_and_the_restart(mode):
    data = {"handler.nvidia": "", "revision": "new"}
    clock = Clock()
    session = ProbeSession([(mode, said("old"))])
    failed = admission_apply.prove_enforcement(session, mode, data, "m", 3, sleep=clock.sleep, clock=clock)
    assert "is enforced with parameters this run did not write" in failed, failed
    assert "judged with revision old of the parameters, and this run wrote revision new to " \
           "runtime-gate-verified-handlers" in failed, failed
    assert "restart kube-apiserver" in failed and admission_apply.STALE_PARAMS_BUG in failed, failed
    assert clock.now >= 3


def test_a_policy_not_enforced_at_all_still_names_the_admission_plugin():
    clock = Clock()
    session = ProbeSession([(None, None)])
    failed = admission_apply.prove_enforcement(session, "deny", {"revision": "new"}, "m", 1, sleep=clock.sleep,
                                               clock=clock)
    assert "is written but not enforced" in failed and "admitted without a warning" in failed, failed
    # a refusal by another policy is not ours: the error goes up as it is
    other = ProbeSession([("deny", said("new", policy="someone-else"))])
    with pytest.raises(admission_apply.kube.KubeError):
        admission_apply.prove_enforcement(other, "deny", {"revision": "new"}, "m", 1, sleep=clock.sleep, clock=clock)
