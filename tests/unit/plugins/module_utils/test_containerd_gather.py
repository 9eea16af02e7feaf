"""The pure parts of the node-side gather: containerd's cause line, the shim name rule, the
running view's parsing. The real binaries and daemons are in tests/integration."""
import json
import os

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import containerd_gather as gather

GOROUTINE_DUMP = (
    'time="2026-01-01T00:00:00Z" level=warning msg="Configuration migrated from version 2, use `containerd config '
    'migrate` to avoid migration" t="5.7us"\n'
    "runtime: out of memory: cannot allocate 251658240-byte block (528220160 in use)\n"
    "fatal error: out of memory\n\n"
    "goroutine 1 gp=0x3567a66101e0 m=0 mp=0x28 [running]:\n"
    "runtime.throw({0x25cfc2f?, 0x3abf?})\n" + "\truntime/panic.go:1229 +0x48 fp=0x1 sp=0x2 pc=0x3\n" * 400)


@pytest.mark.parametrize("stderr, cause", [
    # imports = ["/dev/zero"] (measured on 1.6, 1.7, 2.1, 2.3.4): the cause sits above the goroutine dump
    (GOROUTINE_DUMP, "fatal error: out of memory"),
    ('time="x" level=warning msg="Configuration migrated from version 2"\n'
     "containerd: drop-in config version 3 higher than root config version 2\n",
     "containerd: drop-in config version 3 higher than root config version 2"),
    ('time="2026-01-01T00:00:00Z" level=error msg="failed to load TOML" error="toml: line 2: expected key"\n',
     'level=error msg="failed to load TOML" error="toml: line 2: expected key"'),
    ("something odd\nlast words\n", "last words"),
    ("", ""),
])
def test_cause_line(stderr, cause):
    assert gather.cause_line(stderr) == cause


def test_refusal_keeps_the_cause_and_a_bounded_tail():
    refused = gather.refusal(["containerd", "--config", "/c", "config", "dump"], 2, GOROUTINE_DUMP)
    assert refused["cause"] == "fatal error: out of memory"
    assert refused["rc"] == 2 and refused["command"] == "containerd --config /c config dump"
    assert len(refused["stderr_tail"]) <= 2000
    assert refused["warnings"] == ['level=warning msg="Configuration migrated from version 2, use `containerd config '
                                   'migrate` to avoid migration" t="5.7us"']


@pytest.mark.parametrize("runtime_type, shim", [
    ("io.containerd.kata.v2", "containerd-shim-kata-v2"),
    ("io.containerd.kata-qemu.v2", "containerd-shim-kata-qemu-v2"),
    ("io.containerd.runsc.v1", "containerd-shim-runsc-v1"),
    ("io.containerd.runc.v2", "containerd-shim-runc-v2"),
    ("/opt/kata/bin/containerd-shim-kata-v2", "/opt/kata/bin/containerd-shim-kata-v2"),
    ("kata", None),
    (".v2", None),
])
def test_shim_binary_name(runtime_type, shim):
    assert gather.shim_binary_name(runtime_type) == shim


def test_runtime_path_facts_skip_runc_and_read_every_path_key(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    text = ('[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kata]\n'
            '  runtime_type = "io.containerd.kata.v2"\n'
            '  base_runtime_spec = "/etc/containerd/base.json"\n'
            "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata.options]\n"
            "  ConfigPath = '/opt/kata/configuration.toml'\n"
            '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]\n'
            '  runtime_type = "io.containerd.runc.v2"\n  runtime_path = "/opt/runc/shim"\n')
    paths, shims = gather.runtime_path_facts([text, ""], str(tmp_path / "containerd"))
    assert sorted(paths) == ["/etc/containerd/base.json", "/opt/kata/configuration.toml", "/opt/runc/shim"]
    assert sorted(shims) == ["io.containerd.kata.v2"]
    assert shims["io.containerd.kata.v2"]["searched"][-1] == str(tmp_path)


@pytest.mark.parametrize("text, address", [
    ('version = 2\n[grpc]\n  address = "/run/k3s/containerd/containerd.sock"\n[ttrpc]\n  address = "/x"\n',
     "/run/k3s/containerd/containerd.sock"),
    ("[ttrpc]\naddress = '/x'\n[grpc]\naddress = '/run/containerd/containerd.sock'\n", "/run/containerd/containerd.sock"),
    ('[grpc]\n  uid = 0\n[ttrpc]\n  address = "/x"\n', None),
    ("version = 3\n", None),
    (None, None),
])
def test_grpc_address(text, address):
    assert gather.grpc_address(text) == address


def test_endpoint_of():
    assert gather.endpoint_of("/run/x.sock") == "unix:///run/x.sock"
    assert gather.endpoint_of("unix:///run/x.sock") == "unix:///run/x.sock"
    assert gather.endpoint_of(None) == "unix:///run/containerd/containerd.sock"


@pytest.mark.parametrize("argv, config", [
    (["/usr/bin/containerd"], "/etc/containerd/config.toml"),
    (["containerd", "--config", "/a/c.toml"], "/a/c.toml"),
    (["containerd", "-c", "/a/c.toml", "--log-level", "debug"], "/a/c.toml"),
    (["containerd", "--config=/a/c.toml"], "/a/c.toml"),
    (["containerd", "--config", "/a/c.toml", "config", "dump"], None),  # our own dump, not a daemon
    (["containerd", "--version"], "/etc/containerd/config.toml"),
    (["containerd-shim-runc-v2", "-namespace", "k8s.io"], None),
    ([], None),
])
def test_daemon_config(argv, config):
    assert gather.daemon_config(argv) == config


def test_process_start_time_of_this_process():
    import time
    started = gather.process_start_time(os.getpid())
    assert time.time() - 3600 * 24 < started <= time.time() + 1


def test_crictl_view_of_1_6_and_2_x_shapes():
    # shapes of `crictl info` measured on 1.6.20 (no enableCDI) and 2.1.9
    v16 = {"config": {"containerd": {"defaultRuntimeName": "runc", "runtimes": {
        "runc": {"runtimeType": "io.containerd.runc.v2", "options": None},
        "nvidia": {"runtimeType": "io.containerd.runc.v2", "options": {"BinaryName": "/usr/bin/nvidia-container-runtime"}}}}}}
    view = gather._crictl_view(v16)
    assert view == {"runtimes": ["nvidia", "runc"], "default_runtime_name": "runc", "enable_cdi": None,
                    "cdi_spec_dirs": None,
                    "runtime_details": {"runc": {"runtime_type": "io.containerd.runc.v2", "binary_name": ""},
                                        "nvidia": {"runtime_type": "io.containerd.runc.v2",
                                                   "binary_name": "/usr/bin/nvidia-container-runtime"}}}
    v21 = json.loads(json.dumps(v16))
    v21["config"].update(enableCDI=True, cdiSpecDirs=["/etc/cdi", "/var/run/cdi"])
    view = gather._crictl_view(v21)
    assert (view["enable_cdi"], view["cdi_spec_dirs"]) == (True, ["/etc/cdi", "/var/run/cdi"])
    with pytest.raises(ValueError, match="no 'config' object"):
        gather._crictl_view({"status": {}})


def test_crictl_missing_is_a_reason_not_an_error(tmp_path):
    view, why = gather.crictl_info(str(tmp_path / "crictl"), "unix:///nope.sock", 5)
    assert view is None and why == "crictl not found (crictl_bin=%s)" % (tmp_path / "crictl")


def test_running_view_without_crictl_or_daemon(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("version = 3\n")
    view = gather.running_view({"crictl_bin": str(tmp_path / "crictl")}, str(config), "version = 3\n", "", [str(config)], 5)
    assert view["source"] == "none" and view["runtimes"] is None
    assert view["config_newest_mtime"] == os.stat(str(config)).st_mtime
    assert view["error"] == "crictl not found (crictl_bin=%s); no running containerd daemon uses %s" % (
        tmp_path / "crictl", config)
    assert view["endpoint"] == "unix:///run/containerd/containerd.sock"
