"""Issue 35, remediation messages: a real ansible-playbook run of remediate.yml on local nodes loaded by the real
containerd, with the repository's ansible.cfg (the summary callback), asserting on what the console shows. Each
reason is printed once, short, on the line of the node it belongs to; a refusal names the input that changes it;
a restart that did not happen (a node without systemd, no containerd_runtime_restart_command) is one line that
names the option and the files written, which the summary counts; a warning the re-audit found is printed once."""
import os
import re

import pytest

from tests.lib import ansible_run
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
REMEDIATE = os.path.join(ansible_run.REPO, "playbooks", "remediate.yml")
RC = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n"
# version 3 with containerd set under both CRI plugin names (the demo's gpu-v3-oldname)
BOTH = ('version = 3\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
        '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n')
# an imports glob that matches no file, which the role leaves as it is: the re-audit warns about it
DEAD_GLOB = 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.conf"]\n'


def _node(base, name, config=None, binary=True, **extra):
    node = Node(base / "nodes", name, "2.1")
    if config:
        node.write("etc/containerd/config.toml", config)
    path = node.runtime_binary() if binary else node.path("usr/bin/nvidia-container-runtime")
    facts = node.host_vars(containerd_runtime_runtimes=[{"name": "nvidia", "binary_name": path}],
                           containerd_runtime_restart_proof="config",  # no daemon runs here
                           containerd_runtime_restart_command=["sh", "-c", "echo restarted >> %s"
                                                               % node.path("restarts.log")],
                           containerd_runtime_backup_dir=node.path("var/backups/gpurt"))
    facts.update(extra)
    return node, facts


@pytest.fixture(scope="module")
def rollout(tmp_path_factory, containerd):
    """Four nodes, every one processed (gpurt_max_fail_percentage=100): a runtime binary that is not there
    (REFUSED), containerd set under both plugin names (REFUSED), a node without systemd and without
    containerd_runtime_restart_command (FAILED after its write), and a node the re-audit warns about."""
    if os.path.isdir("/run/systemd/system"):
        pytest.skip("systemd runs this machine: the restart through systemd would not fail as on a node without it")
    base = tmp_path_factory.mktemp("messages")
    nodes, hosts = {}, {}
    for name, config, binary, extra in (
            ("binary", None, False, {}),
            ("both", BOTH, True, {}),
            # a unit no machine has, in case systemd runs after all
            ("nosystemd", None, True, {"containerd_runtime_restart_command": [],
                                       "containerd_runtime_service_name": "gpurt-test-no-such-unit"}),
            ("warned", DEAD_GLOB, True, {})):
        nodes[name], hosts[name] = _node(base, name, config, binary, **extra)
    (base / "rc.yaml").write_text(RC)
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts, group_vars={
        "gpurt_runtimeclasses_src": str(base / "rc.yaml"), "gpurt_report_dir": str(base / "reports")})
    run = ansible_run.playbook(REMEDIATE, inventory, {"gpurt_max_fail_percentage": 100})
    return {"run": run, "nodes": nodes}


def _node_lines(run, host):
    """The lines of the output that carry the node's verdict: its failed line (remediate.yml fails it with its line)
    or its line in the summary."""
    return [line for line in run.out.splitlines()
            if line.startswith("failed: [%s] (item=%s: " % (host, host)) or line.startswith(host + ": ")]


def test_a_refusal_is_printed_once_short_on_its_node_and_names_the_input(rollout):
    run = rollout["run"]
    assert run.rc == 2 and "Traceback" not in run.text, run
    binary = rollout["nodes"]["binary"].path("usr/bin/nvidia-container-runtime")
    assert run.text.count("is not an executable on the node") == 1, run
    line = _node_lines(run, "binary")
    assert len(line) == 1 and line[0].startswith(
        "failed: [binary] (item=binary: REFUSED (runtime nvidia: BinaryName %s is not an executable on the node: set "
        "containerd_runtime_runtimes[].binary_name to the runtime's path on the node" % binary), line
    assert "containerd_runtime_require_binaries" in line[0], line

    assert run.text.count("which one the user means is unknown") == 1, run
    line = _node_lines(run, "both")
    assert len(line) == 1 and line[0].startswith("failed: [both] (item=both: REFUSED ("), line
    assert "keep containerd under io.containerd.cri.v1.runtime only" in line[0], line
    assert "Nothing was written" not in line[0] and "refused, nothing was written" not in run.text, line
    # no warning or error block repeats a node's reason
    assert not [l for l in run.text.splitlines() if l.startswith(("[WARNING]", "[ERROR]")) and "REFUSED" in l], run


def test_a_restart_without_systemd_is_one_line_naming_the_option_and_the_files_written(rollout):
    run = rollout["run"]
    node = rollout["nodes"]["nosystemd"]
    written = [node.path("etc/containerd/config.toml"), node.path("etc/containerd/conf.d/zz-gpurt-nvidia.toml")]
    assert all(os.path.exists(path) for path in written)
    assert run.text.count("containerd was not restarted") == 1, run
    line = _node_lines(run, "nosystemd")
    assert len(line) == 1 and line[0].startswith("failed: [nosystemd] (item=nosystemd: FAILED (containerd was not "
                                                 "restarted ("), line
    assert "\\n" not in line[0] and "set containerd_runtime_restart_command" in line[0], line
    assert "written: %s, loaded at containerd's next start" % ", ".join(written) in line[0], line
    # systemd's own answer, once: in that line, not in a fatal JSON line of the restart task
    assert len(re.findall(r"System has not been booted with systemd|Could not find the requested service", run.text)) \
        == 1, run


def test_the_files_written_before_a_failed_restart_are_counted(rollout):
    run = rollout["run"]
    totals = run.gate_lines()[-1]
    # nosystemd and warned each wrote their config.toml and their drop-in
    assert totals.startswith("remediation: 2 changed (4 files written), 0 unchanged; re-audited 1 of 4 node(s): "
                             "0 OK, 1 with findings"), run.gate_lines()
    assert "2 refused, 1 failed" in totals, totals


def test_a_warning_of_the_reaudit_is_printed_once(rollout):
    run = rollout["run"]
    assert run.out.count("matches no file") == 1, run
    warned = [line for line in run.gate_lines() if "matches no file" in line]
    assert len(warned) == 1 and warned[0].startswith("WARNING dead_imports_glob on warned: imports entry "), warned
    assert [line for line in run.gate_lines() if line.startswith("warned: ")][0].startswith(
        "warned: 1 finding (1 warning) (wrote "), run.gate_lines()
