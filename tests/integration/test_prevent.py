"""From detection to prevention (issue 23), on a real kube-apiserver, kube-scheduler and etcd of this
module's own (tests/lib/real_cluster.py), with local nodes whose configs a real containerd loads:

- audit.yml with gpurt_label_nodes labels each judged Node runtime-gate.gpurt.io/<handler>=true for the
  handlers its loaded config has AND its running daemon confirms (here the Node's status.runtimeHandlers,
  as the kubelet reports them: no CRI socket answers), by a patch under its own field
  manager; check mode writes none; other labels are kept; a handler gone takes its label with it, and so
  does a label under the prefix that no run proved (tests/integration/test_labels_by_proof.py has the rest).
"""
import json
import os
import time
import urllib.error
import urllib.request

import pytest
from kubernetes import client, utils
from kubernetes.client.rest import ApiException

from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.nodes import Node
from tests.lib.real_cluster import write_kubeconfig

pytestmark = pytest.mark.integration
PLAYBOOKS = os.path.join(ansible_run.REPO, "playbooks")
PREFIX = "runtime-gate.gpurt.io/"
CHECKED_AT = PREFIX + "checked-at"
NAMESPACE = "prevent"
V2 = '''version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
'''
NVIDIA = '''[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "{root}/usr/bin/nvidia-container-runtime"
'''
# gpu-1 loads and runs nvidia; gpu-2 loads only runc.
LOADED = {"prev-gpu-1": ["runc", "nvidia"], "prev-gpu-2": ["runc"]}


def write_config(node, handlers):
    node.write("etc/containerd/config.toml", V2 + (NVIDIA if "nvidia" in handlers else ""))


@pytest.fixture(scope="module")
def lab(private_cluster, tmp_path_factory):
    base = tmp_path_factory.mktemp("prevent")
    api = Api(private_cluster.kubeconfig)
    api.authz = client.AuthorizationV1Api(api.api_client)
    api.namespace(NAMESPACE)
    api.namespace("gpurt-runtime-gate")  # the admission parameters' ConfigMap
    api.runtimeclass("nvidia", "nvidia")
    hosts, nodes = {}, {}
    for name, handlers in sorted(LOADED.items()):
        node = Node(base, name, "2.1")
        node.runtime_binary()
        write_config(node, handlers)
        nodes[name] = node
        # no CRI socket answers here: the Node's status.runtimeHandlers is the running view
        hosts[name] = node.host_vars(gpurt_crictl_bin=str(base / "no-crictl"))
        api.node(name, labels={"team": "ml"}, cpu="4", handlers=handlers, kwok=private_cluster.kwok)
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts)
    yield {"api": api, "cluster": private_cluster, "base": base, "nodes": nodes, "inventory": inventory}
    api.close()


def audit(lab, check=False, **extra):
    variables = {"gpurt_kubeconfig": lab["cluster"].kubeconfig, "gpurt_label_nodes": True}
    variables.update(extra)
    result = ansible_run.playbook(os.path.join(PLAYBOOKS, "audit.yml"), lab["inventory"], variables, check=check)
    with open(os.environ.get("GPURT_PREVENT_LOG", os.devnull), "a") as handle:
        handle.write(result.out + result.err)
    return result


def labels(lab, name):
    metadata = lab["api"].core.read_node(name).metadata
    return metadata.labels, metadata.annotations or {}


def ours(found):
    return dict((k, v) for k, v in found.items() if k.startswith(PREFIX))


def test_check_mode_shows_the_labels_and_writes_none(lab):
    result = audit(lab, check=True)
    # prev-gpu-2 lacks nvidia, which the (still unselective) RuntimeClass can land on: the audit fails
    assert result.rc == 2, result
    assert "prev-gpu-1: verified handlers nvidia, runc (confirmed by node status); labels would be changed: " \
           "+nvidia +runc" in result.flat, result
    assert "prev-gpu-2: verified handlers runc (confirmed by node status); labels would be changed: +runc" \
           in result.flat, result
    for name in LOADED:
        found, annotations = labels(lab, name)
        assert ours(found) == {} and CHECKED_AT not in annotations
        assert found["team"] == "ml"


def test_labels_follow_what_is_verified(lab):
    lab["api"].core.patch_node("prev-gpu-1", {"metadata": {"labels": {PREFIX + "by-hand": "true"}}},
                               field_manager="kubectl-label")
    result = audit(lab)
    assert result.rc == 2, result
    found, annotations = labels(lab, "prev-gpu-1")
    # the prefix is ours: a label no run proved is removed, and the run names who had set it
    assert ours(found) == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}
    assert found["team"] == "ml" and CHECKED_AT in annotations
    assert "-by-hand (set by kubectl-label (Update))" in result.flat, result
    assert ours(labels(lab, "prev-gpu-2")[0]) == {PREFIX + "runc": "true"}
    managers = [m.manager for m in lab["api"].core.read_node("prev-gpu-1").metadata.managed_fields]
    assert "gpurt-runtime-gate-labels" in managers
    # a second run: no label changes, and no write (the check time is recent)
    again = audit(lab)
    assert "labels unchanged" in again.flat and "labels changed:" not in again.flat, again
    assert "wrote 0 of 2 judged Node(s), 0 apiserver request(s)" in again.flat, again
    assert again.changed() == 0, again


# ----- prevent.yml: admission, then the selector gate --------------------------------------------------

def prevent(lab, check=False, **extra):
    variables = {"gpurt_kubeconfig": lab["cluster"].kubeconfig}
    variables.update(extra)
    result = ansible_run.playbook(os.path.join(PLAYBOOKS, "prevent.yml"), "localhost,", variables, check=check)
    with open(os.environ.get("GPURT_PREVENT_LOG", os.devnull), "a") as handle:
        handle.write(result.out + result.err)
    return result


def create_runtimeclass(lab, name, handler, selector=None):
    """(HTTP status, body, Warning headers) of a POST as the admin: the warnings a client is shown."""
    cluster = lab["cluster"]
    body = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": handler}
    if selector:
        body["scheduling"] = {"nodeSelector": selector}
    body = json.dumps(body).encode()
    request = urllib.request.Request(cluster.server + "/apis/node.k8s.io/v1/runtimeclasses", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, context=cluster.admin_ssl_context(), timeout=10) as response:
            answer = (response.status, json.loads(response.read()), response.headers.get_all("Warning") or [])
    except urllib.error.HTTPError as exc:
        answer = (exc.code, json.loads(exc.read()), exc.headers.get_all("Warning") or [])
    if answer[0] == 201:
        lab["api"].node_k8s.delete_runtime_class(name)
    return answer


def until(predicate, timeout=30):
    """The policy and its parameters reach admission through informers: wait for them."""
    deadline = time.time() + timeout
    while True:
        value = predicate()
        if value or time.time() > deadline:
            return value
        time.sleep(0.5)


def test_deny_refuses_a_typo_and_admits_a_verified_handler(lab):
    checked = prevent(lab, check=True, gpurt_admission_mode="deny")
    assert checked.rc == 0, checked
    assert lab["api"].node_k8s.read_runtime_class("nvidia").scheduling is None  # check mode wrote nothing
    result = prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[])
    assert result.rc == 0, result
    refused = until(lambda: create_runtimeclass(lab, "typo", "nvidai")[0] != 201 and create_runtimeclass(lab, "typo", "nvidai"))
    assert refused and refused[0] == 422, refused
    assert "handler 'nvidai' is loaded on no node; loaded: nvidia, runc" in refused[1]["message"], refused
    assert create_runtimeclass(lab, "plain-runc", "runc")[0] == 201


def test_warn_admits_with_a_warning_the_client_sees(lab):
    result = prevent(lab, gpurt_admission_mode="warn", gpurt_gate_runtimeclasses=[])
    assert result.rc == 0, result
    answer = until(lambda: create_runtimeclass(lab, "typo", "nvidai")[0] == 201 and create_runtimeclass(lab, "typo", "nvidai"))
    assert answer and answer[0] == 201, answer
    assert any("handler 'nvidai' is loaded on no node; loaded: nvidia, runc" in w for w in answer[2]), answer


def test_a_missing_configmap_admits(lab):
    result = prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[])
    assert result.rc == 0, result
    assert until(lambda: create_runtimeclass(lab, "typo", "nvidai")[0] == 422)
    lab["api"].core.delete_namespaced_config_map("runtime-gate-verified-handlers", "gpurt-runtime-gate")
    assert until(lambda: create_runtimeclass(lab, "typo", "nvidai")[0] == 201)


def test_selector_gate_places_pods_only_on_verified_nodes(lab):
    checked = prevent(lab, check=True)
    assert checked.rc == 0, checked
    assert "nvidia: nodeSelector {%snvidia=true}; 1 Node(s) match: prev-gpu-1" % PREFIX in checked.flat, checked
    assert lab["api"].node_k8s.read_runtime_class("nvidia").scheduling is None
    result = prevent(lab)
    assert result.rc == 0, result
    assert lab["api"].node_k8s.read_runtime_class("nvidia").scheduling.node_selector == {PREFIX + "nvidia": "true"}
    again = prevent(lab)
    assert again.rc == 0 and again.changed() == 0, again
    placed = set()
    for index in range(10):
        lab["api"].pod(NAMESPACE, "gpu-%d" % index, "100m", runtimeclass="nvidia")
        placed.add(lab["api"].scheduled(NAMESPACE, "gpu-%d" % index)[0])
    assert placed == {"prev-gpu-1"}
    # the runtime goes from prev-gpu-1; the re-audit takes its label away; new pods stay Pending
    write_config(lab["nodes"]["prev-gpu-1"], ["runc"])
    lab["api"].node("prev-gpu-1", labels={"team": "ml"}, cpu="4", handlers=["runc"], kwok=lab["cluster"].kwok)
    audited = audit(lab)
    # judged with the labels listed before this run relabels: prev-gpu-1 still looked selectable
    assert audited.rc == 2, audited
    assert PREFIX + "nvidia" not in labels(lab, "prev-gpu-1")[0]
    lab["api"].pod(NAMESPACE, "gpu-after", "100m", runtimeclass="nvidia")
    node, condition = lab["api"].scheduled(NAMESPACE, "gpu-after")
    assert node is None and "didn't match Pod's node affinity/selector" in condition.message, condition


# ----- least privilege, and refusals that write nothing ----------------------------------------------

def access(lab, user, verb, resource, group="", subresource=""):
    review = lab["api"].authz.create_subject_access_review({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": ["system:serviceaccounts", "system:serviceaccounts:gpurt-runtime-gate"],
                 "resourceAttributes": {"verb": verb, "resource": resource, "group": group,
                                        "subresource": subresource}}})
    return review.status.allowed


def test_the_labeler_identity_labels_and_may_do_nothing_more(lab):
    utils.create_from_yaml(lab["api"].api_client, os.path.join(ansible_run.REPO, "rbac", "runtime-gate-labeler.yaml"),
                           apply=True, namespace="gpurt-runtime-gate")
    token = lab["api"].core.create_namespaced_service_account_token(
        "runtime-gate-labeler", "gpurt-runtime-gate", {"spec": {"expirationSeconds": 3600}}).status.token
    cluster = lab["cluster"]
    kubeconfig = write_kubeconfig(str(lab["base"] / "labeler-kubeconfig"), cluster.server, cluster.ca,
                                  "runtime-gate-labeler", token=token)
    lab["api"].core.patch_node("prev-gpu-2", {"metadata": {"labels": {PREFIX + "runc": None}}})
    result = audit(lab, gpurt_kubeconfig=kubeconfig)
    assert "403" not in result.text, result
    assert "prev-gpu-2: verified handlers runc (confirmed by node status); labels changed: +runc" in result.flat, result
    user = "system:serviceaccount:gpurt-runtime-gate:runtime-gate-labeler"
    allowed = [("get", "nodes", ""), ("list", "nodes", ""), ("patch", "nodes", ""),
               ("get", "runtimeclasses", "node.k8s.io"), ("list", "runtimeclasses", "node.k8s.io")]
    refused = [("create", "nodes", ""), ("delete", "nodes", ""), ("update", "nodes", ""),
               ("patch", "runtimeclasses", "node.k8s.io"), ("create", "pods", ""), ("get", "secrets", ""),
               ("patch", "validatingadmissionpolicies", "admissionregistration.k8s.io"), ("patch", "configmaps", "")]
    assert [a for a in allowed if not access(lab, user, *a)] == []
    assert [r for r in refused if access(lab, user, *r)] == []
    assert not access(lab, user, "patch", "nodes", subresource="status")


def test_a_selector_another_manager_owns_is_refused_and_nothing_is_written(lab):
    lab["api"].node_k8s.create_runtime_class({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                              "metadata": {"name": "owned"}, "handler": "runc",
                                              "scheduling": {"nodeSelector": {"team": "ml"}}})
    try:
        lab["api"].core.delete_namespaced_config_map("runtime-gate-verified-handlers", "gpurt-runtime-gate")
    except ApiException as exc:
        assert exc.status == 404
    result = prevent(lab, gpurt_gate_runtimeclasses=["owned"])
    assert result.rc == 2, result
    assert "nothing was written: RuntimeClass owned: not written" in result.flat, result
    assert "nodeSelector (conflict with" in result.flat and "OpenAPI-Generator" in result.flat, result
    assert "gpurt_gate_force=true" in result.flat, result
    assert "Traceback" not in result.text
    assert lab["api"].node_k8s.read_runtime_class("owned").scheduling.node_selector == {"team": "ml"}
    with pytest.raises(ApiException) as info:
        lab["api"].core.read_namespaced_config_map("runtime-gate-verified-handlers", "gpurt-runtime-gate")
    assert info.value.status == 404
    # taking the selector over is a decision the user makes: the other manager's key is kept
    forced = prevent(lab, gpurt_gate_runtimeclasses=["owned"], gpurt_gate_force=True)
    assert forced.rc == 0, forced
    assert lab["api"].node_k8s.read_runtime_class("owned").scheduling.node_selector == {
        "team": "ml", PREFIX + "runc": "true"}


def test_no_node_would_match_is_refused_before_any_write(lab):
    result = prevent(lab, gpurt_gate_runtimeclasses=["nvidia-nowhere", "nvidia"])
    assert result.rc == 2, result
    assert "nothing was written" in result.flat and "nvidia-nowhere: no such RuntimeClass" in result.flat
    # nvidia is gated already, but its runtime is gone from every Node: all its pods would stay Pending
    assert "nvidia: no Node would match nodeSelector {%snvidia=true}" % PREFIX in result.flat


def params_revision(lab):
    return lab["api"].core.read_namespaced_config_map("runtime-gate-verified-handlers", "gpurt-runtime-gate").data["revision"]


def test_a_stale_copy_of_the_parameters_in_the_apiserver_fails_the_run_until_it_restarts(lab):
    """kube-apiserver stops its informer for a ConfigMap paramKind once no binding uses it, and judges a later
    binding with its last copy of the ConfigMap (https://github.com/kubernetes/kubernetes/issues/130887).
    Mode off removes the binding: a run that then writes other parameters must not call them enforced.
    Measured on kube-apiserver 1.37.2 (tools/kube-build); a release with the fix would make the stale run pass,
    and this test would then say so by failing at its rc."""
    audit(lab)  # the verified labels the parameters come from (rc 2: prev-gpu-2 lacks nvidia)
    first = prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[])
    assert first.rc == 0, first
    old = params_revision(lab)
    assert "judged with revision %s of the parameters" % old in first.flat, first
    off = prevent(lab, gpurt_admission_mode="off", gpurt_gate_runtimeclasses=[])
    assert off.rc == 0, off
    assert "with no binding, kube-apiserver may stop reading the parameter ConfigMap until it restarts" in off.flat, off
    time.sleep(3)  # the apiserver looks at the bindings every second and stops the informer nobody uses
    # a selector on a key no RuntimeClass used: the parameters hold one more key
    lab["api"].runtimeclass("stale-params", "nvidia", selector={"gpurt-test/stale": "x"})
    try:
        stale = prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[],
                        gpurt_admission_enforcement_timeout=4)
        new = params_revision(lab)
        assert new != old
        assert stale.rc == 2, stale
        assert "is enforced with parameters this run did not write: for 4 s a dry-run create of a RuntimeClass with " \
               "handler 'gpurt-enforcement-probe' was judged with revision %s of the parameters, and this run wrote " \
               "revision %s to runtime-gate-verified-handlers" % (old, new) in stale.flat, stale
        assert "restart kube-apiserver, then run prevent.yml again" in stale.flat, stale
        lab["cluster"].restart_apiserver()
        again = prevent(lab, gpurt_admission_mode="deny", gpurt_gate_runtimeclasses=[])
        assert again.rc == 0 and "judged with revision %s of the parameters" % new in again.flat, again
    finally:
        lab["api"].node_k8s.delete_runtime_class("stale-params")
