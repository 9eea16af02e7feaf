"""Issue 27 item 3, no needless change, on shapes no other test uses and on every release: a runtime another
tool registered with the same effective options (an option it leaves unset is containerd's default, as the
node's own `containerd config default` gives it) is adopted: changed=0, no file written, no restart. Where a
change is still needed next to another tool's file, the run says which file takes precedence. The real
containerd loads the node before and after; a second run changes nothing."""
import json
import os

import pytest

from tests.lib import ansible_run
from tests.lib import containerd_bins
from tests.lib import shapes
from tests.integration.test_remediation_converges import host_vars, install, loaded, passed, restarts

pytestmark = pytest.mark.integration
REMEDIATE = os.path.join(ansible_run.REPO, "playbooks", "remediate.yml")
HANDLERS = ("nvidia", "nvidia-cdi", "kata-qemu")
RUNTIMECLASSES = "\n---\n".join(
    "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: %s}\nhandler: %s\n"
    "scheduling:\n  nodeSelector: {gpurt.test/%s: \"true\"}\n" % (name, name, name) for name in HANDLERS)
TOOLKIT = "usr/local/nvidia/toolkit/nvidia-container-runtime"


def remediate(tmp_path, hosts, tag):
    manifest = tmp_path / "runtimeclasses.yaml"
    manifest.write_text(RUNTIMECLASSES)
    reports = tmp_path / ("reports-" + tag)
    group = {"gpurt_runtimeclasses_src": str(manifest), "gpurt_report_dir": str(reports), "gpurt_serial": "100%",
             "gpurt_max_fail_percentage": 100, "gpurt_skip_checks": ["cdi_stale_spec"]}
    inventory = ansible_run.write_inventory(str(tmp_path / ("hosts-%s.json" % tag)), hosts, group_vars=group)
    run = ansible_run.playbook(REMEDIATE, inventory, timeout=900, extra_env={"ANSIBLE_FORKS": "4"})
    with open(str(reports / "remediate.json")) as handle:
        return run, json.load(handle)["nodes"]


def kata_qemu(node):
    """kata-qemu as kata-deploy registers it, asked of the role."""
    return {"name": "kata-qemu", "runtime_type": "io.containerd.kata-qemu.v2",
            "extra": {"runtime_path": node.path("opt/kata/bin/containerd-shim-kata-v2"),
                      "privileged_without_host_devices": True, "pod_annotations": ["io.katacontainers.*"]},
            "options": {"ConfigPath": node.path("opt/kata/share/defaults/kata-containers/configuration-qemu.toml")}}


def _skip_unbuilt(version):
    try:
        containerd_bins.binary(version)
    except containerd_bins.NotBuilt as exc:
        pytest.skip(str(exc))


# (shape, containerd release, handlers the node serves, runtimes asked of the role (None: nvidia only), cdi)
ADOPTED = [
    # nvidia-ctk's copy of a runc without SystemdCgroup: unset on every release, containerd's default false
    ("nvidia-ctk-registered-1.7", "1.6", ("nvidia", "nvidia-cdi"), None, False),
    ("nvidia-ctk-registered-2.1", "2.2", ("nvidia", "nvidia-cdi"), None, True),
    ("nvidia-ctk-registered-2.1", "2.3", ("nvidia", "nvidia-cdi"), None, True),
    ("nvidia-ctk-registered-2.1", "2.4", ("nvidia", "nvidia-cdi"), None, True),
    # the GPU Operator's toolkit on 2.4 (version 4, systemd; 2.4 has no enable_cdi key: CDI is always on)
    ("gpu-operator-toolkit-systemd-2.4", "2.4", ("nvidia", "nvidia-cdi"), "toolkit", True),
    # kata-deploy's versionless drop-in outside conf.d, loaded by the imports line it appended
    ("kata-deploy-dropin-2.2", "2.2", ("kata-qemu",), "kata", False),
    ("kata-deploy-dropin-2.2", "2.4", ("kata-qemu",), "kata", False),
]


def _facts(node, shape, handlers, asked, cdi):
    facts = host_vars(node, shape, handlers=handlers, cdi=cdi)
    if asked == "toolkit":
        facts["containerd_runtime_runtimes"] = [{"name": "nvidia", "binary_name": node.path(TOOLKIT)}]
        facts["containerd_runtime_nvidia_cdi"] = {"name": "nvidia-cdi", "binary_name": node.path(TOOLKIT + ".cdi")}
    elif asked == "kata":
        facts["containerd_runtime_runtimes"] = [kata_qemu(node)]
    return facts


@pytest.fixture(scope="module")
def adopted(tmp_path_factory, containerd):
    """Every ADOPTED case whose release is built, a host of one run: each must change nothing, so the run's
    changed=0 is each one's. Each node's tree and load before, the run and the report's entries."""
    base = tmp_path_factory.mktemp("adopted")
    out = {"nodes": {}, "before": {}, "before_doc": {}}
    hosts = {}
    for shape, version, handlers, asked, cdi in ADOPTED:
        try:
            containerd_bins.binary(version)
        except containerd_bins.NotBuilt:
            continue  # its test skips, saying so
        host = "%s--%s" % (shape, version)
        node = out["nodes"][host] = install(base / "nodes", shape, version)
        out["before_doc"][host] = loaded(node)[2]
        hosts[host] = _facts(node, shape, handlers, asked, cdi)  # host_vars lays out the shims it names
        out["before"][host] = shapes.tree(node.root)
    out["run"], out["entries"] = remediate(base, hosts, "first")
    return out


@pytest.mark.parametrize("shape, version, handlers, asked, cdi", ADOPTED,
                         ids=["%s@%s" % (s, v) for s, v, _h, _a, _c in ADOPTED])
def test_a_runtime_registered_by_another_tool_is_adopted_on_every_release(adopted, shape, version, handlers,
                                                                          asked, cdi):
    _skip_unbuilt(version)
    host = "%s--%s" % (shape, version)
    node, run, entry = adopted["nodes"][host], adopted["run"], adopted["entries"][host]
    assert passed(entry), json.dumps(entry, indent=1)
    rem = entry["remediation"]
    assert rem["outcome"] == "unchanged" and run.changed() == 0, json.dumps(rem, indent=1)
    assert shapes.tree(node.root) == adopted["before"][host] and restarts(node) == 0
    notes = " ".join(rem.get("notes") or [])
    for name in ["kata-qemu"] if asked == "kata" else ["nvidia"] + (["nvidia-cdi"] if cdi else []):
        assert "%s is already loaded as wanted" % name in notes, notes
    if shape.startswith("nvidia-ctk-registered"):  # the unset key is named with the default it takes
        assert "SystemdCgroup unset, which is containerd's default false" in notes, notes
    assert loaded(node)[2] == adopted["before_doc"][host]


def test_next_to_kata_deploy_only_the_missing_runtime_is_written_and_the_precedence_is_said(tmp_path, containerd):
    """kata-qemu adopted, nvidia written as the role's own drop-in; kata-deploy.toml (imported after conf.d)
    keeps its runtimes and takes precedence per key; a second run changes nothing."""
    _skip_unbuilt("2.2")
    shape = "kata-deploy-dropin-2.2"
    node = install(tmp_path / "nodes", shape, "2.2")
    before_runtimes, _cri, _doc = loaded(node)
    facts = _facts(node, shape, ("kata-qemu", "nvidia"), "kata", False)
    facts["containerd_runtime_runtimes"].append({"name": "nvidia", "binary_name": node.runtime_binary()})
    kata_file = node.path("opt/kata/containerd/config.d/kata-deploy.toml")
    kata_text = open(kata_file).read()
    run, nodes = remediate(tmp_path, {"k": facts}, "first")
    entry = nodes["k"]
    rem = entry["remediation"]
    assert passed(entry) and rem["outcome"] == "changed", json.dumps(entry, indent=1)
    assert rem["files"] == [node.path("etc/containerd/conf.d/zz-gpurt-nvidia.toml")], rem
    notes = " ".join(rem.get("notes") or [])
    assert "kata-qemu is already loaded as wanted" in notes, notes
    assert "precedence: containerd merges %s after the role's" % kata_file in notes, notes
    said = "".join(run.text.split())
    assert "".join(("k: precedence: containerd merges %s" % kata_file).split()) in said, run.text[-3000:]
    after, _cri, _doc = loaded(node)
    assert sorted(after) == sorted(set(before_runtimes) | {"nvidia"})
    assert after["kata-qemu"] == before_runtimes["kata-qemu"] and after["kata-clh"] == before_runtimes["kata-clh"]
    assert after["nvidia"]["options"]["SystemdCgroup"] is True  # the kubelet's systemd driver
    assert open(kata_file).read() == kata_text and restarts(node) == 1
    again, nodes = remediate(tmp_path, {"k": facts}, "second")
    assert nodes["k"]["remediation"]["outcome"] == "unchanged" and again.changed() == 0 and restarts(node) == 1
