"""remediate.yml with gpurt_label_nodes (issue 23): after the re-audit, each Node's verified labels
say what its containerd proved it loads and runs. On a real kube-apiserver of this module alone and a
real containerd daemon on a scratch socket, restarted by the role and read back with the real crictl:

- audit.yml labels gpu-1 with runc only (its daemon runs runc);
- remediate.yml --check writes no label;
- remediate.yml registers nvidia, restarts the daemon, and crictl confirms it: nvidia is labeled,
  although the Node's status.runtimeHandlers (read before the restart) still lacks it;
- gpu-2's restart fails: it keeps no label. The next run writes nothing there, and without crictl the
  role cannot see that the restart is still due; the re-audit reads it in the Node's status (runc alone)
  and fails the node, labelled runc only, until containerd is restarted and the kubelet reports nvidia;
- a run after that changes nothing.
"""
import os
import shutil
import subprocess
import tempfile

import pytest

from tests.integration.test_remediation_restart import RESTART
from tests.lib import ansible_run, generators
from tests.lib.cluster_objects import Api
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
PLAYBOOKS = os.path.join(ansible_run.REPO, "playbooks")
PREFIX = "runtime-gate.gpurt.io/"


def daemon_config(run):
    return ('version = 3\nroot = "{run}/root"\nstate = "{run}/state"\n[grpc]\n  address = "{run}/c.sock"\n'
            '[ttrpc]\n  address = "{run}/c.sock.ttrpc"\n').replace("{run}", run)


@pytest.fixture(scope="module")
def lab(private_cluster, tmp_path_factory, containerd, crictl):
    if os.geteuid() != 0:
        pytest.skip("a real containerd daemon needs root")
    base = tmp_path_factory.mktemp("prevent-remediate")
    run = tempfile.mkdtemp(prefix="gl", dir="/tmp")  # unix socket paths must stay short
    api = Api(private_cluster.kubeconfig)
    api.runtimeclass("nvidia", "nvidia")
    hosts, nodes = {}, {}
    for name in ("lbl-gpu-1", "lbl-gpu-2"):
        node = Node(base, name, "2.1")
        runtimes = [{"name": "nvidia", "binary_name": node.runtime_binary()}]
        facts = node.host_vars(containerd_runtime_runtimes=runtimes,
                               containerd_runtime_backup_dir=node.path("var/backups/gpurt"),
                               gpurt_crictl_bin=crictl)
        if name == "lbl-gpu-1":
            node.write("etc/containerd/config.toml", daemon_config(run))
            restart = node.write("restart.sh", RESTART.format(run=run, binary=node.binary, config=node.config_path),
                                 executable=True)
            subprocess.run([restart], check=True, timeout=60)
            facts.update(containerd_runtime_restart_command=[restart], gpurt_cri_endpoint="unix://%s/c.sock" % run)
        else:
            node.write("etc/containerd/config.toml", 'version = 3\n')
            facts.update(containerd_runtime_restart_command=["sh", "-c", "exit 3"],
                         gpurt_crictl_bin=str(base / "no-crictl"))
        nodes[name], hosts[name] = node, facts
        # what the kubelet reported before any remediation: runc alone
        api.node(name, cpu="4", handlers=["runc"])
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts, group_vars={
        "gpurt_kubeconfig": private_cluster.kubeconfig, "gpurt_label_nodes": True,
        "gpurt_report_dir": str(base / "reports")})
    try:
        yield {"api": api, "nodes": nodes, "inventory": inventory, "run": run, "crictl": crictl}
    finally:
        generators.stop_by_pid_file(os.path.join(run, "pid"))
        shutil.rmtree(run, ignore_errors=True)
        api.close()


def playbook(lab, name, check=False):
    return ansible_run.playbook(os.path.join(PLAYBOOKS, name), lab["inventory"], check=check, timeout=600,
                                extra_vars={"gpurt_serial": "100%", "gpurt_max_fail_percentage": 100})


def ours(lab, name):
    labels = lab["api"].core.read_node(name).metadata.labels or {}
    return dict((k, v) for k, v in labels.items() if k.startswith(PREFIX))


def flat(result):
    return " ".join(result.text.split())


def test_remediation_labels_what_the_restarted_daemon_confirms(lab):
    audited = playbook(lab, "audit.yml")
    assert audited.rc == 2, audited  # neither node loads nvidia yet
    assert ours(lab, "lbl-gpu-1") == {PREFIX + "runc": "true"}, audited
    assert "lbl-gpu-1: verified handlers runc (confirmed by crictl)" in flat(audited), audited

    dry = playbook(lab, "remediate.yml", check=True)
    assert "Traceback" not in dry.text, dry
    assert ours(lab, "lbl-gpu-1") == {PREFIX + "runc": "true"}, dry
    assert not os.path.exists(lab["nodes"]["lbl-gpu-1"].path("etc/containerd/conf.d/zz-gpurt-nvidia.toml"))

    real = playbook(lab, "remediate.yml")
    assert real.rc == 2, real  # lbl-gpu-2's restart fails
    assert any(line.startswith("lbl-gpu-1: OK") for line in real.gate_lines()), real
    # crictl, not the Node status listed before the restart, confirms nvidia
    assert ours(lab, "lbl-gpu-1") == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}, real
    assert "lbl-gpu-1: verified handlers nvidia, runc (confirmed by crictl); labels changed: +nvidia" in flat(real), real
    # lbl-gpu-2's files have nvidia but its restart failed: a host whose remediation failed keeps no label
    assert os.path.exists(lab["nodes"]["lbl-gpu-2"].path("etc/containerd/conf.d/zz-gpurt-nvidia.toml"))
    assert ours(lab, "lbl-gpu-2") == {}, real
    assert "lbl-gpu-2: verified handlers none (not checked in this run" in flat(real), real
    assert "labels changed: -runc" in flat(real).split("lbl-gpu-2: verified handlers none")[1], real

    again = playbook(lab, "remediate.yml")
    assert ours(lab, "lbl-gpu-1") == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}, again
    assert "lbl-gpu-1: verified handlers nvidia, runc (confirmed by crictl); labels unchanged" in flat(again), again
    # Nothing is written on lbl-gpu-2 now, and without crictl the role cannot see that its restart is
    # still due; its Node's status (read this run, after no restart) shows the daemon without nvidia.
    assert again.rc == 2, again
    assert "runtime 'nvidia' is in the loaded config but the running containerd does not have it (the kubelet " \
           "reports runc in Node lbl-gpu-2 status.runtimeHandlers)" in flat(again), again
    assert ours(lab, "lbl-gpu-2") == {PREFIX + "runc": "true"}, again

    # containerd restarted by hand; the kubelet reports what it loaded
    lab["api"].node("lbl-gpu-2", cpu="4", handlers=["runc", "nvidia"])
    restarted = playbook(lab, "remediate.yml")
    assert restarted.rc == 0, restarted
    assert ours(lab, "lbl-gpu-2") == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}, restarted

    settled = playbook(lab, "remediate.yml")
    assert settled.rc == 0 and settled.changed() == 0, settled.out
    assert "labels changed" not in flat(settled), settled
