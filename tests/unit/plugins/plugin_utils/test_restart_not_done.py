"""A restart that did not happen, in one line: systemd's answer on a node it does not run (two lines with a
newline), the files written, and the option that restarts containerd there (issue 35). The real run is
tests/integration/test_remediation_messages.py."""
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _user_words as user_words
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import restart_proof

PROOF = {"runtimes": [{"name": "nvidia", "binary_name": ""}], "mode": "running",
         "files": [{"path": "/etc/containerd/config.toml"}, {"path": "/etc/containerd/conf.d/zz-gpurt-nvidia.toml"}]}
# ansible.builtin.systemd_service on a machine systemd does not run, as registered with changed_when/failed_when.
NO_SYSTEMD = {"changed": False, "failed": False, "failed_when_result": False, "rc": 1,
              "msg": "System has not been booted with systemd as init system (PID 1). Can't operate.\n"
                     "Failed to connect to bus: Host is down"}


def test_a_systemd_restart_that_failed_is_one_line_naming_the_files_and_the_option():
    line = restart_proof.not_restarted(NO_SYSTEMD, False, PROOF)
    assert "\n" not in line and "\\n" not in line
    assert line.startswith("containerd was not restarted (System has not been booted with systemd as init system "
                           "(PID 1). Can't operate.; Failed to connect to bus: Host is down); written: "
                           "/etc/containerd/config.toml, /etc/containerd/conf.d/zz-gpurt-nvidia.toml, loaded at "
                           "containerd's next start;"), line
    role = user_words.in_user_words(line, {"restart_command": "containerd_runtime_restart_command"})
    assert "set containerd_runtime_restart_command to the argv that restarts it" in role


def test_a_restart_command_that_failed_says_its_exit_code_and_no_systemd_advice():
    line = restart_proof.not_restarted({"changed": False, "rc": 3, "stderr": "no\nway", "stdout": "",
                                        "msg": "non-zero return code"}, True, dict(PROOF, files=[]))
    assert line == ("containerd was not restarted (restart_command exited 3: no; way); this run wrote nothing; "
                    "the restart marker stays, so the next run restarts again")


def test_a_restart_that_happened_or_did_not_run_is_none():
    assert restart_proof.not_restarted({"changed": True, "rc": 0}, True, PROOF) is None
    assert restart_proof.not_restarted({"changed": False, "skipped": True}, False, PROOF) is None
    assert restart_proof.not_restarted(None, False, PROOF) is None
