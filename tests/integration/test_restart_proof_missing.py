"""Issue 37: the proof after the restart never takes the dump for the running daemon's view. A real 2.1 daemon
restarted by a wrapper with its own config (containerd issues 9417, 11926), Docker's packaged one that disables
the CRI plugin: the daemon runs and serves no CRI (crictl: unknown service runtime.v1.RuntimeService), while the
dump of the config the role wrote lists the runtime. The proof is missing, the host fails, the files stay as
written; only containerd_runtime_restart_proof=config takes the config's load, and says so."""
import os
import shutil
import subprocess
import tempfile

import pytest

from tests.integration.test_cri_disabled import DOCKER, RUNTIMES_V3, role_playbook
# the stand-in for `systemctl restart containerd`; here its --config is a wrapper's own: Docker's, no CRI
from tests.integration.test_remediation_restart import RESTART
from tests.lib import ansible_run, containerd_bins, generators
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration


@pytest.fixture
def engine_daemon(tmp_path, containerd):
    if os.geteuid() != 0:
        pytest.skip("a real containerd daemon needs root (../shared/crictl/README.md)")
    run = tempfile.mkdtemp(prefix="gd", dir="/tmp")  # unix socket paths must stay short
    node = Node(tmp_path / "nodes", "n1", "2.1")
    scratch = (
        'root = "{run}/root"\nstate = "{run}/state"\n[grpc]\n  address = "{run}/c.sock"\n'
        '[ttrpc]\n  address = "{run}/c.sock.ttrpc"\n'.replace("{run}", run)
    )
    node.write("etc/containerd/config.toml", "version = 3\n" + scratch + RUNTIMES_V3)
    node.runtime_binary()
    engine = os.path.join(run, "engine.toml")
    with open(engine, "w") as handle:
        handle.write(DOCKER + scratch)
    restart = node.write("restart.sh", RESTART.format(run=run, binary=node.binary, config=engine), executable=True)
    subprocess.run([restart], check=True, timeout=60)
    try:
        yield {"node": node, "run": run, "restart": restart, "endpoint": "unix://%s/c.sock" % run}
    finally:
        generators.stop_by_pid_file(os.path.join(run, "pid"))
        shutil.rmtree(run, ignore_errors=True)


@pytest.mark.parametrize("with_crictl", [True, False], ids=["crictl-unknown-service", "no-crictl"])
def test_no_cri_answer_after_the_restart_is_a_missing_proof(tmp_path, engine_daemon, with_crictl):
    crictl = containerd_bins.crictl_binary() if with_crictl else None  # the real crictl (NotBuilt: make setup)
    node = engine_daemon["node"]
    if crictl:
        # the premise: the daemon runs, and serves no CRI
        proc = subprocess.run(
            [crictl, "--runtime-endpoint", engine_daemon["endpoint"], "info"],
            check=False,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=30,
        )
        assert proc.returncode != 0 and "unknown service runtime.v1.RuntimeService" in proc.stderr, proc
    facts = node.host_vars(
        containerd_runtime_runtimes=[{"name": "nvidia-cdi", "binary_name": node.runtime_binary("usr/bin/nvidia-cdi")}],
        containerd_runtime_backup_dir=node.path("var/backups/gpurt"),
        containerd_runtime_restart_command=[engine_daemon["restart"]],
        gpurt_crictl_bin=crictl or node.path("no-crictl"),
        gpurt_cri_endpoint=engine_daemon["endpoint"],
    )
    inventory = ansible_run.write_inventory(str(tmp_path / "inv.json"), {"n1": facts})
    playbook = role_playbook(tmp_path / "role.yml")
    run = ansible_run.playbook(playbook, inventory, extra_env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})
    words = " ".join(run.text.replace("\\n", " ").split())
    # the config the service would start with has nvidia-cdi: the dump alone would have "proved" it
    rc, out, _err = node.dump()
    assert rc == 0 and "runtimes.nvidia-cdi]" in out
    assert run.rc == 2 and run.recap["n1"]["failed"] == 1, run
    assert (
        "the restart is not proved: the proof is missing: the restarted containerd did not answer on its CRI "
        "socket" in words
    ), run
    assert ("unknown service runtime.v1.RuntimeService" if crictl else "crictl not found") in words
    assert "the runtimes did not survive the restart" not in words, words  # the files stay: nothing put back
    assert os.path.exists(node.path("etc/containerd/conf.d/zz-gpurt-nvidia-cdi.toml"))
    assert os.path.exists("/proc/%s" % open(os.path.join(engine_daemon["run"], "pid")).read().strip())


def test_a_config_proof_on_request_says_the_daemon_was_not_asked(tmp_path, engine_daemon):
    node = engine_daemon["node"]
    facts = node.host_vars(
        containerd_runtime_runtimes=[{"name": "nvidia-cdi", "binary_name": node.runtime_binary("usr/bin/nvidia-cdi")}],
        containerd_runtime_backup_dir=node.path("var/backups/gpurt"),
        containerd_runtime_restart_command=[engine_daemon["restart"]],
        containerd_runtime_restart_proof="config",
        gpurt_crictl_bin=node.path("no-crictl"),
        gpurt_cri_endpoint=engine_daemon["endpoint"],
    )
    inventory = ansible_run.write_inventory(str(tmp_path / "inv.json"), {"n1": facts})
    run = ansible_run.playbook(
        role_playbook(tmp_path / "role.yml"),
        inventory,
        args=("-v",),
        extra_env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"},
    )
    words = " ".join(run.text.replace("\\n", " ").split())
    assert run.rc == 0, run
    assert "restart_proof=config: the running daemon was not asked" in words, run
