"""module_utils/_node_running_view: what the running daemon loaded - the [grpc] address, the daemon's
command line, its start time, `crictl info`'s shapes - and the view without crictl or a daemon. The running
view through gather() is in test_node_gather.py; the real daemons in tests/integration."""
import json
import os

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_running_view as running_view


@pytest.mark.parametrize("text, address", [
    ('version = 2\n[grpc]\n  address = "/run/k3s/containerd/containerd.sock"\n[ttrpc]\n  address = "/x"\n',
     "/run/k3s/containerd/containerd.sock"),
    ("[ttrpc]\naddress = '/x'\n[grpc]\naddress = '/run/containerd/containerd.sock'\n", "/run/containerd/containerd.sock"),
    ('[grpc]\n  uid = 0\n[ttrpc]\n  address = "/x"\n', None),
    ("version = 3\n", None),
    (None, None),
])
def test_grpc_address(text, address):
    assert running_view.grpc_address(text) == address


def test_endpoint_of():
    assert running_view.endpoint_of("/run/x.sock") == "unix:///run/x.sock"
    assert running_view.endpoint_of("unix:///run/x.sock") == "unix:///run/x.sock"
    assert running_view.endpoint_of(None) == "unix:///run/containerd/containerd.sock"


@pytest.mark.parametrize("argv, config", [
    (["/usr/bin/containerd"], "/etc/containerd/config.toml"),
    (["containerd", "--config", "/a/c.toml"], "/a/c.toml"),
    (["containerd", "-c", "/a/c.toml", "--log-level", "debug"], "/a/c.toml"),
    (["containerd", "--config=/a/c.toml"], "/a/c.toml"),
    (["containerd", "--config", "/a/c.toml", "config", "dump"], None),  # our own dump, not a daemon
    (["containerd", "--version"], "/etc/containerd/config.toml"),
    (["containerd-shim-runc-v2", "-namespace", "k8s.io"], None),
    ([], None),
    # how real wrappers start it: k3s and rke2 (pkg/agent/containerd), k0s (docs/runtime.md), microk8s (args/containerd)
    (["containerd", "-c", "/var/lib/rancher/k3s/agent/etc/containerd/config.toml", "-a",
      "/run/k3s/containerd/containerd.sock", "--state", "/run/k3s/containerd", "--root",
      "/var/lib/rancher/k3s/agent/containerd", "-l", "debug"], "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"),
    (["/var/lib/k0s/bin/containerd", "--root=/var/lib/k0s/containerd", "--state=/run/k0s/containerd",
      "--address=/run/k0s/containerd.sock", "--config=/etc/k0s/containerd.toml"], "/etc/k0s/containerd.toml"),
    (["/snap/microk8s/5372/bin/containerd", "--config", "/var/snap/microk8s/5372/args/containerd.toml", "--root",
      "/var/snap/microk8s/common/var/lib/containerd", "--state", "/var/snap/microk8s/common/run/containerd",
      "--address", "/var/snap/microk8s/common/run/containerd.sock"], "/var/snap/microk8s/5372/args/containerd.toml"),
])
def test_daemon_config(argv, config):
    assert running_view.daemon_config(argv) == config


def test_process_start_time_of_this_process():
    import time
    started = running_view.process_start_time(os.getpid())
    assert time.time() - 3600 * 24 < started <= time.time() + 1


def test_crictl_view_of_1_6_and_2_x_shapes():
    # shapes of `crictl info` measured on 1.6.20 (no enableCDI) and 2.1.9
    v16 = {"config": {"containerd": {"defaultRuntimeName": "runc", "runtimes": {
        "runc": {"runtimeType": "io.containerd.runc.v2", "options": None},
        "nvidia": {"runtimeType": "io.containerd.runc.v2", "options": {"BinaryName": "/usr/bin/nvidia-container-runtime"}}}}}}
    view = running_view._crictl_view(v16)
    assert view == {"runtimes": ["nvidia", "runc"], "default_runtime_name": "runc", "enable_cdi": None,
                    "cdi_spec_dirs": None,
                    "runtime_details": {"runc": {"runtime_type": "io.containerd.runc.v2", "binary_name": ""},
                                        "nvidia": {"runtime_type": "io.containerd.runc.v2",
                                                   "binary_name": "/usr/bin/nvidia-container-runtime"}}}
    v21 = json.loads(json.dumps(v16))
    v21["config"].update(enableCDI=True, cdiSpecDirs=["/etc/cdi", "/var/run/cdi"])
    view = running_view._crictl_view(v21)
    assert (view["enable_cdi"], view["cdi_spec_dirs"]) == (True, ["/etc/cdi", "/var/run/cdi"])
    with pytest.raises(ValueError, match="no 'config' object"):
        running_view._crictl_view({"status": {}})


def test_crictl_missing_is_a_reason_not_an_error(tmp_path):
    view, why = running_view.crictl_info(str(tmp_path / "crictl"), "unix:///nope.sock", 5)
    assert view is None and why == "crictl not found (crictl_bin=%s)" % (tmp_path / "crictl")


def test_running_view_without_crictl_or_daemon(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("version = 3\n")
    view = running_view.running_view({"crictl_bin": str(tmp_path / "crictl")}, str(config), "version = 3\n", "", [str(config)], 5)
    assert view["source"] == "none" and view["runtimes"] is None
    assert view["config_newest_mtime"] == os.stat(str(config)).st_mtime
    assert view["error"] == "crictl not found (crictl_bin=%s); no running containerd daemon uses %s" % (
        tmp_path / "crictl", config)
    assert view["endpoint"] == "unix:///run/containerd/containerd.sock"


def test_a_daemon_config_is_the_same_file_through_a_symlink_or_its_working_directory(tmp_path):
    # microk8s: the daemon runs with the snap revision's directory, which .../current links to
    revision = tmp_path / "var/snap/microk8s/5372/args"
    revision.mkdir(parents=True)
    (revision / "containerd.toml").write_text("version = 2\n")
    os.symlink("5372", str(tmp_path / "var/snap/microk8s/current"))
    audited = str(tmp_path / "var/snap/microk8s/current/args/containerd.toml")
    assert running_view.same_config(str(revision / "containerd.toml"), None, audited)
    assert running_view.same_config(str(tmp_path / "var/snap/microk8s/5372/args/../args/containerd.toml"), None, audited)
    # a relative --config is the daemon's working directory's, not ours
    assert running_view.same_config("args/containerd.toml", str(tmp_path / "var/snap/microk8s/5372"), audited)
    assert not running_view.same_config("args/containerd.toml", None, audited)
    assert not running_view.same_config("args/containerd.toml", str(tmp_path), audited)
    # another file is another file, even with the same name
    other = tmp_path / "etc/containerd"
    other.mkdir(parents=True)
    (other / "containerd.toml").write_text("version = 2\n")
    assert not running_view.same_config(str(other / "containerd.toml"), None, audited)
