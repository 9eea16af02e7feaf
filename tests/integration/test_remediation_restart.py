"""Issue 8, item 9: a restart that did not happen is retried on the next run. A real containerd
daemon, started by the test on a scratch socket, and the real crictl give the running view."""
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from tests.lib import ansible_run
from tests.lib import generators
from tests.lib.daemon import RESTART
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration


@pytest.fixture
def daemon(tmp_path, containerd, crictl):
    if os.geteuid() != 0:
        pytest.skip("a real containerd daemon needs root (../shared/crictl/README.md)")
    run = tempfile.mkdtemp(prefix="gd", dir="/tmp")  # unix socket paths must stay short
    node = Node(tmp_path / "nodes", "n1", "2.1")
    node.write("etc/containerd/config.toml", (
        'version = 3\nroot = "{run}/root"\nstate = "{run}/state"\n[grpc]\n  address = "{run}/c.sock"\n'
        '[ttrpc]\n  address = "{run}/c.sock.ttrpc"\n').replace("{run}", run))
    restart = node.write("restart.sh", RESTART.format(run=run, binary=node.binary, config=node.config_path), executable=True)
    subprocess.run([restart], check=True, timeout=60)

    def running():
        proc = subprocess.run([crictl, "--runtime-endpoint", "unix://%s/c.sock" % run, "info"], check=False,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        return sorted(json.loads(proc.stdout)["config"]["containerd"]["runtimes"])

    try:
        yield {"node": node, "run": run, "restart": restart, "running": running, "crictl": crictl}
    finally:
        generators.stop_by_pid_file(os.path.join(run, "pid"))
        shutil.rmtree(run, ignore_errors=True)


def test_a_failed_restart_is_retried_on_the_next_run(tmp_path, daemon):
    node = daemon["node"]
    facts = node.host_vars(
        containerd_runtime_runtimes=[{"name": "nvidia", "binary_name": node.runtime_binary()}],
        containerd_runtime_backup_dir=node.path("var/backups/gpurt"),
        gpurt_crictl_bin=daemon["crictl"],
        gpurt_cri_endpoint="unix://%s/c.sock" % daemon["run"],
    )
    inventory = ansible_run.write_inventory(str(tmp_path / "inv.json"), {"n1": facts})
    playbook = tmp_path / "role.yml"
    playbook.write_text("- hosts: all\n  gather_facts: false\n  roles:\n    - gpurt.runtime_gate.containerd_runtime\n")
    assert daemon["running"]() == ["runc"]

    # The write succeeds, the restart fails: the files have nvidia, the daemon does not.
    first = ansible_run.playbook(str(playbook), inventory, {"containerd_runtime_restart_command": ["false"]})
    assert first.rc == 2 and first.recap["n1"]["failed"] == 1, first
    assert os.path.exists(node.path("etc/containerd/conf.d/zz-gpurt-nvidia.toml"))
    assert daemon["running"]() == ["runc"]

    # Nothing to write now, but the running view lacks nvidia: the restart is retried.
    second = ansible_run.playbook(str(playbook), inventory, {"containerd_runtime_restart_command": [daemon["restart"]]})
    assert second.rc == 0, second
    words = " ".join(second.text.split())
    assert "n1: restarting containerd:" in words and "nvidia is not running" in words, second
    assert daemon["running"]() == ["nvidia", "runc"]

    third = ansible_run.playbook(str(playbook), inventory, {"containerd_runtime_restart_command": [daemon["restart"]]})
    assert third.rc == 0 and third.changed() == 0, third
