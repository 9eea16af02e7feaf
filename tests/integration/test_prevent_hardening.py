"""prevent.yml tried as an adversary would (issue 38), on a real kube-apiserver, kube-scheduler and etcd of this
module's own (tests/lib/real_cluster.py). The Nodes carry verified labels as a labeling run writes them
(runtime-gate.gpurt.io/<handler>=true and the checked-at annotation, field manager gpurt-runtime-gate-labels):

- the parameter ConfigMap holds exactly what the labels prove: a key added by hand is removed and named, a hand
  edit of a key we own is taken back and named, with no gpurt_gate_force needed (the ConfigMap is the gate's alone);
- the policy judges selectors on the compact parameters (distinct label sets on the keys selectors use), and
  stays within its CEL cost on the largest parameters a ConfigMap holds;
- labels older than gpurt_label_max_age are not proof: not in the parameters, not counted as matching;
- enforcement is proven after the write (and a control plane without the admission plugin fails the run, in
  test_prevent_no_policy_api.py);
- prevent.yml runs as rbac/runtime-gate-prevent.yaml's identity, which may do nothing more, and a 403 names it;
- messages: a missing namespace is named, a bad gpurt_label_max_age fails before any write.
"""
import os
import time

import pytest
from kubernetes import client, utils
from kubernetes.client.rest import ApiException

from tests.integration.test_prevent import create_runtimeclass, prevent, until
from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.real_cluster import write_kubeconfig

pytestmark = pytest.mark.integration
PREFIX = "runtime-gate.gpurt.io/"
CHECKED_AT = PREFIX + "checked-at"
NS = "gpurt-runtime-gate"
CM = "runtime-gate-verified-handlers"
PODS = "prevent-h"
OLD = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3 * 86400))
# name -> (labels, verified handlers, checked-at: None for now)
NODES = {
    "h-gpu-1": ({"pool": "gpu", "zone": "new"}, ["nvidia", "runc"], None),
    "h-gpu-2": ({"pool": "gpu", "zone": "new"}, ["runc"], None),
    "h-old-1": ({"pool": "gpu", "zone": "old"}, ["nvidia", "runc"], OLD),
}
# runc-new's selector is the admin's (another field manager): gate only these
GATED = ["nvidia", "runc"]


def verified(api, name, handlers, checked=None):
    """The labels and annotation a labeling run writes (server-side apply, its field manager)."""
    checked = checked or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": name, "labels": dict((PREFIX + h, "true") for h in handlers), "annotations": {CHECKED_AT: checked}}}
    api.core.patch_node(name, body, field_manager="gpurt-runtime-gate-labels", force=True,
                        _content_type="application/apply-patch+yaml")


@pytest.fixture(scope="module")
def lab(private_cluster, tmp_path_factory):
    api = Api(private_cluster.kubeconfig)
    api.authz = client.AuthorizationV1Api(api.api_client)
    api.namespace(NS)
    api.namespace(PODS)
    api.runtimeclass("nvidia", "nvidia")
    api.runtimeclass("runc", "runc")
    # a selector on zone: the parameters then hold zone
    api.runtimeclass("runc-new", "runc", selector={"zone": "new"})
    for name, (labels, handlers, checked) in sorted(NODES.items()):
        api.node(name, labels=labels, cpu="4", handlers=handlers, kwok=private_cluster.kwok)
        verified(api, name, handlers, checked)
    yield {"api": api, "cluster": private_cluster, "base": tmp_path_factory.mktemp("prevent-hardening")}
    api.close()


def params(lab):
    return lab["api"].core.read_namespaced_config_map(CM, NS).data


def test_stale_labels_are_not_proof(lab):
    checked = prevent(lab, check=True, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=GATED)
    assert checked.rc == 0, checked
    text = checked.flat
    # the stale Node named once, in the summary's line of its reason: its handlers, when, and the limit
    stale = checked.gate_lines()[-1]
    assert stale.startswith("stale labels: 1 Node(s) not counted as verified: their labels (nvidia, runc) were "
                            "checked at %s, " % OLD) and "longer ago than gpurt_label_max_age 24h: h-old-1; " in stale, \
        checked.gate_lines()
    assert checked.out.count("h-old-1") == 1, checked
    assert "nvidia: nodeSelector {%snvidia=true}; 1 Node(s) match: h-gpu-1" % PREFIX in text, checked
    assert "runc: nodeSelector {%srunc=true}; 2 Node(s) match: h-gpu-1, h-gpu-2" % PREFIX in text, checked
    # a class only the stale Node would run is refused, saying why
    lab["api"].runtimeclass("nvidia-old", "nvidia", selector={"zone": "old"})
    try:
        refused = prevent(lab, gpurt_gate_runtimeclasses=["nvidia-old"], gpurt_admission_mode="deny")
    finally:
        lab["api"].node_k8s.delete_runtime_class("nvidia-old")
    assert refused.rc == 2, refused
    assert ("nvidia-old: no Node would match nodeSelector {%snvidia=true, zone=old}, so every pod of the class would "
            "stay Pending: handler 'nvidia' is verified on h-gpu-1, none of which has the class's other labels "
            "{zone=old} (stale labels, not counted: h-old-1)" % PREFIX) in refused.flat, refused
    # a longer gpurt_label_max_age counts it again
    longer = prevent(lab, check=True, gpurt_label_max_age="4d", gpurt_gate_runtimeclasses=GATED)
    assert "nvidia: nodeSelector {%snvidia=true}; 2 Node(s) match: h-gpu-1, h-old-1" % PREFIX in longer.flat, longer


def test_the_policy_judges_selectors_on_the_compact_parameters(lab):
    result = prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[])
    assert result.rc == 0, result
    assert "proven: a RuntimeClass with a handler no Node loads is refused" in result.flat, result
    data = params(lab)
    assert data["keys"] == ",".join([PREFIX + "nvidia", PREFIX + "runc", "zone"]), data
    assert data["handler.nvidia"] == "%snvidia=true,%srunc=true,zone=new" % (PREFIX, PREFIX), data
    assert "h-old-1" not in str(data) and "zone=old" not in str(data) and "pool" not in str(data)
    # only the stale Node has zone=old: refused, naming the selector
    old = until(lambda: create_runtimeclass(lab, "nvidia-old", "nvidia", {"zone": "old"})[0] == 422
                and create_runtimeclass(lab, "nvidia-old", "nvidia", {"zone": "old"}))
    assert old and "handler 'nvidia' is loaded on no node that its scheduling.nodeSelector selects; loaded: " \
                   "nvidia, runc" in old[1]["message"], old
    assert create_runtimeclass(lab, "nvidia-new", "nvidia", {"zone": "new"})[0] == 201
    assert create_runtimeclass(lab, "nvidia-gated", "nvidia", {PREFIX + "nvidia": "true", "zone": "new"})[0] == 201
    assert create_runtimeclass(lab, "runc-only", "nvidia", {PREFIX + "runc": "false"})[0] == 422
    # a key no class selected is not in the parameters, so it is not judged (docs/prevention.md)
    assert create_runtimeclass(lab, "nvidia-rack", "nvidia", {"rack": "r9"})[0] == 201


def test_a_hand_added_key_is_removed_and_named(lab):
    assert prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[]).rc == 0
    lab["api"].core.patch_namespaced_config_map(CM, NS, {"data": {"handler.nvidai": ""}}, field_manager="kubectl-edit")
    # the widened parameters admit the typo...
    assert until(lambda: create_runtimeclass(lab, "typo", "nvidai")[0] == 201)
    checked = prevent(lab, check=True, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[])
    assert checked.rc == 0, checked
    assert ("parameter handler.nvidai would be removed from %s/%s: no verified label proves it (set by "
            "kubectl-edit)" % (NS, CM)) in checked.flat, checked
    assert "handler.nvidai" in params(lab)  # check mode wrote nothing
    result = prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[])
    assert result.rc == 0, result
    assert ("parameter handler.nvidai was removed from %s/%s: no verified label proves it (set by kubectl-edit)"
            % (NS, CM)) in result.flat, result
    assert "handler.nvidai" not in params(lab)
    # ...and the next run refuses it again
    refused = until(lambda: create_runtimeclass(lab, "typo", "nvidai")[0] == 422 and create_runtimeclass(
        lab, "typo", "nvidai"))
    assert refused and "handler 'nvidai' is loaded on no node" in refused[1]["message"]
    again = prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[])
    assert again.rc == 0 and again.changed() == 0, again
    assert "removed" not in again.flat


def test_a_hand_edit_of_our_key_is_taken_back(lab):
    assert prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[]).rc == 0
    lab["api"].core.patch_namespaced_config_map(CM, NS, {"data": {"handler.nvidia": "zone=old"}},
                                                field_manager="kubectl-edit")
    result = prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[])
    assert result.rc == 0, result
    assert "parameter handler.nvidia was taken back from kubectl-edit: its value is derived from the verified " \
           "labels only" in result.flat, result
    assert "gpurt_gate_force" not in result.text
    assert params(lab)["handler.nvidia"] == "%snvidia=true,%srunc=true,zone=new" % (PREFIX, PREFIX)
    again = prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[])
    assert again.rc == 0 and again.changed() == 0, again


def test_the_largest_parameters_stay_within_the_policys_cost(lab):
    """5,000 distinct label sets (a selector on kubernetes.io/hostname over 5,000 verified Nodes): about 400 kB,
    the most a fleet of that size can need. The policy still judges in time, within its CEL cost."""
    assert prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[]).rc == 0
    lines = ["kubernetes.io/hostname=gpu-%05d,zone=z%d,%snvidia=true" % (i, i % 7, PREFIX) for i in range(5000)]
    data = {"handler.nvidia": "\n".join(lines), "keys": "kubernetes.io/hostname,zone," + PREFIX + "nvidia",
            "loaded": "nvidia"}
    lab["api"].core.patch_namespaced_config_map(
        CM, NS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": CM}, "data": data},
        field_manager="gpurt-runtime-gate-prevent", force=True, _content_type="application/apply-patch+yaml")
    assert len("\n".join(lines)) > 300000
    started = time.time()
    last = until(lambda: create_runtimeclass(lab, "last", "nvidia", {"kubernetes.io/hostname": "gpu-04999"})[0] == 201)
    assert last
    refused = create_runtimeclass(lab, "nowhere", "nvidia", {"kubernetes.io/hostname": "gpu-04999", "zone": "z0"})
    assert refused[0] == 422 and "loaded on no node that its scheduling.nodeSelector selects" in \
        refused[1]["message"], refused
    assert time.time() - started < 30
    restored = prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[])
    assert restored.rc == 0 and "keys" in params(lab) and "gpu-04999" not in str(params(lab)), restored


def test_a_missing_namespace_is_named_and_nothing_is_written(lab):
    result = prevent(lab, gpurt_admission_namespace="no-such-namespace", gpurt_admission_mode="deny",
                     gpurt_gate_runtimeclasses=GATED)
    assert result.rc == 2, result
    assert "namespace no-such-namespace (gpurt_admission_namespace) does not exist" in result.flat, result
    assert "{namespace}" not in result.text and "Traceback" not in result.text
    assert lab["api"].node_k8s.read_runtime_class("nvidia").scheduling is None


@pytest.mark.parametrize("variable,value,words", [
    ("gpurt_label_max_age", "soon", "gpurt_label_max_age must be a positive duration"),
    ("gpurt_admission_namespace", "Not_A_Namespace", "gpurt_admission_namespace must be a namespace name"),
    ("gpurt_deadline", -1, "gpurt_deadline must be a positive number"),
])
def test_bad_values_fail_before_anything_is_read_or_written(lab, variable, value, words):
    result = prevent(lab, **{variable: value})
    assert result.rc == 2, result
    assert words in result.flat, result
    # the listing is skipped (its line printed), nothing read: the reason once, on the NOT JUDGED line
    assert "List the RuntimeClasses and the Nodes once] *" in result.out, result
    assert result.out.split("List the RuntimeClasses and the Nodes once] *")[1].split("\n", 2)[1].startswith(
        "skipping: [localhost]"), result
    assert result.out.count(words) == 1, result
    assert lab["api"].node_k8s.read_runtime_class("nvidia").scheduling is None


def access(lab, verb, resource, group="", name="", namespace=""):
    review = lab["api"].authz.create_subject_access_review({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "system:serviceaccount:%s:runtime-gate-prevent" % NS,
                 "groups": ["system:serviceaccounts", "system:serviceaccounts:" + NS],
                 "resourceAttributes": {"verb": verb, "resource": resource, "group": group, "name": name,
                                        "namespace": namespace}}})
    return review.status.allowed


def test_prevent_runs_as_its_identity_and_may_do_nothing_more(lab):
    api = lab["api"]
    utils.create_from_yaml(api.api_client, os.path.join(ansible_run.REPO, "rbac", "runtime-gate-prevent.yaml"),
                           apply=True, namespace=NS)
    token = api.core.create_namespaced_service_account_token(
        "runtime-gate-prevent", NS, {"spec": {"expirationSeconds": 3600}}).status.token
    cluster = lab["cluster"]
    kubeconfig = write_kubeconfig(str(lab["base"] / "prevent-kubeconfig"), cluster.server, cluster.ca,
                                  "runtime-gate-prevent", token=token)
    # the identity creates the admission objects itself
    admission = client.AdmissionregistrationV1Api(api.api_client)
    for delete in (lambda: admission.delete_validating_admission_policy_binding("runtime-gate.gpurt.io"),
                   lambda: admission.delete_validating_admission_policy("runtime-gate.gpurt.io"),
                   lambda: api.core.delete_namespaced_config_map(CM, NS)):
        try:
            delete()
        except ApiException as exc:
            assert exc.status == 404
    result = prevent(lab, gpurt_kubeconfig=kubeconfig, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=GATED)
    assert result.rc == 0, result
    assert "403" not in result.text and token not in result.text
    assert "proven: a RuntimeClass with a handler no Node loads is refused" in result.flat, result
    # its get on /metrics: the selectors' enforcement proven from the admission metrics
    assert "RuntimeClass selectors: enforcement proven: kube-apiserver at %s: its admission metrics show the " \
           "RuntimeClass plugin handling CREATE" % cluster.server in result.flat, result
    assert api.node_k8s.read_runtime_class("nvidia").scheduling.node_selector == {PREFIX + "nvidia": "true"}
    assert params(lab)["loaded"] == "nvidia, runc"
    again = prevent(lab, gpurt_kubeconfig=kubeconfig, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=GATED)
    assert again.rc == 0 and again.changed() == 0, again
    # the gated class's pods never land on h-gpu-2, which loads no nvidia (h-old-1 keeps its stale label until a
    # labeling run removes it: prevent.yml does not count it, but only the labeler writes Node labels)
    placed = set()
    for index in range(6):
        api.pod(PODS, "gpu-%d" % index, "100m", runtimeclass="nvidia")
        placed.add(api.scheduled(PODS, "gpu-%d" % index)[0])
    assert placed and placed <= {"h-gpu-1", "h-old-1"}, placed
    refused = [("delete", "runtimeclasses", "node.k8s.io", ""), ("update", "runtimeclasses", "node.k8s.io", ""),
               ("patch", "nodes", "", ""), ("get", "nodes", "", ""), ("create", "pods", "", ""),
               ("get", "secrets", "", ""), ("create", "validatingadmissionpolicies", "admissionregistration.k8s.io",
                                            "other"),
               ("patch", "validatingadmissionpolicybindings", "admissionregistration.k8s.io", "other")]
    assert [r for r in refused if access(lab, *r)] == []
    assert not access(lab, "patch", "configmaps", name="other", namespace=NS)
    assert not access(lab, "patch", "configmaps", name=CM, namespace="kube-system")
    assert not access(lab, "create", "configmaps", name="other", namespace=NS)
    assert access(lab, "patch", "configmaps", name=CM, namespace=NS)
    # where its Role is not bound, the 403 names the file and the verb
    denied = prevent(lab, gpurt_kubeconfig=kubeconfig, gpurt_admission_namespace=PODS, gpurt_gate_runtimeclasses=[])
    assert denied.rc == 2, denied
    assert "the identity may not patch configmaps; rbac/runtime-gate-prevent.yaml (prevent.yml's identity) grants " \
           "get, create and patch on the parameter ConfigMap" in denied.flat, denied
    with pytest.raises(ApiException):
        api.core.read_namespaced_config_map(CM, PODS)


def test_one_deadline_for_the_run_not_one_per_class(tmp_path):
    """Stand-in apiserver (tests/lib/fake_apiserver.py): a real one cannot be made to freeze on demand. It lists,
    then answers no RuntimeClass request; five classes to gate cost the run gpurt_deadline, not 120 s each."""
    from tests.lib.fake_apiserver import FakeApiServer, write_kubeconfig as fake_kubeconfig
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    node = {"metadata": {"name": "gpu-a", "labels": {PREFIX + "nvidia": "true"}, "annotations": {CHECKED_AT: now}},
            "status": {"runtimeHandlers": [{"name": ""}, {"name": "nvidia"}]}}
    classes = [{"metadata": {"name": "gpu-%d" % i}, "handler": "nvidia"} for i in range(5)]
    with FakeApiServer(runtimeclasses=classes, nodes=[node], token="t0ken") as fake:
        fake.script("runtimeclasses", [200] + [{"status": 200, "sleep": 60}] * 10)
        kubeconfig = fake_kubeconfig(str(tmp_path / "kubeconfig"), fake.url, token="t0ken")
        started = time.time()
        result = ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", "prevent.yml"), "localhost,",
                                      {"gpurt_kubeconfig": kubeconfig, "gpurt_deadline": 8})
        took = time.time() - started
    assert result.rc == 2, result
    text = result.flat
    assert "nothing was written" in text and "deadline" in text, result
    assert "the run's deadline of 8 s (gpurt_deadline) had passed: gpu-1, gpu-2, gpu-3, gpu-4" in text, result
    assert took < 60, took


def test_every_run_ends_with_its_runtime_gate_block(lab):
    """Issue 35: every prevent run, in check mode and real, ends with its RUNTIME GATE block, each line once: one
    line per RuntimeClass (what it would do, did, or left unchanged), the admission policy's state, the stale Nodes
    by count and name; without the summary callback the Summary task prints the same lines, once."""
    lab["api"].runtimeclass("late", "runc")
    (lab["base"] / "empty.cfg").write_text("[defaults]\n")
    try:
        checked = prevent(lab, check=True, gpurt_gate_runtimeclasses=["late"])
        done = prevent(lab, gpurt_gate_runtimeclasses=["late"])
        again = ansible_run.playbook(
            os.path.join(ansible_run.REPO, "playbooks", "prevent.yml"), "localhost,",
            {"gpurt_kubeconfig": lab["cluster"].kubeconfig, "gpurt_gate_runtimeclasses": ["late"]},
            extra_env={"ANSIBLE_CONFIG": str(lab["base"] / "empty.cfg")})
    finally:
        lab["api"].node_k8s.delete_runtime_class("late")
    stale = "stale labels: 1 Node(s) not counted as verified"
    for run, verb in ((checked, "would gate"), (done, "gated")):
        assert run.rc == 0, run
        gate = run.gate_lines()
        assert gate[0] == "%s RuntimeClass late: nodeSelector {%srunc=true}; 2 Node(s) match: h-gpu-1, h-gpu-2" % (
            verb, PREFIX), gate
        # check mode proves it too: its one create is a dry run either way
        assert gate[1] == ("RuntimeClass selectors: enforcement proven: kube-apiserver at %s: its admission metrics "
                           "show the RuntimeClass plugin handling CREATE" % lab["cluster"].server), gate
        assert gate[2].startswith("admission policy (gpurt_admission_mode=warn): "), gate
        assert gate[-1].startswith(stale) and gate[-1].count("h-old-1") == 1, gate
        assert all(run.out.count(line) == 1 for line in gate), run
        assert "Say what the gate decided" not in run.out, run
    assert "enforcement not proven in check mode" in checked.gate_lines()[2], checked
    assert "enforcement proven: a RuntimeClass with a handler no Node loads is admitted with a warning" \
        in done.gate_lines()[2], done
    assert again.rc == 0 and again.changed() == 0 and "RUNTIME GATE" not in again.out, again
    assert again.out.count("unchanged RuntimeClass late: already gated on %srunc; 2 Node(s) match: h-gpu-1, h-gpu-2"
                           % PREFIX) == 1, again
    assert again.out.count(stale) == 1 and again.out.count("admission policy (gpurt_admission_mode=warn)") == 1, again
