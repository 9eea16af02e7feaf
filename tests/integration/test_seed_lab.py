"""The seed lab end to end, on a real kube-apiserver, kube-scheduler and etcd (tests/lib/real_cluster.py)
of its own, since it judges every RuntimeClass and Node of the cluster:

- the apiserver accepts a RuntimeClass whose handler is a typo, and a pod that names it, which the
  scheduler binds: nothing in Kubernetes checks a handler;
- two Nodes of 1 CPU: a 900m pod without a RuntimeClass fits; with a RuntimeClass whose
  overhead.podFixed is cpu 250m it stays Pending (the RuntimeClass admission plugin adds the overhead,
  the scheduler refuses it), while 100m of overhead still fits; playbooks/cluster_audit.yml's
  overhead_unschedulable names exactly the RuntimeClasses whose pods the scheduler left Pending;
- the crosscheck contract (crosscheck.yml) against that cluster: a real containerd dump that loads
  nvidia but not nvidia-cdi prints MISSING=<handler> lines and fails; a full one prints OK.
"""
import json
import os

import pytest

from tests.lib import ansible_run, containerd_bins
from tests.lib.cluster_objects import Api

pytestmark = pytest.mark.integration
PLAYBOOKS = os.path.join(ansible_run.REPO, "playbooks")
NAMESPACE = "gpu-rt"
# name -> (handler, overhead cpu): what the seed lab defines.
RUNTIMECLASSES = {
    "nvidia": ("nvidia", None),
    "nvidia-cdi": ("nvidia-cdi", None),
    "nvidia-typo": ("nvida", None),
    "gpu-overhead": ("nvidia", "250m"),
    "gpu-small-overhead": ("nvidia", "100m"),
}
NODES = ("lab-gpu-1", "lab-gpu-2")
LOADED = ["nvidia", "nvidia-cdi", "runc"]

V2_RUNTIME = '''[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]
  runtime_type = "io.containerd.runc.v2"
'''


@pytest.fixture(scope="module")
def lab(private_cluster, tmp_path_factory):
    api = Api(private_cluster.kubeconfig)
    api.namespace(NAMESPACE)
    for name, (handler, overhead) in sorted(RUNTIMECLASSES.items()):
        api.runtimeclass(name, handler, overhead={"cpu": overhead} if overhead else None)
    for name in NODES:
        api.node(name, labels={"gpurt-lab": "seed"}, cpu="1", handlers=LOADED, kwok=private_cluster.kwok)
    # One pod at a time, each placed before the next comes, so every decision is made on known nodes:
    # the first overhead pod takes a whole node, the 250m one then finds the other node empty.
    decisions = {}
    for pod, cpu, runtimeclass in (("small-overhead-900m", "900m", "gpu-small-overhead"),
                                   ("overhead-900m", "900m", "gpu-overhead"),
                                   ("plain-900m", "900m", None),
                                   ("typo", "50m", "nvidia-typo")):
        api.pod(NAMESPACE, pod, cpu, runtimeclass)
        decisions[pod] = api.scheduled(NAMESPACE, pod)
    base = tmp_path_factory.mktemp("seed-lab")
    yield {"api": api, "cluster": private_cluster, "decisions": decisions, "base": base}
    api.close()


def test_typo_handler_is_accepted_and_its_pod_scheduled(lab):
    runtimeclass = lab["api"].node_k8s.read_runtime_class("nvidia-typo")
    assert runtimeclass.handler == "nvida"
    node, refused = lab["decisions"]["typo"]
    assert node in NODES and refused is None


def test_overhead_admission_and_the_schedulers_decision(lab):
    pod = lab["api"].core.read_namespaced_pod("overhead-900m", NAMESPACE)
    assert pod.spec.overhead == {"cpu": "250m"}  # merged by the RuntimeClass admission plugin
    node, refused = lab["decisions"]["overhead-900m"]
    assert node is None
    assert "Insufficient cpu" in refused.message, refused
    # the same request without the RuntimeClass fits on the node the 250m pod could not use
    plain = lab["decisions"]["plain-900m"][0]
    small = lab["decisions"]["small-overhead-900m"][0]
    assert plain in NODES and small in NODES and plain != small
    assert lab["api"].core.read_namespaced_pod("overhead-900m", NAMESPACE).spec.node_name is None


def test_cluster_audit_predicts_the_scheduler(lab):
    reports = lab["base"] / "cluster-audit"
    result = ansible_run.playbook(os.path.join(PLAYBOOKS, "cluster_audit.yml"), "localhost,", {
        "gpurt_kubeconfig": lab["cluster"].kubeconfig, "gpurt_report_dir": str(reports),
        "gpurt_pod_requests": {"cpu": "900m"}})
    with open(str(reports / "cluster-audit.json")) as handle:
        report = json.load(handle)
    assert sorted(report["nodes"]) == sorted(NODES), result
    predicted_pending = set()
    for name in NODES:
        entry = report["nodes"][name]
        overhead = [f for f in entry["findings"] if f["check"] == "overhead_unschedulable"]
        assert [(f["subject"], f["evidence"]["arithmetic"]) for f in overhead] == \
            [("gpu-overhead:cpu", "900m + 250m > 1000m")], entry
        predicted_pending.update(f["evidence"]["runtimeclass"] for f in overhead)
    # The audit flags a RuntimeClass on every node exactly when the scheduler left its 900m pod Pending.
    pending = set(rc for pod, rc in (("small-overhead-900m", "gpu-small-overhead"), ("overhead-900m", "gpu-overhead"))
                  if lab["decisions"][pod][0] is None)
    assert predicted_pending == pending == {"gpu-overhead"}
    # every handler is loaded on both nodes except the typo
    for name in NODES:
        missing = [f["subject"] for f in report["nodes"][name]["findings"] if f["check"] == "missing_handler"]
        assert missing == ["nvida"], report["nodes"][name]
    assert result.rc == 2, result


def _dump(tmp_path, handlers):
    config = tmp_path / ("config-%s.toml" % "-".join(handlers))
    config.write_text("version = 2\n" + "".join(V2_RUNTIME % h for h in handlers))
    rc, out, err = containerd_bins.dump(containerd_bins.binary("2.1"), str(config))
    assert rc == 0, err
    dump = tmp_path / ("dump-%s.toml" % "-".join(handlers))
    dump.write_text(out)
    return str(dump)


def test_crosscheck_contract_against_the_cluster(lab, tmp_path):
    crosscheck = os.path.join(PLAYBOOKS, "crosscheck.yml")
    kubeconfig = lab["cluster"].kubeconfig
    partial = ansible_run.playbook(crosscheck, "localhost,", {
        "gpurt_dump_file": _dump(tmp_path, ["runc", "nvidia"]), "gpurt_kubeconfig": kubeconfig})
    # ansible-playbook's exit code for a failed host is 2
    assert partial.rc == 2, partial
    assert sorted(partial.gate_lines()) == ["MISSING=nvida", "MISSING=nvidia-cdi"], partial
    full = ansible_run.playbook(crosscheck, "localhost,", {
        "gpurt_dump_file": _dump(tmp_path, ["runc", "nvidia", "nvidia-cdi", "nvida"]), "gpurt_kubeconfig": kubeconfig})
    assert full.rc == 0, full
    assert full.gate_lines() == ["OK"]
