"""The gate between runs repairs when asked (issue 33): gpurt_watch_remediate: true. A real containerd daemon on
a scratch socket (restarted by the role's restart command, read back with the real crictl), a real
kube-apiserver of this module alone, the real ansible-rulebook with the collection's rulebook:

- remediate.yml registers nvidia and labels the node (crictl confirms it);
- then another tool deletes the drop-in and containerd restarts without it; the kubelet reports runc alone;
- with no human step: the source fences the node, the rulebook's fence.yml runs remediate.yml, which writes
  the drop-in again, restarts the daemon, proves it with crictl, and the label comes back.
"""
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

import pytest

from tests.integration.test_prevent_remediate import daemon_config
from tests.integration.test_remediation_restart import RESTART
from tests.lib import ansible_run, generators
from tests.lib.cluster_objects import Api
from tests.lib.nodes import Node
from tests.lib.rulebook import Rulebook

pytestmark = pytest.mark.integration
PLAYBOOKS = os.path.join(ansible_run.REPO, "playbooks")
PREFIX = "runtime-gate.gpurt.io/"
DROPIN = "etc/containerd/conf.d/zz-gpurt-nvidia.toml"


@pytest.fixture(scope="module")
def lab(private_cluster, tmp_path_factory, containerd, crictl):
    if os.geteuid() != 0:
        pytest.skip("a real containerd daemon needs root")
    base = tmp_path_factory.mktemp("event-repair")
    run = tempfile.mkdtemp(prefix="gr", dir="/tmp")  # unix socket paths must stay short
    api = Api(private_cluster.kubeconfig)
    api.runtimeclass("nvidia", "nvidia")
    node = Node(base, "fix-1", "2.1")
    runtimes = [{"name": "nvidia", "binary_name": node.runtime_binary()}]
    node.write("etc/containerd/config.toml", daemon_config(run))
    restart = node.write("restart.sh", RESTART.format(run=run, binary=node.binary, config=node.config_path),
                         executable=True)
    subprocess.run([restart], check=True, timeout=60)
    host = node.host_vars(containerd_runtime_runtimes=runtimes, gpurt_crictl_bin=crictl,
                          containerd_runtime_backup_dir=node.path("var/backups/gpurt"),
                          containerd_runtime_restart_command=[restart], gpurt_cri_endpoint="unix://%s/c.sock" % run)
    api.node("fix-1", cpu="4", handlers=["runc"], kwok=private_cluster.kwok)
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), {"fix-1": host}, group_vars={
        "gpurt_report_dir": str(base / "reports"), "gpurt_serial": "100%"})
    try:
        yield {"api": api, "cluster": private_cluster, "base": base, "node": node, "inventory": inventory,
               "run": run}
    finally:
        generators.stop_by_pid_file(os.path.join(run, "pid"))
        shutil.rmtree(run, ignore_errors=True)
        api.close()


class Kubelet(threading.Thread):
    """What a kubelet does for the gate: copy the running containerd's handlers (crictl info) into the Node's
    status.runtimeHandlers whenever they change."""

    def __init__(self, lab, crictl):
        super(Kubelet, self).__init__(daemon=True)
        self.lab, self.crictl, self.stopping = lab, crictl, threading.Event()

    def running(self):
        proc = subprocess.run([self.crictl, "--runtime-endpoint", "unix://%s/c.sock" % self.lab["run"], "info"],
                              check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                              timeout=30)
        if proc.returncode != 0:
            return None
        return sorted(json.loads(proc.stdout)["config"]["containerd"]["runtimes"])

    def run(self):
        reported = None
        while not self.stopping.wait(0.3):
            handlers = self.running()
            if handlers is not None and handlers != reported:
                self.lab["api"].node("fix-1", cpu="4", handlers=handlers, kwok=self.lab["cluster"].kwok)
                reported = handlers


def ours(lab):
    labels = lab["api"].core.read_node("fix-1").metadata.labels or {}
    return dict((k, v) for k, v in labels.items() if k.startswith(PREFIX))


def test_a_deleted_drop_in_is_repaired_and_labeled_again_with_no_human_step(lab, crictl):
    kubelet = Kubelet(lab, crictl)
    kubelet.start()
    first = ansible_run.playbook(os.path.join(PLAYBOOKS, "remediate.yml"), lab["inventory"], {
        "gpurt_kubeconfig": lab["cluster"].kubeconfig, "gpurt_label_nodes": True})
    assert first.rc == 0, first
    deadline = time.time() + 60  # the kubelet reports the restarted daemon's nvidia; a run proves it
    while time.time() < deadline and ours(lab).get(PREFIX + "nvidia") != "true":
        ansible_run.playbook(os.path.join(PLAYBOOKS, "audit.yml"), lab["inventory"], {
            "gpurt_kubeconfig": lab["cluster"].kubeconfig, "gpurt_label_nodes": True})
    assert ours(lab) == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}, first
    rulebook = Rulebook(lab["base"] / "rulebook", lab["inventory"], {
        "gpurt_kubeconfig": lab["cluster"].kubeconfig, "gpurt_watch_settle": 2, "gpurt_watch_remediate": True})
    rulebook.start()
    try:
        # another tool deletes the drop-in; containerd restarts without it; the kubelet reports runc alone
        os.remove(lab["node"].path(DROPIN))
        subprocess.run([lab["node"].path("restart.sh")], check=True, timeout=60)
        rulebook.wait_for(r"fenced node fix-1: lost nvidia \(fenced\)", 60)
        deadline = time.time() + 300
        while time.time() < deadline and ours(lab).get(PREFIX + "nvidia") != "true":
            time.sleep(0.5)
        # the label is on the Node before ansible-rulebook prints the task that wrote it
        rulebook.wait_for(r"labels\s+changed:\s+\+nvidia", 60)
        log = rulebook.log()
        assert ours(lab) == {PREFIX + "nvidia": "true", PREFIX + "runc": "true"}, log[-8000:]
        assert os.path.exists(lab["node"].path(DROPIN)), log[-8000:]
        time.sleep(6)  # settled: no fence follows the proof (the kubelet and the proof agree)
        assert rulebook.count(r"fenced node fix-1: lost") == 1, rulebook.log()[-8000:]
    finally:
        rulebook.stop()
        kubelet.stopping.set()
