"""Issue 37: the proof after the restart never takes the dump for the running daemon's view. A real 2.1 daemon
restarted by a wrapper with its own config (containerd issues 9417, 11926), Docker's packaged one that disables
the CRI plugin: the daemon runs and serves no CRI (crictl: unknown service runtime.v1.RuntimeService), while the
dump of the config the role wrote lists the runtime. The proof is missing, the host fails, the files stay as
written; only containerd_runtime_restart_proof=config takes the config's load, and says so.

The three cases are the three hosts of one role run (-v), each with its own daemon: each test reads its host's
recap and result lines."""
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


CASES = ("crictl-unknown-service", "no-crictl", "config-proof")


def _engine_daemon(base, host, stack):
    """A node whose restart command starts a real 2.1 daemon with Docker's config (no CRI), started once here."""
    run = tempfile.mkdtemp(prefix="gd", dir="/tmp")  # unix socket paths must stay short
    stack.append(run)
    node = Node(base / "nodes", host, "2.1")
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
    return {"node": node, "run": run, "restart": restart, "endpoint": "unix://%s/c.sock" % run}


@pytest.fixture(scope="module")
def engine_daemons(tmp_path_factory, containerd):
    """{host: its daemon} of CASES, and the one run of the role over them: crictl-unknown-service has the real
    crictl, no-crictl none, config-proof none and containerd_runtime_restart_proof=config."""
    if os.geteuid() != 0:
        pytest.skip("a real containerd daemon needs root (../shared/crictl/README.md)")
    base = tmp_path_factory.mktemp("engine")
    runs = []
    try:
        daemons = dict((host, _engine_daemon(base, host, runs)) for host in CASES)
        crictl = containerd_bins.crictl_binary()  # the real crictl (NotBuilt: make setup)
        hosts = {}
        for host, daemon in daemons.items():
            node = daemon["node"]
            hosts[host] = node.host_vars(
                containerd_runtime_runtimes=[{"name": "nvidia-cdi",
                                              "binary_name": node.runtime_binary("usr/bin/nvidia-cdi")}],
                containerd_runtime_backup_dir=node.path("var/backups/gpurt"),
                containerd_runtime_restart_command=[daemon["restart"]],
                gpurt_crictl_bin=crictl if host == "crictl-unknown-service" else node.path("no-crictl"),
                gpurt_cri_endpoint=daemon["endpoint"],
            )
        hosts["config-proof"]["containerd_runtime_restart_proof"] = "config"
        inventory = ansible_run.write_inventory(str(base / "inv.json"), hosts)
        run = ansible_run.playbook(role_playbook(base / "role.yml"), inventory, args=("-v",),
                                   extra_env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})
        yield {"daemons": daemons, "crictl": crictl, "run": run}
    finally:
        for run_dir in runs:
            generators.stop_by_pid_file(os.path.join(run_dir, "pid"))
            shutil.rmtree(run_dir, ignore_errors=True)


@pytest.mark.parametrize("with_crictl", [True, False], ids=["crictl-unknown-service", "no-crictl"])
def test_no_cri_answer_after_the_restart_is_a_missing_proof(engine_daemons, with_crictl):
    host = "crictl-unknown-service" if with_crictl else "no-crictl"
    crictl = engine_daemons["crictl"] if with_crictl else None
    engine_daemon = engine_daemons["daemons"][host]
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
    run = engine_daemons["run"]
    words = run.said(host)
    # the config the service would start with has nvidia-cdi: the dump alone would have "proved" it
    rc, out, _err = node.dump()
    assert rc == 0 and "runtimes.nvidia-cdi]" in out
    assert run.rc == 2 and run.recap[host]["failed"] == 1, run
    assert (
        "the restart is not proved: the proof is missing: the restarted containerd did not answer on its CRI "
        "socket" in words
    ), run
    assert ("unknown service runtime.v1.RuntimeService" if crictl else "crictl not found") in words
    assert "the runtimes did not survive the restart" not in " ".join(run.text.replace("\\n", " ").split())
    assert os.path.exists(node.path("etc/containerd/conf.d/zz-gpurt-nvidia-cdi.toml"))
    assert os.path.exists("/proc/%s" % open(os.path.join(engine_daemon["run"], "pid")).read().strip())


def test_a_config_proof_on_request_says_the_daemon_was_not_asked(engine_daemons):
    run = engine_daemons["run"]
    assert run.recap["config-proof"]["failed"] == 0 and run.recap["config-proof"]["unreachable"] == 0, run
    assert "restart_proof=config: the running daemon was not asked" in run.said("config-proof"), run
