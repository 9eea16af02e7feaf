"""The gate between runs (issue 33), end to end with real parts: ansible-rulebook runs the collection's
rulebook and event source against a real kube-apiserver and kube-scheduler of this module alone; the
re-audits are real ansible-playbook runs of fence.yml on local nodes whose configs a real containerd
loads; ansible-rulebook runs as docs/continuous.md shows it, exactly as written. The Nodes'
status.runtimeHandlers are written through the status subresource, as a kubelet does after containerd restarts.

- verified nodes and a gated class: gpu-a's status loses nvidia -> its label goes (that label alone: the
  labels not under our prefix, the annotations and the spec stay as they were), new pods of the
  class land on the others, the re-audit of gpu-a fails and keeps it fenced; the runtime back (file and
  status) -> the re-audit labels it again and pods schedule there again;
- a Node that flaps five times within the settle window is fenced once and re-audited once;
- without gpurt_watch_remediate nothing is written to any node.
The rulebook runs as the identity of rbac/runtime-gate-watch.yaml (a ServiceAccount token), so what it
grants is what the source, the fence and the re-audit's labels need.
"""
import hashlib
import os
import re
import time

import pytest
from kubernetes import utils

from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.nodes import Node
from tests.lib.real_cluster import write_kubeconfig
from tests.lib.rulebook import DOCUMENTED, Rulebook, documented_commands

pytestmark = pytest.mark.integration
PLAYBOOKS = os.path.join(ansible_run.REPO, "playbooks")
PREFIX = "runtime-gate.gpurt.io/"
NAMESPACE = "watch"
MAIN = '''version = 2
imports = ["{root}/etc/containerd/conf.d/*.toml"]
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
'''
DROPIN = '''version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "{root}/usr/bin/nvidia-container-runtime"
'''
NODES = ("gpu-a", "gpu-b", "gpu-flap")
SETTLE = 3
# Labels that are not ours, two of them one character from our prefix: the fence must leave them as they are
FOREIGN = {"nvidia.com/gpu.present": "true", "team.example.com/owner": "ml",
           "runtime-gate.gpurt.io.example.com/nvidia": "true", "example.com/runtime-gate.gpurt.io-nvidia": "true"}


def tree_digest(root):
    digest = hashlib.sha256()
    for folder, _dirs, files in sorted(os.walk(root)):
        for name in sorted(files):
            path = os.path.join(folder, name)
            digest.update(path.encode())
            with open(path, "rb") as handle:
                digest.update(handle.read())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def lab(private_cluster, tmp_path_factory):
    base = tmp_path_factory.mktemp("event-gate")
    api = Api(private_cluster.kubeconfig)
    api.namespace(NAMESPACE)
    # gated: pods of the class land only on Nodes whose containerd proved nvidia
    api.runtimeclass("nvidia", "nvidia", selector={PREFIX + "nvidia": "true"})
    hosts, nodes = {}, {}
    for name in NODES:
        node = Node(base, name, "2.1")
        node.runtime_binary()
        node.write("etc/containerd/config.toml", MAIN)
        node.write("etc/containerd/conf.d/99-nvidia.toml", DROPIN)
        nodes[name] = node
        # no CRI socket answers here: the Node's status.runtimeHandlers is the running view
        hosts[name] = node.host_vars(gpurt_crictl_bin=str(base / "no-crictl"))
        api.node(name, cpu="4", handlers=["runc", "nvidia"], kwok=private_cluster.kwok, labels=FOREIGN)
        api.core.patch_node(name, {"metadata": {"annotations": {"example.com/note": "kept"}},
                                   "spec": {"podCIDR": "10.244.%d.0/24" % len(nodes), "providerID": "test://" + name}})
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts, group_vars={
        "gpurt_report_dir": str(base / "reports")})
    audit = ansible_run.playbook(os.path.join(PLAYBOOKS, "audit.yml"), inventory, {
        "gpurt_kubeconfig": private_cluster.kubeconfig, "gpurt_label_nodes": True})
    assert audit.rc == 0, audit
    # the rulebook runs as the identity rbac/runtime-gate-watch.yaml makes, with a TokenRequest token
    utils.create_from_yaml(api.api_client, os.path.join(ansible_run.REPO, "rbac", "runtime-gate-watch.yaml"),
                           apply=True, namespace="gpurt-runtime-gate")
    token = api.core.create_namespaced_service_account_token(
        "runtime-gate-watch", "gpurt-runtime-gate", {"spec": {"expirationSeconds": 3600}}).status.token
    watcher = write_kubeconfig(str(base / "watch-kubeconfig"), private_cluster.server, private_cluster.ca,
                               "runtime-gate-watch", token=token)
    # docs/continuous.md's command, exactly as written, in a directory holding its inventory and vars file
    assert documented_commands() == [DOCUMENTED], documented_commands()
    rulebook = Rulebook(base / "rulebook", inventory, {
        "gpurt_kubeconfig": watcher, "gpurt_watch_settle": SETTLE,
        "gpurt_watch_max_concurrent": 2}, command=DOCUMENTED)
    rulebook.start()
    try:
        yield {"api": api, "cluster": private_cluster, "base": base, "nodes": nodes, "inventory": inventory,
               "rulebook": rulebook}
    finally:
        rulebook.stop()
        with open(os.environ.get("GPURT_EVENT_GATE_LOG", os.devnull), "a") as handle:
            handle.write(rulebook.log())
        api.close()


def node_labels(lab, name):
    return dict((k, v) for k, v in (lab["api"].core.read_node(name).metadata.labels or {}).items()
                if k.startswith(PREFIX))


def untouched(lab, name):
    """What the fence must not change on a Node: every label not under PREFIX, the annotations (the check
    time included), the spec and the capacity."""
    node = lab["api"].api_client.sanitize_for_serialization(lab["api"].core.read_node(name))
    labels = dict((k, v) for k, v in node["metadata"]["labels"].items() if not k.startswith(PREFIX))
    return labels, node["metadata"].get("annotations"), node["spec"], node["status"]["capacity"]


def until(predicate, timeout, what, lab):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("%s: not within %d s\n%s" % (what, timeout, lab["rulebook"].log()[-8000:]))


def set_handlers(lab, name, handlers):
    lab["api"].node(name, cpu="4", handlers=handlers, kwok=lab["cluster"].kwok)


def placed(lab, pod):
    return lab["api"].scheduled(NAMESPACE, pod)[0]


def reaudits_of(lab, name):
    """fence.yml runs that re-proved NAME: the line its fence play prints per Node (ansible-rulebook prints a
    failed run's output twice: once as it runs, once in its ERROR line; the second copy is not counted)."""
    log = re.sub(r"run_playbook - ERROR - .*?PLAY RECAP", "", lab["rulebook"].log(), flags=re.S)
    return len(re.findall(r'"%s: (verified labels kept|labels removed|no verified label)' % re.escape(name), log))


def test_a_lost_handler_is_fenced_re_audited_and_earned_back_only_by_proof(lab):
    api, gpu_a = lab["api"], lab["nodes"]["gpu-a"]
    assert node_labels(lab, "gpu-a") == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}
    before, kept = reaudits_of(lab, "gpu-a"), untouched(lab, "gpu-a")
    assert dict(FOREIGN, **{"kubernetes.io/hostname": "gpu-a"}) == kept[0] and kept[1]["example.com/note"] == "kept"
    # containerd restarted without the drop-in (another tool deleted it); the kubelet reports runc alone
    os.remove(gpu_a.path("etc/containerd/conf.d/99-nvidia.toml"))
    set_handlers(lab, "gpu-a", ["runc"])
    until(lambda: PREFIX + "nvidia" not in node_labels(lab, "gpu-a"), 30, "gpu-a's nvidia label removed", lab)
    assert node_labels(lab, "gpu-a") == {PREFIX + "runc": "true"}
    assert untouched(lab, "gpu-a") == kept  # the fence removed our one label and nothing else
    lab["rulebook"].wait_for(r"fenced node gpu-a: lost nvidia \(fenced\)")
    for index in range(4):
        api.pod(NAMESPACE, "after-loss-%d" % index, "100m", runtimeclass="nvidia")
        assert placed(lab, "after-loss-%d" % index) in ("gpu-b", "gpu-flap")  # the verified ones
    # the re-audit (once gpu-a is stable) fails on the missing handler: it stays fenced
    until(lambda: reaudits_of(lab, "gpu-a") > before, 120, "gpu-a re-audited", lab)
    lab["rulebook"].wait_for(r"gpu-a.*MISSING=nvidia", 120)
    assert PREFIX + "nvidia" not in node_labels(lab, "gpu-a")
    # the runtime back, in the file and in what the kubelet reports: the re-audit proves it again
    gpu_a.write("etc/containerd/conf.d/99-nvidia.toml", DROPIN)
    set_handlers(lab, "gpu-a", ["runc", "nvidia"])
    until(lambda: node_labels(lab, "gpu-a").get(PREFIX + "nvidia") == "true", 120, "gpu-a labeled again", lab)
    assert untouched(lab, "gpu-a")[0] == kept[0] and untouched(lab, "gpu-a")[2] == kept[2]  # the labeling too
    # the class's selector admits gpu-a again: a pod pinned there by hostname is placed there
    pod = {"metadata": {"name": "pinned-a"}, "spec": {
        "runtimeClassName": "nvidia", "nodeSelector": {"kubernetes.io/hostname": "gpu-a"},
        "containers": [{"name": "main", "image": "registry.invalid/pause:1"}],
        "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0}}
    api.core.create_namespaced_pod(NAMESPACE, pod)
    assert placed(lab, "pinned-a") == "gpu-a"


def test_a_flapping_node_is_fenced_once_and_re_audited_once(lab):
    name = "gpu-flap"
    assert node_labels(lab, name).get(PREFIX + "nvidia") == "true"
    fences, audits = lab["rulebook"].count(r"fenced node %s: lost" % name), reaudits_of(lab, name)
    for _flap in range(5):  # well within the settle window of SETTLE seconds
        set_handlers(lab, name, ["runc"])
        time.sleep(0.25)
        set_handlers(lab, name, ["runc", "nvidia"])
        time.sleep(0.25)
    until(lambda: reaudits_of(lab, name) > audits, 120, "gpu-flap re-audited", lab)
    # the re-audit proves nvidia again (file and status have it): labeled
    until(lambda: node_labels(lab, name).get(PREFIX + "nvidia") == "true", 120, "gpu-flap labeled again", lab)
    time.sleep(SETTLE + 3)  # nothing else may follow
    assert lab["rulebook"].count(r"fenced node %s: lost" % name) == fences + 1
    assert reaudits_of(lab, name) == audits + 1


def test_the_watch_identity_is_all_the_gate_needs_and_no_token_is_shown(lab):
    log = lab["rulebook"].log()
    assert not re.search(r"403 Forbidden|is forbidden", log), log[-6000:]
    token = open(os.path.join(str(lab["base"]), "watch-kubeconfig")).read().split('"token": "')[1].split('"')[0]
    assert token not in log


def test_without_remediate_nothing_is_written_to_any_node(lab):
    digests = dict((name, tree_digest(node.root)) for name, node in lab["nodes"].items())
    before = reaudits_of(lab, "gpu-b")
    set_handlers(lab, "gpu-b", ["runc"])  # the files still say nvidia: the re-audit proves runc alone
    until(lambda: reaudits_of(lab, "gpu-b") > before, 120, "gpu-b re-audited", lab)
    assert dict((name, tree_digest(node.root)) for name, node in lab["nodes"].items()) == digests
    assert PREFIX + "nvidia" not in node_labels(lab, "gpu-b")
    set_handlers(lab, "gpu-b", ["runc", "nvidia"])
    until(lambda: node_labels(lab, "gpu-b").get(PREFIX + "nvidia") == "true", 120, "gpu-b labeled again", lab)
