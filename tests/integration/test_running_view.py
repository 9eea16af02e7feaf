"""The running view, with real containerd daemons (1.6, 1.7, 2.1, 2.2, 2.3, 2.4) started by the test on
scratch sockets and the real crictl (tools/build-go-binaries): what the daemon loaded at its start against what the
next start loads (the dump). A change to the files without a restart is restart_pending.

The node side (node_gather.gather) runs here in-process, as the module runs it on a node;
the controller side (loaded_config, audit) judges its result. test_audit_reports_restart_pending
runs the same through the real ansible-playbook audit.
"""
import json
import os
import time

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_gather as node_gather
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _audit as audit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from tests.lib import ansible_run, containerd_bins
from tests.lib.daemon import Daemon
from tests.lib.nodes import node_binary

pytestmark = pytest.mark.integration

VERSIONS = containerd_bins.ALL_VERSIONS
NV = "/usr/bin/nvidia-container-runtime"


def runtime(name, binary=None, plugin="io.containerd.grpc.v1.cri"):
    text = '[plugins."%s".containerd.runtimes.%s]\n  runtime_type = "io.containerd.runc.v2"\n' % (plugin, name)
    if binary:
        text += '[plugins."%s".containerd.runtimes.%s.options]\n  BinaryName = "%s"\n' % (plugin, name, binary)
    return text


def gather(daemon, version, crictl_bin, **extra):
    params = dict(containerd_bin=node_binary(version), config_path=daemon.config_path, dropin_dirs=[],
                  kubelet_config_path=os.path.join(daemon.dir, "kubelet.yaml"), cdi_spec_dirs=[], timeout=20,
                  max_file_bytes=1048576, max_dump_bytes=64 << 20, max_memory_mb=1024, on_refused="report",
                  gather_running=True, crictl_bin=crictl_bin, cri_endpoint=None)
    params.update(extra)
    return parse_gathered.parse_gathered(node_gather.gather(params))


def judged(gathered, runtimeclasses=()):
    rcs = [{"name": h, "handler": h, "node_selector": {}, "overhead": None} for h in runtimeclasses]
    entry = audit.audit_host("node", gathered, rcs, labels={})
    return entry, [(f["check"], f["severity"], f["subject"]) for f in entry["findings"] if f["check"] == "restart_pending"]


@pytest.mark.parametrize("version", VERSIONS)
def test_crictl_view_then_a_change_without_restart(version, crictl):
    with Daemon(node_binary(version), runtime("runc") + runtime("nvidia", NV)) as daemon:
        gathered = gather(daemon, version, crictl)
        running = gathered["running"]
        # the endpoint comes from the loaded config's [grpc] address
        assert running["endpoint"] == daemon.endpoint
        assert running["source"] == "crictl", running
        assert running["runtimes"] == ["nvidia", "runc"]
        assert running["runtime_details"]["nvidia"] == {"runtime_type": "io.containerd.runc.v2", "binary_name": NV}
        assert running["default_runtime_name"] == "runc"
        # measured: 1.6 has no CDI at all; 1.7 defaults to off; 2.1-2.3 to on; 2.4 has no setting (always on)
        assert running["enable_cdi"] == {"1.6": None, "1.7": False, "2.4": None}.get(version, True)
        assert running["error"] is None
        entry, pending = judged(gathered, ["nvidia"])
        assert pending == [] and "restart_pending" in entry["checks_run"]
        assert entry["running"]["source"] == "crictl"

        # The files change, containerd is not restarted: the dump has nvidia-cdi, the daemon nvidia.
        daemon.write_config(runtime("runc") + runtime("nvidia-cdi", NV + ".cdi"))
        gathered = gather(daemon, version, crictl)
        assert gathered["loaded"]["runtime_names"] == ["nvidia-cdi", "runc"]
        assert gathered["running"]["runtimes"] == ["nvidia", "runc"]
        entry, pending = judged(gathered, ["nvidia-cdi"])
        assert pending == [("restart_pending", "error", "nvidia-cdi"), ("restart_pending", "warning", "nvidia")]
        item = [f for f in entry["findings"] if f["subject"] == "nvidia-cdi"][0]
        assert "containerd was not restarted after the change" in item["message"]
        assert item["evidence"]["running_runtimes"] == ["nvidia", "runc"]
        assert entry["failing"] is True


@pytest.mark.parametrize("version", VERSIONS)
def test_without_crictl_the_start_time_against_the_newest_file(version, tmp_path):
    with Daemon(node_binary(version), runtime("runc") + runtime("nvidia", NV)) as daemon:
        no_crictl = str(tmp_path / "no-crictl")
        gathered = gather(daemon, version, no_crictl)
        running = gathered["running"]
        assert running["source"] == "process", running
        assert running["pid"] == daemon.proc.pid and running["started_from"] == "proc"
        assert abs(running["daemon_started"] - time.time()) < 120
        assert running["runtimes"] is None
        assert running["crictl_error"] == "crictl not found (crictl_bin=%s)" % no_crictl
        # the file was written before the daemon started: nothing pending
        assert judged(gathered)[1] == []
        # a later change (its mtime after the start): a warning, since the runtimes cannot be compared
        later = running["daemon_started"] + 60
        os.utime(daemon.config_path, (later, later))
        entry, pending = judged(gather(daemon, version, no_crictl))
        assert pending == [("restart_pending", "warning", "config")]
        item = [f for f in entry["findings"] if f["check"] == "restart_pending"][0]
        assert "install crictl" in item["fix"] and item["evidence"]["pid"] == daemon.proc.pid


@pytest.mark.parametrize("version", ("1.6", "1.7"))
def test_1x_cri_plugin_that_cannot_load(version, crictl):
    """Measured: 1.x with runtimes declared but not runc, while the default is runc: the daemon
    serves, its CRI plugin does not load, crictl gets `unknown service runtime.v1.RuntimeService`."""
    with Daemon(node_binary(version), runtime("nvidia", NV)) as daemon:
        assert "no corresponding runtime configured" in daemon.log_text()
        gathered = gather(daemon, version, crictl)
        assert gathered["refused"] is None  # config dump itself says nothing
        assert gathered["loaded"]["runtime_names"] == ["nvidia"]
        assert "unknown service runtime.v1.RuntimeService" in gathered["running"]["crictl_error"]
        assert gathered["running"]["source"] == "process"
        entry, pending = judged(gathered, ["nvidia"])
        refused = [f for f in entry["findings"] if f["check"] == "config_refused"]
        assert [(f["severity"], f["subject"]) for f in refused] == [("error", "runc")]
        assert "its CRI plugin will not load" in refused[0]["message"]
        assert "unknown service" in refused[0]["evidence"]["running_cri"]
        assert pending == [("restart_pending", "error", "cri")]
        pending = [f for f in entry["findings"] if f["check"] == "restart_pending"][0]
        assert "the config still cannot load it (config_refused): fix the config first" in pending["message"]


def test_audit_reports_restart_pending(tmp_path, crictl, containerd):
    """The real ansible-playbook audit with a running 2.1 daemon: the JSON report carries the
    containerd version and the running view, and the lost restart fails the node."""
    manifests = tmp_path / "rc.yaml"
    manifests.write_text("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n")
    with Daemon(containerd["2.1"], runtime("runc") + runtime("nvidia", NV)) as daemon:
        daemon.write_config(runtime("runc"))  # nvidia removed from the file, containerd not restarted
        inventory = ansible_run.write_inventory(str(tmp_path / "hosts.json"), {"gpu-1": {
            "gpurt_containerd_bin": containerd["2.1"], "gpurt_containerd_config_path": daemon.config_path,
            "gpurt_dropin_dirs": [], "gpurt_crictl_bin": crictl, "gpurt_cdi_spec_dirs": []}})
        run = ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", "audit.yml"), inventory, {
            "gpurt_runtimeclasses_src": str(manifests), "gpurt_report_dir": str(tmp_path / "reports")}, check=True)
    assert run.rc == 2, run
    with open(str(tmp_path / "reports" / "audit.json")) as handle:
        report = json.load(handle)
    entry = report["nodes"]["gpu-1"]
    assert entry["containerd_version"].startswith("2.1.9")  # Debian prints 2.1.9+unknown
    assert entry["running"]["source"] == "crictl" and entry["running"]["runtimes"] == ["nvidia", "runc"]
    assert report["collection_version"] == "0.1.0"
    checks = sorted((f["check"], f["severity"], f["subject"]) for f in entry["findings"])
    assert checks == [("missing_handler", "error", "nvidia"), ("restart_pending", "warning", "nvidia")]
    assert "MISSING=nvidia" in run.out


def wrapper_path(tmp_path, directory, name):
    """(directory, name, environment): an executable NAME in a directory only the environment's PATH holds, as a
    wrapper that starts containerd gives it."""
    bin_dir = tmp_path / directory
    bin_dir.mkdir()
    (bin_dir / name).write_text("#!/bin/sh\nexit 0\n")
    os.chmod(str(bin_dir / name), 0o755)
    return bin_dir, name, dict(os.environ, PATH="%s:/usr/bin:/bin" % bin_dir)


def test_a_bare_binary_name_is_looked_up_in_the_running_daemons_own_path(tmp_path):
    """A daemon a wrapper starts (k3s, microk8s) runs with the wrapper's PATH, which no containerd.service says:
    on this machine's / the gather reads the running daemon's environment (/proc/<pid>/environ) for the PATH
    its runc shim looks a bare BinaryName up in, and names it; a node root (gpurt_host_root) keeps the unit's."""
    wrapper_bin, name, env = wrapper_path(tmp_path, "wrapper-bin", "gpurt-wrapper-only-runtime")
    with Daemon(node_binary("2.1"), runtime("runc") + runtime("wrapped", name), env=env) as daemon:
        no_crictl = str(tmp_path / "no-crictl")
        facts = gather(daemon, "2.1", no_crictl)["paths"][name]
        assert facts["exists"] and facts["executable"] and facts["resolved"] == str(wrapper_bin / name), facts
        assert facts["searched"] == [str(wrapper_bin), "/usr/bin", "/bin"]
        assert facts["path_from"] == "PATH of the running containerd daemon"
        # under a node root the running daemons of this machine are not the node's: the unit's PATH, or systemd's
        rooted = gather(daemon, "2.1", no_crictl, host_root=str(tmp_path / "node-root"))["paths"][name]
        assert not rooted["exists"] and rooted["path_from"] == "systemd's default PATH for services", rooted


def test_the_daemon_a_snap_starts_by_its_revision_path_is_the_node_config_s_daemon(tmp_path):
    """microk8s starts containerd as `$SNAP/bin/containerd --config $SNAP_DATA/args/containerd.toml ...` with
    SNAP_DATA=/var/snap/microk8s/<revision>, and the node's config is audited as
    /var/snap/microk8s/current/args/containerd.toml, a link to that revision: the same file. The running daemon
    is the node's: its start time is the running view's, and its PATH is where a bare BinaryName is looked up."""
    revision = tmp_path / "var/snap/microk8s/5372/args"
    revision.mkdir(parents=True)
    os.symlink("5372", str(tmp_path / "var/snap/microk8s/current"))
    audited = str(tmp_path / "var/snap/microk8s/current/args/containerd.toml")
    snap_bin, name, env = wrapper_path(tmp_path, "snap-bin", "gpurt-snap-only-runtime")
    with Daemon(node_binary("2.1"), runtime("runc") + runtime("wrapped", name),
                config_path=str(revision / "containerd.toml"), env=env) as daemon:
        gathered = gather(daemon, "2.1", str(tmp_path / "no-crictl"), config_path=audited)
        running = gathered["running"]
        assert running["source"] == "process" and running["pid"] == daemon.proc.pid, running
        assert running["daemon_started"] is not None, running
        facts = gathered["paths"][name]
        assert facts["exists"] and facts["resolved"] == str(snap_bin / name), facts
        assert facts["path_from"] == "PATH of the running containerd daemon", facts
