"""Issue 3: the containerd_runtime role against the real containerd 1.6, 1.7 and 2.1 binaries,
through the real ansible-playbook over a multi-node local inventory."""
import glob
import hashlib
import json
import os

import pytest

from tests.lib import ansible_run
from tests.lib.nodes import Node
from tests.lib.containerd_bins import dump

pytestmark = pytest.mark.integration
REPO = ansible_run.REPO
REMEDIATE = os.path.join(REPO, "playbooks", "remediate.yml")

RUNTIMECLASSES = """apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia}
handler: nvidia
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia-cdi}
handler: nvidia-cdi
scheduling:
  nodeSelector: {cdi: "yes"}
"""


def role_playbook(tmp_path):
    path = tmp_path / "role.yml"
    path.write_text("- hosts: all\n  gather_facts: false\n  roles:\n    - gpurt.runtime_gate.containerd_runtime\n")
    return str(path)


def node_vars(node, cdi=True, **extra):
    binary = node.runtime_binary()
    facts = node.host_vars(
        containerd_runtime_runtimes=[{"name": "nvidia", "binary_name": binary}],
        containerd_runtime_enable_nvidia_cdi=cdi,
        containerd_runtime_nvidia_cdi={"name": "nvidia-cdi", "binary_name": binary, "cdi": True},
        containerd_runtime_restart_command=["sh", "-c", "echo restarted >> %s" % node.path("restarts.log")],
        gpurt_node_labels={"cdi": "yes" if cdi else "no"},
    )
    facts.update(extra)
    return facts


def loaded(node):
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import loaded_config
    rc, out, err = dump(node.binary, node.config_path)
    assert rc == 0, err
    return loaded_config.summarize_dump(out), err


def restarts(node):
    try:
        with open(node.path("restarts.log")) as handle:
            return len(handle.readlines())
    except IOError:
        return 0


def tree(node):
    out = {}
    for path in sorted(glob.glob(node.path("etc/containerd/**"), recursive=True)):
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                out[path] = hashlib.sha256(handle.read()).hexdigest()
    return out


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, containerd):
    """Nodes that start from: nothing (each version), a v2 file on 2.1 (migrated), a v3 file on
    1.6 (which 1.6 would silently half-ignore), and 1.7's own default config."""
    base = tmp_path_factory.mktemp("role")
    nodes = {
        "empty-1.6": Node(base, "empty-1.6", "1.6"),
        "empty-1.7": Node(base, "empty-1.7", "1.7"),
        "empty-2.1": Node(base, "empty-2.1", "2.1"),
        "v2-on-2.1": Node(base, "v2-on-2.1", "2.1"),
        "v3-on-1.6": Node(base, "v3-on-1.6", "1.6"),
        "default-1.7": Node(base, "default-1.7", "1.7"),
    }
    nodes["v2-on-2.1"].write("etc/containerd/config.toml", (
        'version = 2\nimports = ["/opt/other/*.toml"]\n'
        '[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "registry.example/pause:3.9"\n'))
    nodes["v3-on-1.6"].write("etc/containerd/config.toml", (
        'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
        '  runtime_type = "io.containerd.runc.v2"\n'))
    import subprocess
    default = subprocess.run([containerd["1.7"], "config", "default"], stdout=subprocess.PIPE,
                             universal_newlines=True, check=True).stdout
    nodes["default-1.7"].write("etc/containerd/config.toml", default)
    nodes["default-1.7"].write("var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\ncgroupDriver: systemd\n")
    hosts = dict((name, node_vars(node, cdi=not name.endswith("1.6"))) for name, node in nodes.items())
    manifests = base / "runtimeclasses.yaml"
    manifests.write_text(RUNTIMECLASSES)
    inventory = ansible_run.write_inventory(str(base / "inventory.json"), hosts,
                                            group_vars={"gpurt_runtimeclasses_src": str(manifests)})
    return {"base": base, "nodes": nodes, "inventory": inventory}


@pytest.fixture(scope="module")
def runs(fleet):
    before = dict((name, tree(node)) for name, node in fleet["nodes"].items())
    check = ansible_run.playbook(REMEDIATE, fleet["inventory"], check=True, diff=True)
    after_check = dict((name, tree(node)) for name, node in fleet["nodes"].items())
    first = ansible_run.playbook(REMEDIATE, fleet["inventory"])
    restarts_after_first = dict((name, restarts(node)) for name, node in fleet["nodes"].items())
    second = ansible_run.playbook(REMEDIATE, fleet["inventory"])
    restarts_after_second = dict((name, restarts(node)) for name, node in fleet["nodes"].items())
    return {"check": check, "first": first, "second": second, "before": before, "after_check": after_check,
            "restarts_first": restarts_after_first, "restarts_second": restarts_after_second}


def test_check_mode_changes_no_file_and_shows_diffs(runs):
    assert runs["check"].rc == 0, runs["check"]
    assert runs["before"] == runs["after_check"]
    assert runs["check"].changed() > 0  # it does report what it would change
    assert "+++ after: " in runs["check"].out
    assert all(n == 0 for n in runs["restarts_first"].values()) is False


def test_first_run_changes_and_second_is_idempotent(runs, fleet):
    assert runs["first"].rc == 0, runs["first"]
    for name in fleet["nodes"]:
        assert runs["first"].recap[name]["changed"] > 0, name
    assert runs["second"].rc == 0, runs["second"]
    assert runs["second"].changed() == 0, runs["second"]


def test_handler_fires_only_on_change(runs):
    assert all(count == 1 for count in runs["restarts_first"].values()), runs["restarts_first"]
    assert runs["restarts_second"] == runs["restarts_first"]


@pytest.mark.parametrize("name", ["empty-1.6", "empty-1.7", "empty-2.1", "v2-on-2.1", "v3-on-1.6", "default-1.7"])
def test_real_dump_has_every_requested_runtime(runs, fleet, name):
    node = fleet["nodes"][name]
    summary, stderr = loaded(node)
    expected = ["nvidia", "runc"] if name.endswith("1.6") else ["nvidia", "nvidia-cdi", "runc"]
    assert summary["runtime_names"] == expected
    assert summary["default_runtime_name"] == "runc"
    assert "Ignoring unknown key" not in stderr
    assert summary["runtimes"]["nvidia"]["binary_name"] == node.path("usr/bin/nvidia-container-runtime")
    if "nvidia-cdi" in expected:
        assert summary["enable_cdi"] is True
    version = 2 if node.version.startswith("1.") else 3
    with open(node.config_path) as handle:
        assert ("version = %d" % version) in handle.read()


def test_drop_in_layout_per_major(runs, fleet):
    def dropins(node):
        return sorted(os.path.basename(p) for p in glob.glob(node.path("etc/containerd/conf.d/*")))
    # 2.x merges drop-ins key by key: one per runtime.
    assert dropins(fleet["nodes"]["empty-2.1"]) == ["99-nvidia-cdi.toml", "99-nvidia.toml"]
    # 1.x replaces a plugin's whole section per imported file: one drop-in with the whole CRI section.
    assert dropins(fleet["nodes"]["empty-1.7"]) == ["99-runtime-gate-cri.toml"]


def test_migrated_v2_file_keeps_its_settings_and_other_imports(runs, fleet):
    node = fleet["nodes"]["v2-on-2.1"]
    with open(node.config_path) as handle:
        text = handle.read()
    assert 'sandbox = "registry.example/pause:3.9"' in text  # moved by containerd's own migration
    assert '"/opt/other/*.toml"' in text
    assert glob.glob(node.config_path + ".*~")  # the backup of the replaced file


def test_systemd_cgroup_follows_the_kubelet(runs, fleet):
    summary, _unused = loaded(fleet["nodes"]["default-1.7"])
    assert summary["runtimes"]["runc"]["systemd_cgroup"] is True
    assert summary["runtimes"]["nvidia"]["systemd_cgroup"] is True
    summary, _unused = loaded(fleet["nodes"]["empty-2.1"])  # no kubelet config: left alone
    assert summary["runtimes"]["nvidia"]["systemd_cgroup"] is None


def test_reaudit_ran_after_the_restart(runs):
    out = runs["first"].out
    assert out.index("Restart containerd with the configured command") < out.index("Cross-check it against the RuntimeClasses")
    assert "empty-2.1: OK" in runs["first"].gate_lines()


def _single(tmp_path, containerd, version, **extra):
    node = Node(tmp_path / "nodes", "n-%s" % version.replace(".", ""), version)
    inventory = ansible_run.write_inventory(str(tmp_path / "inv.json"), {node.name: node_vars(node, **extra)})
    return node, inventory


def test_old_plugin_name_under_version_3_is_caught_before_writing(tmp_path, containerd):
    node, inventory = _single(tmp_path, containerd, "2.1", containerd_runtime_cri_plugin="io.containerd.grpc.v1.cri")
    result = ansible_run.playbook(role_playbook(tmp_path), inventory)
    assert result.rc == 2
    assert "the proposed config does not load as planned; nothing was written" in result.out
    assert "runtime 'nvidia' is not in the loaded config (loaded: runc)" in result.out
    assert "Ignoring unknown key in TOML for plugin" in result.out  # containerd's own words as evidence
    assert not os.path.exists(node.config_path)
    assert restarts(node) == 0


def test_glob_that_misses_the_drop_ins_is_caught_before_writing(tmp_path, containerd):
    node, inventory = _single(tmp_path, containerd, "1.7", containerd_runtime_dropin_glob="*.conf")
    result = ansible_run.playbook(role_playbook(tmp_path), inventory)
    assert result.rc == 2
    assert "does not match drop-in(s)" in result.out
    assert "99-runtime-gate-cri.toml" in result.out
    assert not os.path.exists(node.config_path)


def test_cdi_runtime_on_1_6_is_refused(tmp_path, containerd):
    node, inventory = _single(tmp_path, containerd, "1.6", cdi=True)
    result = ansible_run.playbook(role_playbook(tmp_path), inventory)
    assert result.rc == 2
    assert "need CDI, which containerd 1.6 does not have" in result.out
    assert "Traceback" not in result.text


def test_missing_runtime_binary_is_refused(tmp_path, containerd):
    node, inventory = _single(tmp_path, containerd, "2.1")
    vars_ = json.load(open(inventory))
    vars_["all"]["hosts"][node.name]["containerd_runtime_runtimes"] = [{"name": "nvidia", "binary_name": "/nonexistent/nvidia"}]
    json.dump(vars_, open(inventory, "w"))
    result = ansible_run.playbook(role_playbook(tmp_path), inventory)
    assert result.rc == 2
    assert "BinaryName /nonexistent/nvidia is not an executable on the node" in result.out


def test_non_runc_default_needs_explicit_consent_and_prints_blast_radius(tmp_path, containerd):
    node, inventory = _single(tmp_path, containerd, "2.1", containerd_runtime_default_runtime_name="nvidia")
    result = ansible_run.playbook(role_playbook(tmp_path), inventory)
    assert result.rc == 2 and "would send every pod" in result.out
    result = ansible_run.playbook(role_playbook(tmp_path), inventory,
                                  {"containerd_runtime_allow_non_runc_default": True})
    assert result.rc == 0, result
    words = " ".join(result.out.split())  # the YAML callback folds long lines
    assert "every pod on n-21, GPU or not, now runs through nvidia" in words
    summary, _unused = loaded(node)
    assert summary["default_runtime_name"] == "nvidia"


def test_dropping_a_runtime_removes_its_drop_in(tmp_path, containerd):
    node, inventory = _single(tmp_path, containerd, "2.1", cdi=True)
    assert ansible_run.playbook(role_playbook(tmp_path), inventory).rc == 0
    assert os.path.exists(node.path("etc/containerd/conf.d/99-nvidia-cdi.toml"))
    result = ansible_run.playbook(role_playbook(tmp_path), inventory, {"containerd_runtime_enable_nvidia_cdi": False})
    assert result.rc == 0, result
    assert not os.path.exists(node.path("etc/containerd/conf.d/99-nvidia-cdi.toml"))
    summary, _unused = loaded(node)
    assert summary["runtime_names"] == ["nvidia", "runc"]
    assert restarts(node) == 2


def test_rolling_batches_stop_at_a_failed_node(tmp_path, containerd):
    good = Node(tmp_path / "nodes", "a-good", "2.1")
    bad = Node(tmp_path / "nodes", "b-bad", "2.1")
    later = Node(tmp_path / "nodes", "c-later", "2.1")
    hosts = {good.name: node_vars(good), bad.name: node_vars(bad, containerd_runtime_dropin_glob="*.conf"),
             later.name: node_vars(later)}
    manifests = tmp_path / "rc.yaml"
    manifests.write_text(RUNTIMECLASSES)
    inventory = ansible_run.write_inventory(str(tmp_path / "inv.json"), hosts,
                                            group_vars={"gpurt_runtimeclasses_src": str(manifests)})
    result = ansible_run.playbook(REMEDIATE, inventory, {"gpurt_serial": 1})
    assert result.rc == 2
    assert os.path.exists(good.config_path)
    assert not os.path.exists(bad.config_path)
    assert not os.path.exists(later.config_path), "the rollout must stop after the failed batch"
