"""gpurt_drain on the real kube-apiserver (shared real cluster, kwok runs the pods): remediate.yml drains a
host only when its change is disruptive (containerd_runtime_align_runc_cgroup changes runc's SystemdCgroup),
by eviction, before the containerd restart, and uncordons it after; a host whose change is not disruptive
keeps its pods and is never cordoned. The restart command asks the apiserver whether the Node is cordoned
at that moment, so the order is the real one."""
import json
import os
import sys
import time

import pytest

from tests.integration import test_remediation_converges as converges
from tests.lib.cluster_objects import Api

pytestmark = pytest.mark.integration
NAMESPACE = "gpurt-drain"
RESTART = """import json, sys
from kubernetes import client, config
api = client.CoreV1Api(config.new_client_from_config(config_file=sys.argv[1]))
with open(sys.argv[3], "a") as log:
    log.write(json.dumps({"unschedulable": bool(api.read_node(sys.argv[2]).spec.unschedulable)}) + "\\n")
"""


def pod_on(api, name, node):
    body = {"metadata": {"name": name}, "spec": {
        "nodeName": node, "containers": [{"name": "main", "image": "registry.invalid/pause:1"}],
        "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0}}
    api.core.create_namespaced_pod(NAMESPACE, body)


def pods_on(api, node):
    return sorted(p.metadata.name for p in api.core.list_namespaced_pod(NAMESPACE).items
                  if p.spec.node_name == node and not p.metadata.deletion_timestamp)


def test_only_a_host_whose_change_is_disruptive_is_drained_around_its_restart(tmp_path, containerd, real_cluster):
    api = Api(real_cluster.kubeconfig)
    script = tmp_path / "restart.py"
    script.write_text(RESTART)
    try:
        api.namespace(NAMESPACE)
        hosts, nodes = {}, {}
        for host, align in (("aligned", True), ("kept", False)):
            node_name = "gpurt-drain-%s" % host
            api.node(node_name, kwok=True)
            pod_on(api, "%s-pod" % host, node_name)
            node = converges.shapes.install(tmp_path / "nodes", "%s--1.7" % host, "kubeadm-cgroup-mismatch-1.7", "1.7")
            log = node.path("restarts.log")
            hosts[host] = converges.host_vars(
                node, "kubeadm-cgroup-mismatch-1.7", containerd_runtime_align_runc_cgroup=align,
                gpurt_node_name=node_name,
                restart=[sys.executable, str(script), real_cluster.kubeconfig, node_name, log])
            nodes[host] = (node, node_name, log)
        run, entries = converges.remediate(
            tmp_path, hosts, gpurt_drain=True, gpurt_kubeconfig=real_cluster.kubeconfig,
            gpurt_drain_options={"force": True, "ignore_daemonsets": True, "delete_emptydir_data": True,
                                 "wait_timeout": 60})
        aligned, kept = entries["aligned"], entries["kept"]
        assert converges.passed(aligned), json.dumps(aligned, indent=1)
        assert aligned["remediation"].get("disruptive") or "SystemdCgroup" in json.dumps(aligned["remediation"])
        _node, name, log = nodes["aligned"]
        # drained before the restart: cordoned while containerd restarted, its pod evicted; uncordoned after
        assert [json.loads(line) for line in open(log)] == [{"unschedulable": True}], run.out[-3000:]
        deadline = time.time() + 30
        while pods_on(api, name) and time.time() < deadline:
            time.sleep(0.5)
        assert pods_on(api, name) == []
        assert not api.core.read_node(name).spec.unschedulable
        # not disruptive: restarted (nvidia written) without a drain; its pod stays
        _node, name, log = nodes["kept"]
        assert [json.loads(line) for line in open(log)] == [{"unschedulable": False}], run.out[-3000:]
        assert pods_on(api, name) == ["kept-pod"] and not api.core.read_node(name).spec.unschedulable
        assert "containerd_runtime_align_runc_cgroup" in json.dumps(kept)
    finally:
        for host in ("aligned", "kept"):
            for delete in (lambda: api.core.delete_namespaced_pod("%s-pod" % host, NAMESPACE, grace_period_seconds=0),
                           lambda: api.core.delete_node("gpurt-drain-%s" % host)):
                try:
                    delete()
                except Exception:  # already gone
                    pass
        api.close()


def test_a_pod_disruption_budget_stops_the_drain_and_the_restart(tmp_path, containerd, real_cluster):
    """k8s_drain evicts: a PodDisruptionBudget that allows no disruption keeps the pod, the host fails, and
    containerd is not restarted (the written files wait for the next start, as the report says)."""
    api = Api(real_cluster.kubeconfig)
    policy = __import__("kubernetes").client.PolicyV1Api(api.api_client)
    script = tmp_path / "restart.py"
    script.write_text(RESTART)
    node_name = "gpurt-drain-pdb"
    try:
        api.namespace(NAMESPACE)
        api.node(node_name, kwok=True)
        body = {"metadata": {"name": "pdb-pod", "labels": {"app": "gpurt-pdb"}}, "spec": {
            "nodeName": node_name, "containers": [{"name": "main", "image": "registry.invalid/pause:1"}],
            "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0}}
        api.core.create_namespaced_pod(NAMESPACE, body)
        policy.create_namespaced_pod_disruption_budget(NAMESPACE, {
            "metadata": {"name": "gpurt-pdb"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "gpurt-pdb"}}}})
        node = converges.shapes.install(tmp_path / "nodes", "pdb--1.7", "kubeadm-cgroup-mismatch-1.7", "1.7")
        log = node.path("restarts.log")
        facts = converges.host_vars(node, "kubeadm-cgroup-mismatch-1.7", containerd_runtime_align_runc_cgroup=True,
                                    gpurt_node_name=node_name,
                                    restart=[sys.executable, str(script), real_cluster.kubeconfig, node_name, log])
        run, entries = converges.remediate(
            tmp_path, {"pdb": facts}, gpurt_drain=True, gpurt_kubeconfig=real_cluster.kubeconfig,
            gpurt_drain_options={"force": True, "ignore_daemonsets": True, "wait_timeout": 10, "wait_sleep": 2})
        entry = entries["pdb"]
        assert not converges.passed(entry), json.dumps(entry, indent=1)
        assert not os.path.exists(log), "containerd was restarted though the drain failed"
        assert pods_on(api, node_name) == ["pdb-pod"]
        assert "containerd was NOT restarted" in json.dumps(entry), json.dumps(entry, indent=1)
        assert not api.core.read_node(node_name).spec.unschedulable
    finally:
        for delete in (lambda: policy.delete_namespaced_pod_disruption_budget("gpurt-pdb", NAMESPACE),
                       lambda: api.core.delete_namespaced_pod("pdb-pod", NAMESPACE, grace_period_seconds=0),
                       lambda: api.core.delete_node(node_name)):
            try:
                delete()
            except Exception:  # already gone
                pass
        api.close()
