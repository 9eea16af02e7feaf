"""Issue 37: no run says OK while a restart is pending. The role leaves a restart marker on the node
(restart-pending.json under the node's state dir) before it changes a file, and only the proof after the
restart removes it. The three cases the issue names, through the real ansible-playbook on local nodes loaded
by the real containerd: no systemd and no containerd_runtime_restart_command (the role wrote, the restart
failed, the next run said "OK, nothing written", exit 0); a run killed between the write and the restart; a
restart command that failed once (then a real daemon, read with the real crictl, proves the restart)."""
import json
import os
import shutil
import signal
import subprocess
import tempfile

import pytest

from tests.lib import ansible_run
from tests.lib import generators
from tests.lib.daemon import RESTART
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration

ROLE = "- hosts: all\n  gather_facts: false\n  roles:\n    - gpurt.runtime_gate.containerd_runtime\n"
AUDIT = os.path.join(ansible_run.REPO, "playbooks", "audit.yml")
REMEDIATE = os.path.join(ansible_run.REPO, "playbooks", "remediate.yml")
RUNTIMECLASS = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n"
MARKER = "var/lib/gpurt-runtime-gate/restart-pending.json"


def setup(tmp_path, name="n1", version="2.1", config=None, **extra):
    """A node under its own root (gpurt_host_root), the role's variables, and the role playbook."""
    node = Node(tmp_path / "nodes", name, version)
    node.write("etc/containerd/config.toml",
               config or 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n')
    facts = node.host_vars(
        gpurt_host_root=node.root,
        gpurt_state_dir=None,  # the default, /var/lib/gpurt-runtime-gate, under the node's root
        gpurt_crictl_bin=str(tmp_path / "no-crictl"),
        containerd_runtime_runtimes=[{"name": "nvidia", "binary_name": node.runtime_binary()}],
        containerd_runtime_backup_dir=node.path("var/backups/gpurt"))
    facts.update(extra)
    playbook = tmp_path / "role.yml"
    playbook.write_text(ROLE)
    manifest = tmp_path / "rc.yaml"
    manifest.write_text(RUNTIMECLASS)
    return node, facts, str(playbook), str(manifest)


def inventory(tmp_path, node, facts, name="inv.json"):
    return ansible_run.write_inventory(str(tmp_path / name), {node.name: facts})


def marker(node):
    path = node.path(MARKER)
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return json.load(handle)


def audit(tmp_path, inv, manifest):
    """(run, report entry) of the audit playbook."""
    reports = tmp_path / "audit-reports"
    run = ansible_run.playbook(AUDIT, inv, {"gpurt_runtimeclasses_src": manifest, "gpurt_report_dir": str(reports)},
                               check=True)
    with open(str(reports / "audit.json")) as handle:
        entries = json.load(handle)["nodes"]
    return run, list(entries.values())[0]


def assert_audit_reports_the_marker(tmp_path, inv, manifest, node):
    run, entry = audit(tmp_path, inv, manifest)
    assert run.rc != 0, run
    pending = [f for f in entry["findings"] if f["check"] == "restart_pending"]
    # With crictl the running view speaks too (a runtime the daemon lacks); the marker is reported whatever it says.
    by_marker = [f for f in pending if f["subject"] == "restart_marker"]
    assert [f["severity"] for f in by_marker] == ["error"], entry["findings"]
    written = marker(node)
    evidence = by_marker[0]["evidence"]
    assert evidence["time"] == written["time"] and evidence["files"] == written["files"], evidence
    assert written["time"] in by_marker[0]["message"] and written["files"][0] in by_marker[0]["message"]
    return by_marker[0]


def test_no_systemd_and_no_restart_command_is_never_ok_while_the_restart_is_pending(tmp_path, containerd):
    node, facts, playbook, manifest = setup(tmp_path)
    inv = inventory(tmp_path, node, facts)
    dropin = node.path("etc/containerd/conf.d/zz-gpurt-nvidia.toml")

    # The role writes; the restart through systemd fails (no systemd manages a containerd here).
    first = ansible_run.playbook(playbook, inv)
    assert first.rc != 0 and first.recap[node.name]["failed"] == 1, first
    assert os.path.isfile(dropin)
    written = marker(node)
    assert written and dropin in written["files"] and written["time"].endswith("Z"), written

    # The audit reports it, with the time and the files: not OK.
    assert_audit_reports_the_marker(tmp_path, inv, manifest, node)

    # Nothing to write, but the next run does not say OK: check mode says it would restart, the real run
    # restarts again (and fails again: still no systemd).
    check = ansible_run.playbook(playbook, inv, check=True)
    assert check.rc == 0 and check.recap[node.name]["changed"] == 1, check
    assert "would restart containerd" in check.text and written["time"] in check.text, check
    assert "every runtime is loaded as wanted" not in check.text
    again = ansible_run.playbook(playbook, inv)
    assert again.rc != 0 and again.recap[node.name]["failed"] == 1, again
    assert "restarting containerd" in again.text and "nothing written" not in again.text, again
    assert marker(node) == written  # nothing proved it: the marker stays as it was


def test_remediate_counts_the_written_files_when_the_restart_failed_and_never_passes_after(tmp_path, containerd):
    node, facts, _playbook, manifest = setup(tmp_path)
    group = {"gpurt_runtimeclasses_src": manifest, "gpurt_serial": "100%", "gpurt_become": False}
    for attempt in ("first", "second"):
        reports = tmp_path / ("reports-" + attempt)
        inv = ansible_run.write_inventory(str(tmp_path / ("hosts-%s.json" % attempt)), {node.name: facts},
                                          group_vars=dict(group, gpurt_report_dir=str(reports)))
        run = ansible_run.playbook(REMEDIATE, inv)
        assert run.rc != 0, run
        with open(str(reports / "remediate.json")) as handle:
            report = json.load(handle)
        entry = report["nodes"][node.name]
        assert entry["status"] == "FAILED" and entry["remediation"]["changed"] is True, json.dumps(entry, indent=1)
        # The summary counts the host whose files were written (or restarted for) although the restart failed.
        assert report["summary"]["changed"] == 1, report["summary"]
        assert "remediation: 1 changed" in run.out, run
    assert entry["remediation"]["restart_pending"].startswith("the role wrote "), entry["remediation"]
    assert marker(node) is not None
    # Check mode says it would restart, and does not say OK: no restart was proved.
    reports = tmp_path / "reports-check"
    inv = ansible_run.write_inventory(str(tmp_path / "hosts-check.json"), {node.name: facts},
                                      group_vars=dict(group, gpurt_report_dir=str(reports)))
    check = ansible_run.playbook(REMEDIATE, inv, check=True)
    assert check.rc != 0, check
    with open(str(reports / "remediate.json")) as handle:
        entry = json.load(handle)["nodes"][node.name]
    assert entry["remediation"]["changed"] is True and "would restart containerd" in entry["remediation"]["msg"], entry
    assert entry["status"] != "OK" and ("restart_pending", "error") in [
        (f["check"], f["severity"]) for f in entry["findings"]], json.dumps(entry, indent=1)
    assert marker(node) is not None


def test_a_run_killed_between_the_write_and_the_restart_leaves_a_pending_restart(tmp_path, containerd):
    pid_file = tmp_path / "ansible.pid"
    kill = tmp_path / "kill.yml"
    # Stands in for the controller dying (OOM, ^C, a lost connection) once the files are written.
    kill.write_text("- name: Kill the run before the restart\n  ansible.builtin.shell: kill -KILL \"$(cat %s)\"\n"
                    % pid_file)
    node, facts, playbook, manifest = setup(
        tmp_path, containerd_runtime_before_restart_tasks=str(kill),
        containerd_runtime_restart_command=["sh", "-c", "echo restarted >> %s" % (tmp_path / "restarts.log")])
    inv = inventory(tmp_path, node, facts)
    argv = [os.path.join(ansible_run.BIN, "ansible-playbook"), "-i", inv, playbook]
    proc = subprocess.Popen(argv, cwd=ansible_run.REPO, env=ansible_run.env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, start_new_session=True)
    pid_file.write_text(str(proc.pid))
    try:
        out, _err = proc.communicate(timeout=300)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the workers the killed run left behind, if any
        except OSError:
            pass
    assert proc.returncode == -signal.SIGKILL, out
    assert not (tmp_path / "restarts.log").exists()
    assert os.path.isfile(node.path("etc/containerd/conf.d/zz-gpurt-nvidia.toml"))
    assert marker(node) is not None

    assert_audit_reports_the_marker(tmp_path, inv, manifest, node)
    facts.pop("containerd_runtime_before_restart_tasks")
    inv = inventory(tmp_path, node, facts, "inv2.json")
    check = ansible_run.playbook(playbook, inv, check=True)
    assert check.rc == 0 and check.recap[node.name]["changed"] == 1 and "would restart containerd" in check.text, check
    assert not (tmp_path / "restarts.log").exists()


def test_a_restart_command_that_failed_once_is_retried_proved_and_then_quiet(tmp_path, containerd, crictl):
    if os.geteuid() != 0:
        pytest.skip("a real containerd daemon needs root")
    run_dir = tempfile.mkdtemp(prefix="gm", dir="/tmp")  # unix socket paths must stay short
    config = ('version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\nroot = "%s/root"\nstate = "%s/state"\n'
              '[grpc]\n  address = "%s/c.sock"\n[ttrpc]\n  address = "%s/c.sock.ttrpc"\n' % ((run_dir,) * 4))
    node, facts, playbook, manifest = setup(tmp_path, config=config, gpurt_crictl_bin=crictl,
                                            gpurt_cri_endpoint="unix://%s/c.sock" % run_dir)
    restart = node.write("restart.sh", RESTART.format(run=run_dir, binary=node.binary, config=node.config_path),
                         executable=True)
    try:
        subprocess.run([restart], check=True, timeout=60)
        failing = inventory(tmp_path, node, dict(facts, containerd_runtime_restart_command=["false"]), "failing.json")
        first = ansible_run.playbook(playbook, failing)
        assert first.rc != 0 and marker(node) is not None, first
        assert_audit_reports_the_marker(tmp_path, failing, manifest, node)

        working = inventory(tmp_path, node, dict(facts, containerd_runtime_restart_command=[restart]), "working.json")
        second = ansible_run.playbook(playbook, working)
        assert second.rc == 0 and second.recap[node.name]["changed"] >= 1, second
        assert "restarting containerd" in second.text, second
        assert marker(node) is None  # the proof after the restart removed it
        info = subprocess.run([crictl, "--runtime-endpoint", "unix://%s/c.sock" % run_dir, "info"], check=True,
                              stdout=subprocess.PIPE, universal_newlines=True, timeout=30).stdout
        assert "nvidia" in json.loads(info)["config"]["containerd"]["runtimes"]

        third = ansible_run.playbook(playbook, working)
        assert third.rc == 0 and third.changed() == 0, third
        run, entry = audit(tmp_path, working, manifest)
        assert run.rc == 0 and not [f for f in entry["findings"] if f["check"] == "restart_pending"], entry
    finally:
        generators.stop_by_pid_file(os.path.join(run_dir, "pid"))
        shutil.rmtree(run_dir, ignore_errors=True)


def test_check_mode_of_a_write_on_a_node_with_a_pending_restart_does_not_say_ok(tmp_path, containerd):
    node, facts, _playbook, manifest = setup(tmp_path, containerd_runtime_restart_command=["false"])
    group = {"gpurt_runtimeclasses_src": manifest, "gpurt_serial": "100%", "gpurt_become": False}
    first = ansible_run.playbook(REMEDIATE, ansible_run.write_inventory(
        str(tmp_path / "hosts.json"), {node.name: facts}, group_vars=dict(group, gpurt_report_dir=str(tmp_path / "r1"))))
    assert first.rc != 0 and marker(node) is not None, first
    os.remove(node.path("etc/containerd/conf.d/zz-gpurt-nvidia.toml"))  # something took the drop-in away since
    reports = tmp_path / "r2"
    check = ansible_run.playbook(REMEDIATE, ansible_run.write_inventory(
        str(tmp_path / "hosts-check.json"), {node.name: facts}, group_vars=dict(group, gpurt_report_dir=str(reports))),
        check=True)
    assert check.rc != 0, check
    with open(str(reports / "remediate.json")) as handle:
        entry = json.load(handle)["nodes"][node.name]
    assert "would write" in entry["remediation"]["msg"], entry["remediation"]
    assert [(f["severity"], f["subject"]) for f in entry["findings"] if f["check"] == "restart_pending"] == [
        ("error", "restart_marker")], json.dumps(entry, indent=1)


def test_check_mode_of_a_first_write_reads_no_marker_and_writes_none(tmp_path, containerd):
    node, facts, playbook, _manifest = setup(tmp_path)
    check = ansible_run.playbook(playbook, inventory(tmp_path, node, facts), check=True)
    assert check.rc == 0 and check.recap[node.name]["changed"] == 1, check
    assert marker(node) is None and not os.path.exists(node.path("var/lib/gpurt-runtime-gate"))
