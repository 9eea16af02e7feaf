"""Bad input to the gather: a clear failed result naming the host and cause, never a traceback.
Garbage, truncated or non-UTF-8 output cannot come from a real containerd, so small scripts
stand in for a broken binary there; the 20 MB dump is a real containerd's."""
import json
import os
import subprocess
import time

import pytest

from tests.lib import ansible_run, containerd_bins

pytestmark = pytest.mark.integration


def gather(tmp_path, binary, config, **options):
    args = dict(containerd_bin=str(binary), config_path=str(config), **options)
    playbook = tmp_path / "gather.yml"
    playbook.write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - gpurt.runtime_gate.containerd_config_info: %s\n"
        "      register: gathered\n"
        "      ignore_errors: true\n"
        "    - ansible.builtin.copy:\n"
        "        content: '{{ gathered | to_json }}'\n"
        "        dest: '%s'\n"
        "        mode: '0644'\n"
        "      delegate_to: localhost\n" % (json.dumps(args), tmp_path / "result.json"))
    inventory = ansible_run.write_inventory(str(tmp_path / "inv.json"), {"node-x": {}})
    started = time.time()
    run = ansible_run.playbook(str(playbook), inventory)
    elapsed = time.time() - started
    assert "Traceback" not in run.text, run
    with open(str(tmp_path / "result.json")) as handle:
        return json.load(handle), elapsed


def fake_containerd(tmp_path, body):
    path = tmp_path / "containerd"
    path.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'containerd github.com/containerd/containerd/v2 2.1.9'; exit 0; fi\n" + body)
    path.chmod(0o755)
    return path


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("version = 3\n")
    return path


def test_binary_that_hangs_is_killed_after_the_timeout(tmp_path, config):
    binary = fake_containerd(tmp_path, "sleep 60\n")
    result, elapsed = gather(tmp_path, binary, config, timeout=2)
    assert result["failed"] is True
    assert result["msg"].startswith("node-x: ")
    assert "did not finish within 2 s" in result["msg"]
    assert elapsed < 30


@pytest.mark.parametrize("body, message", [
    ("echo 'garbage [[['\n", "is not valid TOML"),
    ("printf 'version = 3\\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nv'\n", "is not valid TOML"),
    ("printf 'version = 3\\nroot = \"\\377\\376\"\\n'\n", "not UTF-8"),
    # containerd refusing the config: its cause line first (on_refused=fail, the module's default)
    ("echo 'level=error msg=\"boom\"' >&2; exit 3\n", "containerd refuses the config: level=error msg=\"boom\" ("),
    ("exit 0\n", "printed nothing"),
])
def test_broken_output_is_a_clear_failure(tmp_path, config, body, message):
    result, _elapsed = gather(tmp_path, fake_containerd(tmp_path, body), config)
    assert result["failed"] is True
    assert message in result["msg"], result["msg"]
    assert result["msg"].startswith("node-x: ")


def test_missing_binary(tmp_path, config):
    result, _elapsed = gather(tmp_path, tmp_path / "nope" / "containerd", config)
    assert result["failed"] is True
    assert "containerd binary not found" in result["msg"]


def test_twenty_megabyte_dump_from_real_containerd(tmp_path, containerd):
    # 20 MB of pod annotations on one runtime: containerd dumps them all back.
    annotations = ",".join('"gpu.example.com/annotation-%07d"' % i for i in range(600000))
    config = tmp_path / "config.toml"
    config.write_text('version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
                      '  runtime_type = "io.containerd.runc.v2"\n  pod_annotations = [%s]\n' % annotations)
    size = subprocess.run([containerd["2.1"], "--config", str(config), "config", "dump"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, check=True).stdout
    assert len(size) > 20 * 1024 * 1024
    result, _elapsed = gather(tmp_path, containerd["2.1"], config)
    assert result.get("failed") is not True, result.get("msg")
    assert result["loaded"]["runtime_names"] == ["nvidia", "runc"]
    # and a limit turns it into a clear failure instead
    limited, _elapsed = gather(tmp_path, containerd["2.1"], config, max_dump_bytes=1048576)
    assert limited["failed"] is True
    assert "more than max_dump_bytes=1048576" in limited["msg"]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_kubelet_config_that_is_a_fifo_or_dev_zero_is_not_read(tmp_path, containerd, kind):
    # A FIFO used to hang the gather forever; /dev/zero to end in MemoryError.
    config = tmp_path / "config.toml"
    config.write_text("version = 3\n")
    kubelet = tmp_path / "kubelet.yaml"
    if kind == "fifo":
        os.mkfifo(str(kubelet))
    else:
        os.symlink("/dev/zero", str(kubelet))
    result, elapsed = gather(tmp_path, containerd["2.1"], config, kubelet_config_path=str(kubelet), timeout=10)
    assert result.get("failed") is not True, result.get("msg")
    assert elapsed < 60
    kind_text = "a FIFO" if kind == "fifo" else "a character device"
    assert result["kubelet_config"] == {"path": str(kubelet), "exists": True, "content": None,
                                        "error": "%s is %s, not a regular file" % (kubelet, kind_text)}


@pytest.mark.parametrize("version", ["1.7", "2.1"])
def test_imports_dev_zero_keeps_containerds_cause_line(tmp_path, containerd, version):
    """containerd reads /dev/zero until it runs out of memory and prints a goroutine dump: the
    reason is its cause line, and the dump runs under max_memory_mb so the node's OOM killer is
    never involved (measured: under 1 GiB of RLIMIT_DATA it takes a few seconds)."""
    config = tmp_path / "config.toml"
    config.write_text('version = 2\nimports = ["/dev/zero"]\n')
    result, elapsed = gather(tmp_path, containerd[version], config, on_refused="report", timeout=60)
    assert result.get("failed") is not True, result.get("msg")
    assert "dump" not in result and result["loaded"] is None  # texts are dropped once parsed (keep_texts)
    assert result["refused"]["cause"].startswith("fatal error: ") and "out of memory" in result["refused"]["cause"]
    assert result["refused"]["rc"] == 2
    assert len(result["refused"]["stderr_tail"]) <= 2000
    assert elapsed < 60
    # with the module's default (on_refused=fail) the failure message leads with the cause
    failed, _elapsed = gather(tmp_path, containerd[version], config, timeout=60)
    assert failed["failed"] is True
    assert failed["msg"].startswith("node-x: containerd refuses the config: fatal error: ")
    assert failed["refused"]["cause"] == failed["msg"].split("refuses the config: ", 1)[1].split(" ('")[0]


@pytest.mark.parametrize("version", containerd_bins.ALL_VERSIONS)
def test_the_go_runtime_settings_leave_the_version_unchanged(version):
    """`containerd --version` runs without Go collections (GO_RUNTIME_ENV): that spares CPU only, so the
    real binary prints the same with them as without."""
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_commands as node_commands
    from tests.lib.nodes import node_binary

    binary = node_binary(version)
    argv = [binary, "--version"]
    with_settings = node_commands.finish(node_commands.start_version(binary), argv, 60)
    plain = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60,
                           check=False)
    assert with_settings == (plain.returncode, plain.stdout, plain.stderr)
    assert plain.returncode == 0 and version in plain.stdout
