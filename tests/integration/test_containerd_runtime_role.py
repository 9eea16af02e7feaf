"""Issue 8: the containerd_runtime role on nodes that other tools co-own.

Each node is a shape that a real tool publishes (tests/fixtures/shapes: nvidia-ctk, the GPU Operator,
EKS AL2023, kubespray, k3s, AgentBaker, kata) or an empty node, loaded by the real containerd 1.6,
1.7, 2.1, 2.2, 2.3 and 2.4 (and 2.3.4, which refuses a drop-in above the root's version),
through the real ansible-playbook over one multi-node local inventory. For each:
`--check` changes no byte anywhere; the run either leaves the real `config dump` with everything it
had plus the requested runtimes, or refuses the node before any byte changed; the second run is
changed=0.
"""
import glob
import os
import subprocess
import tomllib

import pytest

from tests.lib import ansible_run
from tests.lib import shapes
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
REPO = ansible_run.REPO
REMEDIATE = os.path.join(REPO, "playbooks", "remediate.yml")

RUNTIMECLASSES = """apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia}
handler: nvidia
"""

# (node, shape or None for an empty node, containerd, runtimes asked for, extra vars, expected outcome)
CASES = [
    ("empty-16", None, "1.6", "nvidia", {}, "write"),
    ("empty-17", None, "1.7", "nvidia+cdi", {}, "write"),
    ("empty-21", None, "2.1", "nvidia+cdi", {}, "write"),
    ("empty-22", None, "2.2", "nvidia+cdi", {}, "write"),
    ("empty-23", None, "2.3", "nvidia+cdi", {}, "write"),
    ("empty-24", None, "2.4", "nvidia+cdi", {}, "write"),
    # nvidia-ctk's drop-in mode already registered both: adopted, nothing written.
    ("ctk-complex-17", "nvidia-ctk-v2-complex-1.7", "1.7", "nvidia+cdi", {}, "noop"),
    ("ctk-complex-21", "nvidia-ctk-v2-complex-2.1", "2.1", "nvidia+cdi", {}, "noop"),
    # ... and a runtime it does not have goes next to its 99-nvidia.toml, which stays untouched.
    ("ctk-complex-17-kata", "nvidia-ctk-v2-complex-1.7", "1.7", "kata", {}, "write"),
    # On 2.1 its version 3 drop-in over a version 2 root makes 2.1 ignore the root's CRI keys; a version 2
    # drop-in makes 2.1 read them again: the sandbox image and registry change, so the node is refused ...
    ("ctk-complex-21-kata", "nvidia-ctk-v2-complex-2.1", "2.1", "kata", {}, "refuse"),
    # ... unless the user accepts those two changes on purpose.
    ("ctk-complex-21-kata-accept", "nvidia-ctk-v2-complex-2.1", "2.1", "kata",
     {"containerd_runtime_accept_changes": ['plugins."io.containerd.cri.v1.images".pinned_images.sandbox',
                                            'plugins."io.containerd.cri.v1.images".registry.config_path']}, "write"),
    # nvidia-ctk --set-as-default (version 3): the default stays nvidia.
    ("ctk-v3-default", "nvidia-ctk-v3-default", "2.1", "nvidia+cdi", {}, "write"),
    # EKS AL2023 GPU: default nvidia with base_runtime_spec, kept.
    ("eks-21", "eks-al2023-gpu", "2.1", "nvidia+cdi", {}, "write"),
    ("eks-23", "eks-al2023-gpu", "2.3", "nvidia+cdi", {}, "write"),
    ("eks-24", "eks-al2023-gpu", "2.4", "nvidia+cdi", {}, "write"),
    ("eks-17", "eks-al2023-gpu-1.7", "1.7", "nvidia+cdi", {}, "write"),
    # containerd 1.7: kata / a site's sandbox image and registry in a neighbour drop-in survive.
    ("kata-neighbour-17", "kata-neighbour-1.7", "1.7", "nvidia+cdi", {}, "write"),
    ("kata-ctk-17", "kata-plus-nvidia-ctk-1.7", "1.7", "nvidia+cdi", {}, "write"),
    ("site-cri-17", "site-cri-dropin-1.7", "1.7", "nvidia+cdi", {}, "write"),
    ("site-partial-17", "site-partial-dropin-1.7", "1.7", "nvidia+cdi", {}, "write"),
    # The GPU Operator's toolkit paths: adopted.
    ("gpu-operator-17", "gpu-operator", "1.7", "operator", {}, "noop"),
    # kubespray owns config.toml: only an imports entry is added, its comments stay.
    ("kubespray-17", "kubespray", "1.7", "nvidia+cdi", {}, "write"),
    ("kubespray-v3-21", "kubespray-v3", "2.1", "nvidia+cdi", {}, "write"),
    ("kubespray-v3-22", "kubespray-v3", "2.2", "nvidia+cdi", {}, "write"),
    ("kubespray-v4-23", "kubespray-v4", "2.3", "nvidia+cdi", {}, "write"),
    ("kubespray-v4-24", "kubespray-v4", "2.4", "nvidia+cdi", {}, "write"),
    # 2.3 with a version 2 main file: the drop-ins stay at version 2 (2.3.4 refuses a higher one).
    ("kubespray-v2-on-23", "kubespray", "2.3", "nvidia+cdi", {}, "write"),
    # AgentBaker: runtimes under both plugin names in a version 2 file.
    ("agentbaker-21", "agentbaker-kata", "2.1", "nvidia", {}, "write"),
    ("already-correct-21", "already-correct-2.1", "2.1", "nvidia", {}, "noop"),
    # Refused before any byte changes:
    ("latin1-17", "latin1-comment-1.7", "1.7", "nvidia+cdi", {}, "refuse"),
    ("k3s-17", "k3s", "1.7", "kata", {}, "refuse"),
    ("gpu-operator-v4-234", "gpu-operator-v4-dropin-2.3", "2.3.4", "nvidia", {}, "refuse"),
    # 2.3.7 and 2.4.2 load the GPU Operator's version 4 drop-in over the version 2 root: adopted.
    ("gpu-operator-v4-23", "gpu-operator-v4-dropin-2.3", "2.3", "operator", {}, "noop"),
    ("gpu-operator-v4-24", "gpu-operator-v4-dropin-2.3", "2.4", "operator", {}, "noop"),
    # 2.3 and 2.4 migrate a version 1 file faithfully: migrated, nothing lost.
    ("v1-23", "version1-file", "2.3", "nvidia", {}, "write"),
    # 1.7 cannot merge a version 2 drop-in into a version 1 root, and 2.1's own migrate drops the keys:
    # the role converts the file to version 2 itself (plugin ids to the URIs the node knows), proved.
    ("v1-17", "version1-file", "1.7", "nvidia", {}, "write"),
    ("v1-21", "version1-file", "2.1", "nvidia", {}, "write"),
    ("v1-24", "version1-file", "2.4", "nvidia", {}, "write"),
]
OUTCOME = dict((c[0], c[5]) for c in CASES)
ACCEPTED = {"ctk-complex-21-kata-accept": [("plugins", "io.containerd.cri.v1.images", "pinned_images", "sandbox"),
                                           ("plugins", "io.containerd.cri.v1.images", "registry", "config_path")]}
# What the closure fixes on purpose: the keys config.toml declares and the node did not load (1.7: the site's
# drop-in replaced the whole CRI section; 2.1: the version 1 CRI section is ignored) come back as declared.
# SystemdCgroup of runc comes back too, announced as disruptive: site-partial-17's kubelet asks for systemd,
# v1-21 has no kubelet config to contradict the file (test_declared_cgroup_is_announced_or_kept).
_V2_RUNC = ("plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", "runc")
_V3_RUNC = ("plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes", "runc")
RESTORED = {"site-partial-17": [_V2_RUNC + ("options", "BinaryName"), _V2_RUNC + ("options", "SystemdCgroup")],
            "v1-21": [_V3_RUNC + ("options", "BinaryName"), _V3_RUNC + ("options", "SystemdCgroup"),
                      ("plugins", "io.containerd.cri.v1.images", "pinned_images", "sandbox"),
                      ("plugins", "io.containerd.cri.v1.runtime", "cni", "bin_dirs")]}


def same_when_running(key, before, after):
    """A runc shim option between its zero value and absent (a protobuf field), or a runtime-level
    sandbox_mode between "" and 1.7's "podsandbox", which the CRI plugin fills in at start: the running
    node is the same."""
    if len(key) == 7 and key[5] == "options":
        values = [v for v in (before, after) if v != "(absent)"]
        return len(values) == 1 and values[0] in ("", 0, False, [], {})
    return len(key) == 6 and key[5] == "sandbox_mode" and set((before, after)) == {"", "podsandbox"}


def runtimes_for(kind, node):
    nvidia = {"name": "nvidia", "binary_name": node.path("usr/bin/nvidia-container-runtime")}
    cdi = {"name": "nvidia-cdi", "binary_name": node.path("usr/bin/nvidia-container-runtime.cdi")}
    if kind == "nvidia":
        return [nvidia]
    if kind == "nvidia+cdi":
        return [nvidia, cdi]
    if kind == "kata":
        return [{"name": "kata", "runtime_type": "io.containerd.kata.v2"}]
    if kind == "operator":
        return [dict(nvidia, binary_name=node.path("usr/local/nvidia/toolkit/nvidia-container-runtime")),
                dict(cdi, binary_name=node.path("usr/local/nvidia/toolkit/nvidia-container-runtime.cdi"))]
    raise ValueError(kind)


def make_node(base, name, shape, version):
    if shape is not None:
        node = shapes.install(base, name, shape, version)
    else:
        node = Node(base, name, version)
        node.config_rel, node.kubelet_rel = "etc/containerd/config.toml", "var/lib/kubelet/config.yaml"
    for rel in ("usr/bin/nvidia-container-runtime", "usr/bin/nvidia-container-runtime.cdi"):
        if not os.path.exists(node.path(rel)):  # the toolkit package installs both
            node.runtime_binary(rel)
    return node


def node_vars(node, kind, extra):
    facts = {
        "gpurt_containerd_bin": node.binary,
        "gpurt_containerd_config_path": node.path(node.config_rel),
        "gpurt_kubelet_config_path": node.path(node.kubelet_rel),
        "containerd_runtime_runtimes": runtimes_for(kind, node),
        "containerd_runtime_backup_dir": node.path("var/backups/gpurt-runtime-gate"),
        "gpurt_state_dir": node.path("var/lib/gpurt-runtime-gate"),  # its restart marker stays in the node
        "containerd_runtime_restart_command": ["sh", "-c", "echo restarted >> %s" % node.path("restarts.log")],
        "containerd_runtime_restart_proof": "config",  # no daemon runs here: the proof is the config's load
    }
    facts.update(extra)
    return facts


def real_dump(node):
    """(rc, parsed dump or None, stderr) of the real containerd loading the node's files (its defaults
    when there is no main config: what the daemon runs on then)."""
    config = node.path(node.config_rel)
    argv = [node.binary, "--config", config, "config", "dump"] if os.path.exists(config) else [node.binary, "config", "default"]
    proc = subprocess.run(argv, cwd="/", check=False,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    return proc.returncode, tomllib.loads(proc.stdout) if proc.returncode == 0 else None, proc.stderr


def leaves(doc, prefix=()):
    out = {}
    for key, value in doc.items():
        if isinstance(value, dict) and value:
            out.update(leaves(value, prefix + (key,)))
        else:
            out[prefix + (key,)] = value
    return out


def cri_runtimes(doc):
    plugin = "io.containerd.grpc.v1.cri" if "io.containerd.grpc.v1.cri" in doc["plugins"] and \
        "containerd" in doc["plugins"]["io.containerd.grpc.v1.cri"] else "io.containerd.cri.v1.runtime"
    return plugin, doc["plugins"][plugin]["containerd"]


def restarts(node):
    try:
        with open(node.path("restarts.log")) as handle:
            return len(handle.readlines())
    except IOError:
        return 0


def role_playbook(path):
    path.write_text("- hosts: all\n  gather_facts: false\n  roles:\n    - gpurt.runtime_gate.containerd_runtime\n")
    return str(path)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory, containerd):
    base = tmp_path_factory.mktemp("fleet")
    nodes = {}
    hosts = {}
    for name, shape, version, kind, extra, _outcome in CASES:
        node = make_node(base, name, shape, version)
        nodes[name] = node
        hosts[name] = node_vars(node, kind, extra)
    inventory = ansible_run.write_inventory(str(base / "inventory.json"), hosts)
    return {"base": base, "nodes": nodes, "inventory": inventory, "playbook": role_playbook(base / "role.yml")}


@pytest.fixture(scope="module")
def runs(fleet):
    nodes = fleet["nodes"]
    before = dict((n, shapes.tree(node.root)) for n, node in nodes.items())
    dumps_before = dict((n, real_dump(node)) for n, node in nodes.items())
    # The node module's temporary dirs (staging, migration) go to this TMPDIR, which must stay empty.
    private_tmp = fleet["base"] / "tmp"
    private_tmp.mkdir()
    env = {"TMPDIR": str(private_tmp)}
    check = ansible_run.playbook(fleet["playbook"], fleet["inventory"], check=True, diff=True, extra_env=env)
    after_check = dict((n, shapes.tree(node.root)) for n, node in nodes.items())
    stages_after_check = sorted(os.listdir(private_tmp))
    first = ansible_run.playbook(fleet["playbook"], fleet["inventory"], diff=True, extra_env=env)
    stages_after_first = sorted(os.listdir(private_tmp))
    after_first = dict((n, shapes.tree(node.root)) for n, node in nodes.items())
    restarts_first = dict((n, restarts(node)) for n, node in nodes.items())
    second = ansible_run.playbook(fleet["playbook"], fleet["inventory"])
    restarts_second = dict((n, restarts(node)) for n, node in nodes.items())
    return locals()


def test_check_mode_changes_no_byte_and_leaves_no_staging_dir(runs):
    assert runs["after_check"] == runs["before"]
    assert runs["stages_after_check"] == [] and runs["stages_after_first"] == []
    assert "Traceback" not in runs["check"].text


def test_check_mode_predicts_the_outcome(runs):
    recap = runs["check"].recap
    for name, outcome in OUTCOME.items():
        if outcome == "refuse":
            assert recap[name]["failed"] == 1, (name, runs["check"])
        else:
            assert recap[name]["failed"] == 0, (name, runs["check"])
            # a write reports the registration and its proof handler as changed; the real run also its restart
            assert (recap[name]["changed"] >= 1) is (outcome == "write"), (name, runs["check"])
            assert recap[name]["changed"] <= runs["first"].recap[name]["changed"], (name, runs["check"])
    assert "+++ after: " in runs["check"].out  # --diff shows the files ...
    assert "loaded config after the change" in runs["check"].out  # ... and the loaded config


@pytest.mark.parametrize("name", sorted(OUTCOME))
def test_first_run_keeps_everything_the_node_loaded(runs, fleet, name):
    node = fleet["nodes"][name]
    outcome = OUTCOME[name]
    recap = runs["first"].recap[name]
    if outcome == "refuse":
        assert recap["failed"] == 1
        assert runs["after_first"][name] == runs["before"][name], "a refused node must not change a byte"
        assert restarts(node) == 0
        return
    assert recap["failed"] == 0, runs["first"]
    rc_before, before, _err = runs["dumps_before"][name]
    rc, after, stderr = real_dump(node)
    assert rc == 0, stderr
    if outcome == "noop":
        assert recap["changed"] == 0
        assert runs["after_first"][name] == runs["before"][name]
        assert runs["restarts_first"][name] == 0
        return
    assert recap["changed"] >= 1 and runs["restarts_first"][name] == 1
    assert rc_before == 0
    # No loss: every key loaded before is loaded now with the same value, but for the runtimes asked for.
    plugin, containerd = cri_runtimes(after)
    wanted = runtimes_for(dict((c[0], c[3]) for c in CASES)[name], node)
    asked = [r["name"] for r in wanted]  # a CDI runtime asks for enable_cdi too
    old, new = leaves(before), leaves(after)
    lost = dict((k, (v, new.get(k, "(absent)"))) for k, v in old.items()
                if k != ("imports",) and new.get(k, "(absent)") != v and k not in ACCEPTED.get(name, [])
                and k not in RESTORED.get(name, []) and not same_when_running(k, v, new.get(k, "(absent)"))
                and not (len(k) > 4 and k[:4] == ("plugins", plugin, "containerd", "runtimes") and k[4] in asked)
                and not (k == ("plugins", plugin, "enable_cdi") and any(r["name"] == "nvidia-cdi" for r in wanted)))
    assert lost == {}
    for runtime in runtimes_for(dict((c[0], c[3]) for c in CASES)[name], node):
        table = containerd["runtimes"][runtime["name"]]
        assert table["runtime_type"] == runtime.get("runtime_type", "io.containerd.runc.v2")
        if runtime.get("binary_name"):
            assert table["options"]["BinaryName"] == runtime["binary_name"]


def test_second_run_is_idempotent(runs):
    for name, outcome in OUTCOME.items():
        if outcome != "refuse":
            assert runs["second"].recap[name]["changed"] == 0, (name, runs["second"])
            assert runs["restarts_second"][name] == runs["restarts_first"][name], name


def test_other_tools_files_are_never_written(runs, fleet):
    for name, node in fleet["nodes"].items():
        for path, (mode, data) in runs["before"][name].items():
            if "gpurt" in os.path.basename(path) or path == node.path(node.config_rel):
                continue
            assert runs["after_first"][name].get(path) == (mode, data), path


def test_the_loaded_default_runtime_is_kept(runs, fleet):
    for name in ("ctk-v3-default", "eks-21", "eks-17", "eks-23"):
        rc, after, _err = real_dump(fleet["nodes"][name])
        _plugin, containerd = cri_runtimes(after)
        assert containerd["default_runtime_name"] == "nvidia", name
    rc, after, _err = real_dump(fleet["nodes"]["eks-21"])
    _plugin, containerd = cri_runtimes(after)
    assert containerd["runtimes"]["nvidia"]["base_runtime_spec"].endswith("base-runtime-spec.json")


def test_the_main_config_keeps_its_comments_and_layout(runs, fleet):
    node = fleet["nodes"]["kubespray-17"]
    before = runs["before"]["kubespray-17"][node.config_path][1].decode()
    with open(node.config_path) as handle:
        after = handle.read()
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    assert len(added) == 1 and added[0].startswith("imports = ["), added
    assert [line for line in before.splitlines() if line not in after.splitlines()] == []


def test_drop_in_names_cannot_collide_with_other_tools(runs, fleet):
    names = sorted(os.path.basename(p) for p in glob.glob(fleet["nodes"]["empty-21"].path("etc/containerd/conf.d/*")))
    assert names == ["zz-gpurt-nvidia-cdi.toml", "zz-gpurt-nvidia.toml"]
    # 1.x replaces a plugin's whole section per file: one drop-in carries the CRI section, merged last.
    names = sorted(os.path.basename(p) for p in glob.glob(fleet["nodes"]["kata-neighbour-17"].path("etc/containerd/conf.d/*")))
    assert names == ["50-kata.toml", "zz-gpurt_cri.toml"]


def test_drop_ins_never_carry_a_version_above_the_main_file(runs, fleet):
    node = fleet["nodes"]["kubespray-v2-on-23"]
    for path in glob.glob(node.path("etc/containerd/conf.d/zz-gpurt*")):
        with open(path) as handle:
            assert tomllib.loads(handle.read())["version"] == 2, path


def test_refusals_say_why(runs):
    out = " ".join(runs["first"].out.split())
    assert "latin1-17: refused, nothing was written" in out and "not UTF-8" in out
    assert "v1-17: refused" not in out and "v1-21: refused" not in out  # converted (test_closure_conversion)
    assert "k3s-17: refused" in out and "k3s" in out and "config.toml.tmpl" in out
    assert "ctk-complex-21-kata: refused" in out
    assert 'plugins."io.containerd.cri.v1.images".pinned_images.sandbox: "registry.k8s.io/pause:3.10" -> ' in out
    # containerd 2.3.4 itself refuses what the GPU Operator wrote: the gather says so, nothing is written
    assert "gpu-operator-v4-234: cannot gather the node's containerd config, nothing was written" in out
    assert "drop-in config version 4 higher than root config version 2" in out
    assert "Traceback" not in runs["first"].text


def test_the_migrated_version_1_file_on_23_keeps_its_runtimes(runs, fleet):
    node = fleet["nodes"]["v1-23"]
    rc, after, _err = real_dump(node)
    _plugin, containerd = cri_runtimes(after)
    assert {"kata", "nvidia", "runc"} <= set(containerd["runtimes"])
    backups = glob.glob(node.path("var/backups/gpurt-runtime-gate/*") + node.config_path)
    assert len(backups) == 1  # the version 1 file, kept as it was
    with open(backups[0]) as handle:
        assert "[plugins.cri" in handle.read()


def test_the_reaudit_judges_what_the_role_proved(tmp_path, containerd):
    """remediate.yml: rolling batches, restart, then the re-audit of the verified state (no second gather)."""
    node = make_node(tmp_path, "n21", None, "2.1")
    manifests = tmp_path / "rc.yaml"
    manifests.write_text(RUNTIMECLASSES)
    inventory = ansible_run.write_inventory(str(tmp_path / "inv.json"), {"n21": node_vars(node, "nvidia", {})},
                                            group_vars={"gpurt_runtimeclasses_src": str(manifests)})
    result = ansible_run.playbook(REMEDIATE, inventory)
    assert result.rc == 0, result
    out = result.out
    assert out.index("Restart containerd with the configured command") < out.index("Re-audit the batch and decide whether the rollout goes on")
    lines = result.gate_lines()
    assert lines[0].startswith("n21: OK (wrote "), lines
    assert lines[-1].startswith("remediation: 1 changed (2 files written), 0 unchanged; re-audited 1 of 1 node(s): "
                                "1 OK,"), lines
    assert out.count("gpurt.runtime_gate.containerd_config_info") == 0
