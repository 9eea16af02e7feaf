"""Issue 37: a config that disables the CRI plugin, as Docker's containerd.io package ships it
(docker/containerd-packaging's common/containerd.toml: `disabled_plugins = ["cri"]`, every other line a
comment), kept when the node was later made a Kubernetes worker. Measured on the real binaries:

- 1.6 and 1.7 dump `disabled_plugins = ["cri"]`; 2.1-2.4 dump it as `['io.containerd.grpc.v1.cri']` and still
  list the runtime plugin's runtimes (runc), so the audit used to see a healthy runtime list.
- A version 2+ file must name the URI: `disabled_plugins = ["cri"]` there is refused ("invalid disabled plugin
  URI"), which config_refused reports. 2.x also loses CRI when `io.containerd.cri.v1.runtime` or
  `io.containerd.cri.v1.images` is disabled ("unable to load CRI ... plugin dependency").
- A daemon started with such a config serves no CRI: crictl gets `unknown service runtime.v1.RuntimeService`.

The audit (real ansible-playbook audit.yml --check) reports cri_plugin_disabled naming the file and the key, and
the role refuses the node. The proof after a restart whose daemon answers no CRI: test_restart_proof_missing.py."""

import json
import os
import subprocess

import pytest

from tests.lib import ansible_run, shapes
from tests.lib.daemon import Daemon
from tests.lib.nodes import Node, node_binary

pytestmark = pytest.mark.integration

AUDIT = os.path.join(ansible_run.REPO, "playbooks", "audit.yml")
V2, V3, IMAGES = "io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images"
# The shape of Docker's packaged /etc/containerd/config.toml (docker/containerd-packaging common/containerd.toml).
DOCKER = '''#   Copyright 2018-2022 Docker Inc.

#   Licensed under the Apache License, Version 2.0 (the "License");

disabled_plugins = ["cri"]

#root = "/var/lib/containerd"
#state = "/run/containerd"
#subreaper = true
#oom_score = 0

#[grpc]
#  address = "/run/containerd/containerd.sock"
#  uid = 0
#  gid = 0
'''
RUNTIMES_V3 = '''[plugins."io.containerd.cri.v1.runtime".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  SystemdCgroup = true
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]
  BinaryName = "{root}/usr/bin/nvidia-container-runtime"
  SystemdCgroup = true
'''
KUBELET = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n"


def docker(n):
    n.write("etc/containerd/config.toml", DOCKER)


def worker(n):
    # Docker's list kept in a version 3 config that a user wrote for Kubernetes (the URI: "cri" is refused there)
    n.write("etc/containerd/config.toml", 'version = 3\ndisabled_plugins = ["%s"]\n' % V2 + RUNTIMES_V3)
    n.runtime_binary()
    n.write("var/lib/kubelet/config.yaml", KUBELET)


def images_dropin(n):
    # 2.3's version 4: a drop-in that disables the CRI images plugin, without which the CRI plugin fails to load
    n.write(
        "etc/containerd/config.toml", 'version = 4\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n' + RUNTIMES_V3
    )
    n.write("etc/containerd/conf.d/10-images.toml", 'version = 4\ndisabled_plugins = ["%s"]\n' % IMAGES)
    n.runtime_binary()
    n.write("var/lib/kubelet/config.yaml", KUBELET)


def harmless_17(n):
    # 1.x has no io.containerd.cri.v1.* plugins: disabling one changes nothing
    n.write(
        "etc/containerd/config.toml",
        'version = 2\ndisabled_plugins = ["%s", "io.containerd.internal.v1.tracing"]\n' % V3
        + RUNTIMES_V3.replace(V3, V2),
    )
    n.runtime_binary()
    n.write("var/lib/kubelet/config.yaml", KUBELET)


def tracing_21(n):
    n.write(
        "etc/containerd/config.toml",
        'version = 3\ndisabled_plugins = ["io.containerd.internal.v1.tracing"]\n' + RUNTIMES_V3,
    )
    n.runtime_binary()
    n.write("var/lib/kubelet/config.yaml", KUBELET)


# name: (release, setup, (expected subject, files that set it, names in the file)) or None for no finding
NODES = {
    "docker-16": ("1.6", docker, ("cri", ["etc/containerd/config.toml"], ["cri"])),
    "docker-17": ("1.7", docker, ("cri", ["etc/containerd/config.toml"], ["cri"])),
    "docker-21": ("2.1", docker, (V2, ["etc/containerd/config.toml"], ["cri"])),
    "docker-23": ("2.3", docker, (V2, ["etc/containerd/config.toml"], ["cri"])),
    "worker-21": ("2.1", worker, (V2, ["etc/containerd/config.toml"], [V2])),
    "images-dropin-23": ("2.3", images_dropin, (IMAGES, ["etc/containerd/conf.d/10-images.toml"], [IMAGES])),
    "harmless-17": ("1.7", harmless_17, None),
    "tracing-21": ("2.1", tracing_21, None),
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory, containerd):
    base = tmp_path_factory.mktemp("cri-disabled")
    nodes, hosts = {}, {}
    for name, (release, setup, _expected) in sorted(NODES.items()):
        node = Node(base / "nodes", name, release)
        setup(node)
        nodes[name] = node
        hosts[name] = node.host_vars(
            gpurt_cdi_spec_dirs=[node.path("etc/cdi")], gpurt_crictl_bin=node.path("no-crictl")
        )
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts=hosts, group_vars={"gpurt_node_labels": {}})
    return base, nodes, inventory


@pytest.fixture(scope="module")
def audited(lab):
    base, _nodes, inventory = lab
    report_dir = str(base / "report")
    manifests = base / "runtimeclasses"
    manifests.mkdir()
    (manifests / "nvidia.yaml").write_text(
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n"
    )
    run = ansible_run.playbook(
        AUDIT,
        inventory,
        {"gpurt_report_dir": report_dir, "gpurt_runtimeclasses_src": str(manifests)},
        check=True,
        extra_env={"ANSIBLE_FORKS": "4"},
        timeout=300,
    )
    with open(os.path.join(report_dir, "audit.json")) as handle:
        return run, json.load(handle)


@pytest.mark.parametrize("name", sorted(NODES))
def test_the_audit_names_the_file_and_the_key(lab, audited, name):
    _base, nodes, _inventory = lab
    node = nodes[name]
    expected = NODES[name][2]
    rc, out, err = node.dump()
    assert rc == 0, err
    items = [f for f in audited[1]["nodes"][name]["findings"] if f["check"] == "cri_plugin_disabled"]
    assert "cri_plugin_disabled" in audited[1]["nodes"][name]["checks_run"]
    if expected is None:
        assert items == []
        return
    subject, files, names = expected
    # the premise: the loaded config carries the entry (2.x dumps "cri" as its URI) ...
    assert "disabled_plugins = [%s]" % ("'%s'" % subject if node.version >= "2" else '"%s"' % subject) in out
    (item,) = items
    assert item["severity"] == "error" and item["subject"] == subject
    assert item["evidence"]["key"] == "disabled_plugins"
    assert item["evidence"]["files"] == [{"file": node.path(f), "names": names} for f in files]
    assert (
        "%s sets disabled_plugins = [%s]" % (node.path(files[0]), ", ".join('"%s"' % n for n in names))
        in item["message"]
    )
    assert "serves no CRI" in item["message"] and audited[1]["nodes"][name]["failing"] is True
    if node.version >= "2":
        # ... and 2.x still dumps the runtimes: only this check says the node serves none
        assert "the dump still lists runtimes (" in item["message"]


def role_playbook(path):
    path.write_text("- hosts: all\n  gather_facts: false\n  roles:\n    - gpurt.runtime_gate.containerd_runtime\n")
    return str(path)


REFUSED = ["docker-17", "docker-21", "worker-21", "images-dropin-23"]


@pytest.fixture(scope="module")
def refusals(tmp_path_factory, containerd):
    """The role over one node of each REFUSED case, in check mode and then for real: the runs, and each node's
    tree before and after the check run."""
    base = tmp_path_factory.mktemp("refusals")
    nodes, hosts = {}, {}
    for name in REFUSED:
        release, setup, _expected = NODES[name]
        node = nodes[name] = Node(base / "nodes", name, release)
        setup(node)
        hosts[name] = node.host_vars(
            containerd_runtime_runtimes=[{"name": "nvidia-cdi",
                                          "binary_name": node.runtime_binary("usr/bin/nvidia-cdi")}],
            containerd_runtime_backup_dir=node.path("var/backups/gpurt"),
            containerd_runtime_restart_command=["sh", "-c", "echo restarted >> %s" % node.path("restarts.log")],
        )
    inventory = ansible_run.write_inventory(str(base / "inv.json"), hosts)
    playbook = role_playbook(base / "role.yml")
    out = {"nodes": nodes, "before": dict((name, shapes.tree(node.root)) for name, node in nodes.items())}
    out["check"] = ansible_run.playbook(playbook, inventory, check=True)
    out["after_check"] = dict((name, shapes.tree(node.root)) for name, node in nodes.items())
    out["real"] = ansible_run.playbook(playbook, inventory)
    return out


@pytest.mark.parametrize("name", REFUSED)
def test_the_role_refuses_and_writes_nothing(refusals, name):
    _release, _setup, (_subject, files, _names) = NODES[name]
    node, before = refusals["nodes"][name], refusals["before"][name]
    for run, after in ((refusals["check"], refusals["after_check"][name]), (refusals["real"], shapes.tree(node.root))):
        assert run.rc == 2 and run.recap[name]["failed"] == 1, run
        words = run.said(name)
        assert "serves no CRI on this node: %s sets disabled_plugins" % node.path(files[0]) in words, run
        assert "Nothing was written" in words
        assert after == before


def test_the_daemon_serves_no_cri_premise(containerd, crictl):
    """Measured: Docker's packaged config on 1.6, 1.7, 2.1 and 2.3: the daemon starts, CRI is not served; the same
    with io.containerd.cri.v1.runtime (2.1) or .images (2.3) disabled; the harmless 1.7 list
    (io.containerd.cri.v1.runtime) leaves CRI served."""
    for release in ("1.6", "1.7", "2.1", "2.3"):
        with Daemon(node_binary(release), "", version_line=DOCKER) as daemon:
            proc = subprocess.run(
                [crictl, "--runtime-endpoint", daemon.endpoint, "info"],
                check=False,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                universal_newlines=True,
                timeout=30,
            )
            assert proc.returncode != 0 and "unknown service runtime.v1.RuntimeService" in proc.stderr, (release, proc)
    # 2.x loses CRI with either plugin it depends on (Daemon's scratch head is a version 3 one: 2.3 reads the
    # [grpc] address of a version 4 file elsewhere)
    for release, name in (("2.1", V3), ("2.3", IMAGES)):
        with Daemon(node_binary(release), "", version_line='version = 3\ndisabled_plugins = ["%s"]\n' % name) as daemon:
            proc = subprocess.run([crictl, "--runtime-endpoint", daemon.endpoint, "info"], check=False,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
            assert proc.returncode != 0 and "unknown service runtime.v1.RuntimeService" in proc.stderr, (release, proc)
    body = RUNTIMES_V3.replace(V3, V2).replace("{root}/usr/bin", "/usr/bin")
    with Daemon(node_binary("1.7"), body, version_line='version = 2\ndisabled_plugins = ["%s"]\n' % V3) as daemon:
        proc = subprocess.run(
            [crictl, "--runtime-endpoint", daemon.endpoint, "info"],
            check=False,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=30,
        )
        assert proc.returncode == 0, proc.stderr
        assert sorted(json.loads(proc.stdout)["config"]["containerd"]["runtimes"]) == ["nvidia", "runc"]
