"""Issue 27 item 7: the gather stages the likeliest plan in its own call (module_utils/_node_speculation,
plugin_utils/_remediation/speculation), so a node that only lacks the role's drop-ins costs one node
call in check mode. That stage stands for the plan's own only when the plan is exactly it, and must
then be what the plan's own stage would have returned: the same load (normalized dump), imports,
ownership evidence and staged gather. Both are taken here with the real containerd, on every 2.x shape
of tests/fixtures/shapes and on main configs written for this test, and compared."""
import os
import re
import tomllib

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpurt.runtime_gate.plugins.action import register_runtimes as action
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_remediation as node_remediation
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_speculation as node_speculation
from ansible_collections.gpurt.runtime_gate.plugins.modules import register_runtimes_node as node_module
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _remediation as remediation
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import ownership_gate
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import speculation
from tests.lib import ansible_run
from tests.lib import containerd_bins
from tests.lib import shapes
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
REMEDIATE = os.path.join(ansible_run.REPO, "playbooks", "remediate.yml")

SHAPES_2X = sorted((name, version) for name in os.listdir(shapes.SHAPES)
                   if os.path.isfile(os.path.join(shapes.SHAPES, name, "shape.json"))
                   for version in shapes.meta(name).get("containerd") or [] if version.startswith("2."))

# The real shapes whose plan is only the role's drop-ins, and maybe the imports entry that loads them.
ONE_CALL = {("kata-deploy-dropin-2.2", "2.2"), ("kubeadm-documented-2.3", "2.3"), ("kubeadm-documented-2.1", "2.1"),
            ("kind", "2.1"), ("k0s", "2.1"), ("k0s", "2.3"), ("flatcar", "2.3"), ("microk8s", "2.1"), ("nixos", "2.1")}
KUBELET = {"systemd": "kind: KubeletConfiguration\ncgroupDriver: systemd\n",
           "cgroupfs": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: cgroupfs\n",
           "unset": "kind: KubeletConfiguration\n",
           "absent": None}
# Main configs as bootstrap templates write them: (version, containerd, main text, kubelet).
WRITTEN = [
    ("3", "2.1", 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n', "systemd"),
    ("3", "2.1", '# bootstrap\nversion = 3\nimports = [\n  "{root}/etc/containerd/conf.d/*.toml", # ours\n]\n'
     '[plugins."io.containerd.cri.v1.runtime".containerd]\n  default_runtime_name = "runc"\n', "cgroupfs"),
    ("2", "2.1", 'version = 2\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n'
     '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n', "unset"),
    ("3", "2.2", "version = 3\nimports = ['{root}/etc/containerd/conf.d/*.toml']\n", "absent"),
    ("4", "2.3", 'version = 4\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n', "systemd"),
    ("3", "2.4", 'version = 3\nimports = ["conf.d/*.toml"]\n', "systemd"),
    ("3", "2.1", 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml", "{root}/etc/site/*.toml"]\n', "absent"),
    ("3", "2.1", '# site config\nversion = 3\n\n[plugins."io.containerd.cri.v1.runtime".containerd]\n'
     '  default_runtime_name = "runc"  # kept\n', "systemd"),  # imports nothing: the plan adds the entry
]


def _opts(node, config_rel, kubelet_rel, **extra):
    given = dict(config_path=node.path(config_rel), containerd_bin=node.binary, kubelet_config_path=node.path(kubelet_rel),
                 host_root=node.root, backup_dir=node.path("var/backups/gpurt"),
                 runtimes=[{"name": "nvidia", "binary_name": node.runtime_binary()}])
    given.update(extra)
    checked = ArgumentSpecValidator(remediation.ARGUMENT_SPEC).validate(given)
    assert not checked.error_messages, checked.error_messages
    return remediation.validated_options(checked.validated_parameters)


def _params(opts, step, **extra):
    given = dict((k, opts[k]) for k in action._NODE_ARGS if opts.get(k) is not None)
    given.update(step=step, dropin_dirs=remediation.dropin_dirs(opts), gather_staged=True, host_root=opts["host_root"],
                 service_names=[opts["service_name"]], **extra)
    checked = ArgumentSpecValidator(node_module.ARGUMENT_SPEC).validate(given)
    assert not checked.error_messages, checked.error_messages
    return checked.validated_parameters


def _both(opts):
    """(the speculative stage the controller would use or None, the plan's own stage, the plan); None
    when the plan refuses or changes nothing."""
    proposed = speculation.proposals(opts)
    params = _params(opts, "gather", speculate=proposed, extra_paths=[opts["runtimes"][0]["binary_name"]])
    gathered = node_remediation.gather_for_plan(params)
    speculated = node_speculation.stage(params, gathered, node_module._stage)
    try:
        the_plan = remediation.plan(gathered, opts)
    except remediation.Refusal:
        return None
    if the_plan["noop"]:
        assert speculated.get("skipped"), speculated
        return None
    used = speculation.matching_stage(the_plan, gathered, speculated, proposed)
    own = _params(opts, "stage", files=action._node_files(the_plan), staged_main=the_plan["staged_main"],
                  input_paths=the_plan.get("input_paths") or [], version_output=gathered["version_output"],
                  owned_paths=ownership_gate.evidence_paths(the_plan, gathered))
    staged = node_module._stage(own)
    return used, staged, the_plan


def _untimed(lines):
    """Loader lines without what differs between two stages of the same load: the time taken, the staging
    directory, and the row and column of a key in the main config (the node stages the main config's own
    text, the plan its serialization)."""
    out = []
    for line in lines:
        line = re.sub(r' t=(?:"[^"]*"|\S+)', "", line)
        line = re.sub(r"/tmp/gpurt-stage-[^/ ]+", "STAGE", line)
        out.append(re.sub(r" (?:row|column)=\d+", "", line))
    return out


def _same_stage(used, staged):
    for key in ("rc", "normalized_sha256", "imports", "stderr_tail", "ownership", "inputs"):
        assert used[key] == staged[key], key
    assert _untimed(used["dump_warnings"]) == _untimed(staged["dump_warnings"])
    assert (used.get("gathered") is None) == (staged.get("gathered") is None)
    if staged.get("gathered"):
        a, b = dict(used["gathered"]), dict(staged["gathered"])
        # The staged main differs in its text only: the node's own text beside the plan's serialization.
        mains = [g["files"][0] for g in (a, b)]
        assert tomllib.loads(mains[0]["content"]) == tomllib.loads(mains[1]["content"])
        for g in (a, b):
            g["files"] = [dict(f, content=None) if i == 0 else f for i, f in enumerate(g["files"])]
            g.pop("dump", None)  # its imports line names the staging directory
            g["dump_warnings"] = _untimed(g.get("dump_warnings") or [])
        assert a == b


@pytest.mark.parametrize("shape, version", SHAPES_2X)
def test_the_gathers_stage_is_the_plans_own_on_every_real_shape(tmp_path, containerd, containerd_go, shape, version):
    node = shapes.install(tmp_path, "n", shape, version)
    out = _both(_opts(node, node.config_rel, node.kubelet_rel))
    used = out is not None and out[0] is not None
    # The others: a main config the plan must edit (imports), a runtime loaded already, a refusal or no change.
    assert used == ((shape, version) in ONE_CALL)
    if used:
        _same_stage(out[0], out[1])


@pytest.mark.parametrize("main_version, version, main, kubelet", WRITTEN)
def test_the_gathers_stage_is_the_plans_own_on_written_mains(tmp_path, containerd, containerd_go, main_version, version,
                                                             main, kubelet):
    node = Node(tmp_path, "n", version)
    node.write("etc/containerd/config.toml", main)
    os.makedirs(node.path("etc/containerd/conf.d"))
    os.makedirs(node.path("etc/site"))
    if KUBELET[kubelet] is not None:
        node.write("var/lib/kubelet/config.yaml", KUBELET[kubelet])
    out = _both(_opts(node, "etc/containerd/config.toml", "var/lib/kubelet/config.yaml"))
    assert out is not None
    used, staged, the_plan = out
    assert used is not None, "the likeliest plan was not staged in the gather's call"
    # a main config that imports nothing gets the plan's imports entry, in the stage too
    assert any(w["path"] == node.config_path for w in the_plan["writes"]) == ("imports" not in main)
    _same_stage(used, staged)


def test_a_plan_other_than_the_proposal_is_staged_by_itself(tmp_path, containerd):
    """The node stages a proposal whose runtime differs from what the plan writes: it is not used."""
    node = Node(tmp_path, "n", "2.1")
    node.write("etc/containerd/config.toml", 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n')
    os.makedirs(node.path("etc/containerd/conf.d"))
    opts = _opts(node, "etc/containerd/config.toml", "var/lib/kubelet/config.yaml")
    other = _opts(node, "etc/containerd/config.toml", "var/lib/kubelet/config.yaml",
                  runtimes=[{"name": "nvidia", "binary_name": node.runtime_binary("usr/bin/other")}])
    proposed = speculation.proposals(other)
    params = _params(opts, "gather", speculate=proposed, extra_paths=[opts["runtimes"][0]["binary_name"]])
    gathered = node_remediation.gather_for_plan(params)
    speculated = node_speculation.stage(params, gathered, node_module._stage)
    assert speculated.get("staged"), speculated
    the_plan = remediation.plan(gathered, opts)
    assert speculation.matching_stage(the_plan, gathered, speculated, proposed) is None
    assert speculation.matching_stage(the_plan, gathered, speculated, speculation.proposals(opts)) is not None


def test_a_node_that_has_the_runtimes_is_not_staged(tmp_path, containerd):
    node = Node(tmp_path, "n", "2.1")
    node.write("etc/containerd/config.toml", 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n'
               '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
               '  runtime_type = "io.containerd.runc.v2"\n')
    opts = _opts(node, "etc/containerd/config.toml", "var/lib/kubelet/config.yaml")
    params = _params(opts, "gather", speculate=speculation.proposals(opts))
    gathered = node_remediation.gather_for_plan(params)
    assert node_speculation.stage(params, gathered, node_module._stage) == {"skipped": "every runtime is loaded already"}


def test_the_proposals_follow_the_kubelet_only_where_the_runtime_does():
    base = dict(dropin_dir="/etc/containerd/conf.d", dropin_prefix="zz-", dropin_suffix=".toml", dropin_glob="*.toml")
    runc = speculation.proposals(dict(base, runtimes=[{"name": "nvidia", "binary_name": "/usr/bin/n"}]))
    assert sorted(set(p["kubelet"] for p in runc)) == ["absent", "other", "systemd"]
    systemd = [p for p in runc if p["kubelet"] == "systemd" and p["version"] == 3][0]
    assert "SystemdCgroup = true" in systemd["files"][0]["content"]
    fixed = speculation.proposals(dict(base, systemd_cgroup=False, runtimes=[{"name": "nvidia", "binary_name": "/usr/bin/n"}]))
    assert [p["kubelet"] for p in fixed] == ["any", "any", "any"]
    for asks in (dict(default_runtime_name="nvidia"), dict(remove_runtimes=["old"]), dict(align_runc_cgroup=True)):
        assert speculation.proposals(dict(base, runtimes=[{"name": "nvidia"}], **asks)) == []
    assert speculation.proposals(dict(base, runtimes=[{"name": "nvidia", "cdi": True}])) == []


@pytest.mark.parametrize("content, key", [(None, "absent"), ("cgroupDriver: systemd\n", "systemd"),
                                          ('{"cgroupDriver": "systemd"}', "systemd"),
                                          ("cgroupDriver: cgroupfs\n", "other"), ("kind: KubeletConfiguration\n", "other")])
def test_the_node_reads_the_kubelets_driver_for_its_guess(content, key):
    assert node_speculation.kubelet_key({"kubelet_config": {"content": content}}) == key


def test_every_version_of_the_written_mains_is_a_real_release():
    assert set(v for _m, v, _t, _k in WRITTEN) <= set(containerd_bins.DEBIAN_VERSIONS + containerd_bins.GO_VERSIONS)


def _node_runs(run):
    """How many times the node module ran (ansible-playbook -vvv names each run of its AnsiballZ file)."""
    return len(re.findall(r"EXEC /bin/sh -c '\S+python\S* \S+/AnsiballZ_register_runtimes_node\.py", run.text))


def test_check_mode_gathers_and_stages_a_prepared_node_in_one_call_and_predicts_the_real_run(tmp_path, containerd):
    """remediate.yml on a node whose main config imports the role's drop-ins: --check runs the node module
    once (gather, evidence and stage together), the real run once more to write, once to prove after the
    restart and once to remove the restart marker the proof clears (issue 37), and both say OK with the
    runtime loaded."""
    node = Node(tmp_path, "prepared", "2.1")
    node.write("etc/containerd/config.toml", 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n')
    node.write("var/lib/kubelet/config.yaml", KUBELET["cgroupfs"])  # runc's default: no cgroup_driver finding
    os.makedirs(node.path("etc/containerd/conf.d"))
    manifest = tmp_path / "runtimeclasses.yaml"
    manifest.write_text("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n")
    facts = node.host_vars(gpurt_host_root=node.root,
                           containerd_runtime_runtimes=[{"name": "nvidia", "binary_name": node.runtime_binary()}],
                           containerd_runtime_restart_command=["true"], containerd_runtime_restart_proof="config",
                           containerd_runtime_backup_dir=node.path("var/backups/gpurt"))
    inventory = ansible_run.write_inventory(str(tmp_path / "hosts.json"), {"prepared": facts},
                                            group_vars={"gpurt_runtimeclasses_src": str(manifest)})
    before = shapes.tree(node.root)
    check = ansible_run.playbook(REMEDIATE, inventory, check=True, args=("-vvv",))
    assert check.rc == 0 and shapes.tree(node.root) == before, check
    assert _node_runs(check) == 1, check
    assert "prepared: OK (would write %s" % node.path("etc/containerd/conf.d/zz-gpurt-nvidia.toml") in check.out, check
    real = ansible_run.playbook(REMEDIATE, inventory, args=("-vvv",))
    assert real.rc == 0 and _node_runs(real) == 4, real
    assert "SystemdCgroup = false" in open(node.path("etc/containerd/conf.d/zz-gpurt-nvidia.toml")).read()
    assert "runtimes.nvidia" in containerd_bins.dump(node.binary, node.config_path)[1]
