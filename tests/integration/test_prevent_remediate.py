"""remediate.yml with gpurt_label_nodes (issue 23): after the re-audit, each Node's verified labels
say what its containerd proved it loads and runs. On a real kube-apiserver of this module alone and a
real containerd daemon on a scratch socket, restarted by the role and read back with the real crictl:

- audit.yml labels gpu-1 with runc only (its daemon runs runc);
- remediate.yml --check writes no label;
- remediate.yml registers nvidia, restarts the daemon, and crictl confirms it; nvidia is labeled once the
  Node's status.runtimeHandlers lists it too (the live signal the event-driven fence acts on);
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
            # the restart fails until the test says containerd is fixed (restart-ok)
            facts.update(containerd_runtime_restart_command=["sh", "-c", "test -e %s || exit 3" % (base / "restart-ok")],
                         gpurt_crictl_bin=str(base / "no-crictl"),
                         # no daemon answers here: the restart is proved on the config it starts with
                         containerd_runtime_restart_proof="config")
        nodes[name], hosts[name] = node, facts
        # what the kubelet reported before any remediation: runc alone
        api.node(name, cpu="4", handlers=["runc"])
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts, group_vars={
        "gpurt_kubeconfig": private_cluster.kubeconfig, "gpurt_label_nodes": True,
        "gpurt_report_dir": str(base / "reports")})
    try:
        yield {"api": api, "nodes": nodes, "inventory": inventory, "run": run, "crictl": crictl, "base": base}
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
    assert "lbl-gpu-1: verified handlers runc (confirmed by crictl and node status)" in flat(audited), audited

    dry = playbook(lab, "remediate.yml", check=True)
    assert "Traceback" not in dry.text, dry
    assert ours(lab, "lbl-gpu-1") == {PREFIX + "runc": "true"}, dry
    assert not os.path.exists(lab["nodes"]["lbl-gpu-1"].path("etc/containerd/conf.d/zz-gpurt-nvidia.toml"))

    real = playbook(lab, "remediate.yml")
    assert real.rc == 2, real  # lbl-gpu-2's restart fails
    assert any(line.startswith("lbl-gpu-1: OK") for line in real.gate_lines()), real
    # crictl runs nvidia, but the kubelet has not listed it yet: no label the event-driven fence would remove
    assert ours(lab, "lbl-gpu-1") == {PREFIX + "runc": "true"}, real
    assert "lbl-gpu-1: verified handlers runc (confirmed by crictl and node status; the Node's status does not " \
           "list nvidia yet); labels unchanged" in flat(real), real
    # lbl-gpu-2's files have nvidia but its restart failed: a host whose remediation failed keeps no label
    assert os.path.exists(lab["nodes"]["lbl-gpu-2"].path("etc/containerd/conf.d/zz-gpurt-nvidia.toml"))
    assert ours(lab, "lbl-gpu-2") == {}, real
    assert "lbl-gpu-2: verified handlers none (not checked in this run" in flat(real), real
    assert "labels changed: -runc" in flat(real).split("lbl-gpu-2: verified handlers none")[1], real
    # the kubelet reports what the restarted daemon loaded: the next run proves it on both views
    lab["api"].node("lbl-gpu-1", cpu="4", handlers=["runc", "nvidia"])
    real_1 = playbook(lab, "audit.yml")
    assert ours(lab, "lbl-gpu-1") == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}, real_1
    assert "lbl-gpu-1: verified handlers nvidia, runc (confirmed by crictl and node status); labels changed: " \
           "+nvidia" in flat(real_1), real_1

    again = playbook(lab, "remediate.yml")
    assert ours(lab, "lbl-gpu-1") == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}, again
    assert "lbl-gpu-1: verified handlers nvidia, runc (confirmed by crictl and node status); labels unchanged" \
        in flat(again), again
    # Nothing is written on lbl-gpu-2 now, but its restart marker says the restart is still due: the role
    # tries it again, it fails again, and lbl-gpu-2 earns no nvidia label.
    assert again.rc == 2, again
    assert "lbl-gpu-2: FAILED (containerd was not restarted (restart_command exited" in flat(again), again
    assert PREFIX + "nvidia" not in ours(lab, "lbl-gpu-2"), again

    # containerd can restart now; the kubelet reports what it loaded after the role's restart
    (lab["base"] / "restart-ok").write_text("")
    lab["api"].node("lbl-gpu-2", cpu="4", handlers=["runc", "nvidia"])
    restarted = playbook(lab, "remediate.yml")
    assert restarted.rc == 0, restarted
    assert ours(lab, "lbl-gpu-2") == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}, restarted

    settled = playbook(lab, "remediate.yml")
    assert settled.rc == 0 and settled.changed() == 0, settled.out
    assert "labels changed" not in flat(settled), settled
