"""Issue 27: remediation that converges on any real node. playbooks/remediate.yml through the real
ansible-playbook on nodes laid out from the shapes of real projects (tests/fixtures/shapes), loaded by
the real containerd before and after: ownership by evidence (a generator's output, a read-only tree),
proof after the restart, no needless change (a runtime another tool registered), closure of the errors
the audit reports (a version 3 file on 1.6, a 1.7 drop-in that replaced the CRI section, runc's cgroup
with and without the opt-in, shims in gpurt_shim_dirs), bad input, and check mode against the real run.

Each test states what the issue demands. Those the role does not meet yet are strict xfails: they fail
now with exactly the known wrong outcome (tests/lib/known_failure.py), and the suite fails the day one passes
unexpectedly, so the mark comes off with the change that makes it pass.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from tests.lib import ansible_run
from tests.lib import containerd_bins
from tests.lib import generators
from tests.lib import known_failure
from tests.lib import shapes

pytestmark = pytest.mark.integration
PHASE2 = "issue 27 phase 2: "
REMEDIATE = os.path.join(ansible_run.REPO, "playbooks", "remediate.yml")
AUDIT = os.path.join(ansible_run.REPO, "playbooks", "audit.yml")
GENERATORS = os.path.join(ansible_run.REPO, "tests", "lib", "generators.py")
HANDLERS = ("nvidia", "nvidia-cdi", "kata", "runsc")
RUNTIMECLASSES = "\n---\n".join(
    "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: %s}\nhandler: %s\n"
    "scheduling:\n  nodeSelector: {gpurt.test/%s: \"true\"}\n" % (name, name, name) for name in HANDLERS)


def phase2(reason):
    """A strict xfail pinned to its known wrong outcome (the test calls known_failure.unless_known)."""
    return known_failure.xfail(PHASE2 + reason)


def install(base, shape, version, mounts=False):
    try:
        return shapes.install(base, "%s--%s" % (shape, version), shape, version, mounts=mounts)
    except shapes.MountUnavailable as exc:
        pytest.skip(str(exc))


def host_vars(node, shape, handlers=("nvidia",), nvidia=True, cdi=False, restart=None, **extra):
    """The role's and the audit's variables for a shape node: its config, kubelet config, shim dirs (the
    directories of its runtime binaries), the labels of the RuntimeClasses it serves, a restart command
    that logs (or the generator's), backups inside the node."""
    info = shapes.meta(shape)
    runtimes = []
    if nvidia:
        runtimes.append({"name": "nvidia", "binary_name": node.runtime_binary()})
    dirs = sorted(set(os.path.dirname(node.path(rel)) for rel in info.get("runtime_binaries") or []))
    facts = node.host_vars(
        gpurt_containerd_config_path=node.path(node.config_rel),
        gpurt_kubelet_config_path=node.path(node.kubelet_rel),
        gpurt_cdi_spec_dirs=[node.path("etc/cdi"), node.path("var/run/cdi")],
        gpurt_shim_dirs=dirs,
        gpurt_host_root=node.root,
        gpurt_node_labels=dict(("gpurt.test/%s" % h, "true") for h in handlers),
        containerd_runtime_runtimes=runtimes,
        containerd_runtime_enable_nvidia_cdi=cdi,
        containerd_runtime_nvidia_cdi={"name": "nvidia-cdi",
                                       "binary_name": node.runtime_binary("usr/bin/nvidia-container-runtime.cdi")},
        containerd_runtime_restart_command=restart or ["sh", "-c", "echo restarted >> %s" % node.path("restarts.log")],
        containerd_runtime_restart_proof="config",  # no daemon runs here: the proof is the config's load
        containerd_runtime_backup_dir=node.path("var/backups/gpurt"),
    )
    facts.update(extra)
    return facts


def remediate(tmp_path, hosts, check=False, **extra_vars):
    """(run, {host: report entry}) of remediate.yml over hosts, every host processed."""
    manifest = tmp_path / "runtimeclasses.yaml"
    manifest.write_text(RUNTIMECLASSES)
    reports = tmp_path / ("reports-check" if check else "reports")
    group = {"gpurt_runtimeclasses_src": str(manifest), "gpurt_report_dir": str(reports),
             "gpurt_serial": "100%", "gpurt_max_fail_percentage": 100, "gpurt_skip_checks": ["cdi_stale_spec"]}
    group.update(extra_vars)
    inventory = ansible_run.write_inventory(str(tmp_path / ("hosts-check.json" if check else "hosts.json")), hosts,
                                            group_vars=group)
    run = ansible_run.playbook(REMEDIATE, inventory, check=check, timeout=900, extra_env={"ANSIBLE_FORKS": "8"})
    with open(str(reports / "remediate.json")) as handle:
        return run, json.load(handle)["nodes"]


def passed(entry):
    """Re-audited and not failing (info and warning findings allowed)."""
    return entry["status"] in ("OK", "FINDINGS") and not entry["failing"]


def verdict(entry):
    """What check mode must predict of a host: its status and the checks of its errors."""
    return entry["status"], sorted(set(f["check"] for f in entry.get("findings") or [] if f["severity"] == "error"))


def loaded(node, config_rel=None):
    """The runtimes (name -> table) and CRI table containerd loads from the node's files now."""
    import tomllib
    rc, out, err = containerd_bins.dump(node.binary, node.path(config_rel or node.config_rel))
    assert rc == 0, err
    doc = tomllib.loads(out)
    plugins = doc.get("plugins", {})
    cri = plugins.get("io.containerd.cri.v1.runtime") or plugins.get("io.containerd.grpc.v1.cri") or {}
    # containerd 1.6 lists the files it merged (imports) in no fixed order from one dump to the next
    if "imports" in doc:
        doc["imports"] = sorted(doc["imports"])
    return cri.get("containerd", {}).get("runtimes", {}), cri, doc


def restarts(node):
    path = node.path("restarts.log")
    return len(open(path).read().splitlines()) if os.path.exists(path) else 0


# The single-node cases below share two real runs of remediate.yml, one host per case (each test reads its host's
# report entry, recap line and files; every host is processed: gpurt_serial 100%, gpurt_max_fail_percentage 100).
# The second run holds only hosts that must change nothing in it: those the first run wrote (a second run is
# idempotent) and those whose runtime another tool registered (adopted, never written), so its changed=0 is theirs.
ADOPTED = [("nvidia-ctk-registered-1.7", "1.7"), ("nvidia-ctk-registered-2.1", "2.1")]
AGAIN = ["kind-1.7", "kind-2.1", "g-key"] + ["adopted-" + version for _shape, version in ADOPTED]


def _gvisor_with_keys_17_does_not_know(node):
    """config.toml's runc also carries cgroup_writable (containerd 2.1's runtime key) and the CRI section a key
    1.7 never had."""
    config = node.path(node.config_rel)
    with open(config) as handle:
        text = handle.read()
    text = text.replace('      runtime_type = "io.containerd.runc.v2"\n',
                        '      runtime_type = "io.containerd.runc.v2"\n      cgroup_writable = true\n')
    text = text.replace('  sandbox_image = "registry.k8s.io/pause:3.9"\n', '  sandbox_image = "registry.k8s.io/pause:3.9"\n'
                        '  tolerate_missing_hugepages_controller = true\n')
    assert "cgroup_writable" in text and "hugepages" in text
    with open(config, "w") as handle:
        handle.write(text)


@pytest.fixture(scope="module")
def shared(tmp_path_factory, containerd):
    """The nodes of the single-node cases, their trees (and kind's loads) before, the real run over all but the
    adopted, kind's loads and every node's restarts right after it, then the second run over AGAIN."""
    base = tmp_path_factory.mktemp("shared")
    nodes, hosts = {}, {}

    def add(host, shape, version, **kwargs):
        node = nodes[host] = install(base / host, shape, version)
        hosts[host] = host_vars(node, shape, **kwargs)
        return node

    node = nodes["m"] = install(base / "m", "microk8s", "2.1")
    hosts["m"] = host_vars(node, "microk8s", restart=[sys.executable, GENERATORS, "microk8s", node.root])
    # a start that copies its own config back with no evidence on the node (a bootstrap agent)
    node = nodes["b"] = install(base / "b", "kubeadm-documented-2.1", "2.1")
    saved = str(base / "b" / "bootstrap-config.toml")
    shutil.copyfile(node.config_path, saved)
    hosts["b"] = host_vars(node, "kubeadm-documented-2.1", restart=[
        "sh", "-c", "cp %s %s && echo restarted >> %s" % (saved, node.config_path, node.path("restarts.log"))])
    for version in ("1.7", "2.1"):
        add("kind-" + version, "kind", version)
    for shape, version in ADOPTED:
        add("adopted-" + version, shape, version, handlers=("nvidia", "nvidia-cdi"), cdi=True)
    node = add("prec", "nvidia-ctk-registered-2.1", "2.1", handlers=("nvidia",))
    other = node.runtime_binary("usr/local/nvidia/toolkit/nvidia-container-runtime")
    hosts["prec"]["containerd_runtime_runtimes"] = [{"name": "nvidia", "binary_name": other}]
    node = add("shims", "k0s", "2.1", handlers=("nvidia", "runsc"))
    hosts["shims"]["containerd_runtime_dropin_dir"] = node.path("etc/k0s/containerd.d")
    add("v", "v3-file-1.6", "1.6")
    for shape in ("gvisor-dropin-1.7", "gvisor-quickstart-1.7"):
        add(shape, shape, "1.7", handlers=("nvidia", "runsc"))
    _gvisor_with_keys_17_does_not_know(add("g-key", "gvisor-dropin-1.7", "1.7", handlers=("nvidia", "runsc")))
    for align in (False, True):
        add("cgroup-%s" % ("on" if align else "off"), "kubeadm-cgroup-mismatch-1.7", "1.7",
            containerd_runtime_align_runc_cgroup=align)
    node = nodes["m-broken"] = install(base / "m-broken", "microk8s", "2.1")
    with open(node.path("var/snap/microk8s/current/args/containerd-template.toml"), "a") as handle:
        handle.write('\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.broken\n')
    hosts["m-broken"] = host_vars(node, "microk8s", restart=[sys.executable, GENERATORS, "microk8s", node.root])
    node = add("u", "kubeadm-documented-2.1", "2.1")
    unit = node.path("etc/systemd/system/containerd.service")
    os.makedirs(os.path.dirname(unit))
    with open(unit, "wb") as handle:
        handle.write(b"[Service]\nExecStart=/usr/bin/containerd\n# \xff\n")

    out = {"nodes": nodes, "before": dict((host, shapes.tree(node.root)) for host, node in nodes.items()),
           "loaded_before": dict((host, loaded(nodes[host])) for host in ("kind-1.7", "kind-2.1"))}
    manifest = base / "rc.yaml"
    manifest.write_text(RUNTIMECLASSES)
    out["audit"] = ansible_run.playbook(
        AUDIT, ansible_run.write_inventory(str(base / "audit.json"), {"shims": hosts["shims"]}),
        {"gpurt_runtimeclasses_src": str(manifest), "gpurt_report_dir": str(base / "audit")}, check=True)
    with open(str(base / "audit" / "audit.json")) as handle:
        out["audited"] = json.load(handle)["nodes"]
    out["run"], out["entries"] = remediate(base, dict((h, v) for h, v in hosts.items() if not h.startswith("adopted-")))
    out["loaded_after"] = dict((host, loaded(nodes[host])) for host in ("kind-1.7", "kind-2.1"))
    out["restarts"] = dict((host, restarts(node)) for host, node in nodes.items())
    (base / "again").mkdir()
    out["again"], out["again_entries"] = remediate(base / "again", dict((h, hosts[h]) for h in AGAIN))
    return out


# --- ownership by evidence -------------------------------------------------------------------------

def test_a_config_its_generator_renders_at_start_is_changed_through_the_generators_input(shared):
    node, entry, run = shared["nodes"]["m"], shared["entries"]["m"], shared["run"]
    runtimes, _cri, _doc = loaded(node)  # what the next start loads: the generator has rendered again
    assert restarts(node) == 1, run
    assert passed(entry) and "nvidia" in runtimes, json.dumps(entry, indent=1)
    template = node.path("var/snap/microk8s/current/args/containerd-template.toml")
    assert "nvidia" in open(template).read() and template.replace(node.root, "") in entry["remediation"]["msg"]


def test_the_running_daemon_must_have_what_the_run_reports(tmp_path, containerd, crictl):
    if os.geteuid() != 0:
        pytest.skip("a real containerd daemon needs root")
    node = install(tmp_path / "nodes", "microk8s", "2.1")
    scratch = tempfile.mkdtemp(prefix="gk", dir="/tmp")  # unix socket paths must stay short
    restart = [sys.executable, GENERATORS, "microk8s", node.root, node.binary, scratch]
    try:
        subprocess.run(restart, check=True, timeout=60)
        facts = host_vars(node, "microk8s", restart=restart, gpurt_crictl_bin=crictl,
                          gpurt_cri_endpoint="unix://%s/containerd.sock" % scratch)
        run, nodes = remediate(tmp_path, {"m": facts})
        info = subprocess.run([crictl, "--runtime-endpoint", "unix://%s/containerd.sock" % scratch, "info"],
                              check=True, stdout=subprocess.PIPE, universal_newlines=True, timeout=30)
        running = sorted(json.loads(info.stdout)["config"]["containerd"]["runtimes"])
        entry = nodes["m"]
        # Never a pass for a runtime the running daemon does not have.
        if passed(entry):
            assert "nvidia" in running, (running, json.dumps(entry, indent=1))
        else:
            assert "did not survive the restart" in entry["reason"], json.dumps(entry, indent=1)
        assert passed(entry), (run, json.dumps(entry, indent=1))
    finally:
        generators.stop_by_pid_file(os.path.join(scratch, "pid"))
        shutil.rmtree(scratch, ignore_errors=True)


def test_a_read_only_tree_is_refused_before_any_write_in_check_mode_and_for_real(tmp_path, containerd):
    node = install(tmp_path / "nodes", "talos", "2.1", mounts=True)
    try:
        facts = host_vars(node, "talos")
        before = shapes.tree(node.root)
        check, check_nodes = remediate(tmp_path, {"t": facts}, check=True)
        real, real_nodes = remediate(tmp_path, {"t": facts})
        for run, entry in ((check, check_nodes["t"]), (real, real_nodes["t"])):
            assert entry["status"] == "REFUSED", json.dumps(entry, indent=1)
            assert "Talos" in entry["reason"] and "machine configuration" in entry["reason"], entry["reason"]
            assert "could NOT all be put back" not in run.out and "None" not in entry["reason"]
        assert shapes.tree(node.root) == before and restarts(node) == 0  # not even a backup
    finally:
        shapes.unmount(node)


@pytest.mark.parametrize("config_rel", [None, "etc/containerd/config.toml"], ids=["the-store-path", "the-usual-path"])
def test_a_config_in_a_content_addressed_store_is_refused_with_its_owners_way(tmp_path, containerd, config_rel):
    """NixOS: containerd starts with --config on a read-only /nix/store path. The role pointed at that path, or at
    /etc/containerd/config.toml (absent, never loaded), refuses the node in check mode and for real, naming Nix
    and the NixOS configuration, and writes nothing."""
    node = install(tmp_path / "nodes", "nixos", "2.1", mounts=True)
    try:
        facts = host_vars(node, "nixos")
        if config_rel:
            facts.update(gpurt_containerd_config_path=node.path(config_rel))
        before = shapes.tree(node.root)
        for check in (True, False):
            _run, nodes = remediate(tmp_path, {"nix": facts}, check=check)
            entry = nodes["nix"]
            assert entry["status"] == "REFUSED", json.dumps(entry, indent=1)
            assert "Its owner is Nix" in entry["reason"] and "nixos-rebuild switch" in entry["reason"], entry["reason"]
        assert shapes.tree(node.root) == before and restarts(node) == 0
    finally:
        shapes.unmount(node)


def test_the_evidence_reader_sees_the_real_mounts_of_a_node(tmp_path, containerd):
    """module_utils/_ownership on real mounts (the kernel's mountinfo): Talos' read-only /etc, Bottlerocket's
    tmpfs /etc/containerd and read-only /usr; the decision refuses each, naming the evidence."""
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _ownership
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _ownership_decision

    talos = install(tmp_path / "nodes", "talos", "2.1", mounts=True)
    try:
        bottlerocket = install(tmp_path / "nodes", "bottlerocket-nvidia", "1.7", mounts=True)
    except BaseException:
        shapes.unmount(talos)
        raise
    try:
        cri = talos.path("etc/cri/conf.d/cri.toml")
        evidence = _ownership.gather([cri], root=talos.root)
        assert evidence["files"][cri]["writable"]["mount"]["read_only"] is True
        assert evidence["files"][cri]["writable"]["reasons"] == [
            "%s is on a read-only mount (%s, %s)" % (cri, talos.path("etc"), evidence["files"][cri]["writable"]["mount"]["fstype"])]
        with pytest.raises(OSError):  # the evidence is the kernel's: the write really fails
            open(cri, "a").close()
        config = bottlerocket.path("etc/containerd/config.toml")
        template = bottlerocket.path("usr/share/templates/containerd-config-toml_k8s_nvidia_containerd_sock")
        evidence = _ownership.gather([config, template], root=bottlerocket.root)
        assert evidence["files"][config]["writable"]["mount"]["fstype"] == "tmpfs"
        assert evidence["files"][config]["writable"]["ok"] is True  # writable, but gone at the next boot
        assert evidence["files"][template]["writable"]["ok"] is False
        result = _ownership_decision.decide(evidence, config, config_path=config)
        assert result["decision"] == _ownership_decision.REFUSE and result["owner"] == "Bottlerocket"
    finally:
        shapes.unmount(bottlerocket)
        shapes.unmount(talos)


def test_a_runtime_the_restarted_containerd_lacks_fails_the_host_and_everything_is_put_back(shared):
    """A start that rewrites the config with no evidence on the node (a bootstrap agent copying its own file back,
    here the restart command): the proof after the restart finds no nvidia in the config containerd starts with,
    the host fails 'did not survive the restart', every file is put back and containerd restarted again."""
    node, before, entry = shared["nodes"]["b"], shared["before"]["b"], shared["entries"]["b"]
    assert entry["status"] == "FAILED" and "did not survive the restart" in entry["reason"], json.dumps(entry, indent=1)
    assert "has no runtime nvidia" in entry["reason"] and "every file was put back" in entry["reason"], entry["reason"]
    assert "restarted again" in entry["reason"] and restarts(node) == 2
    # Issue 37: the restart marker stays (no proof succeeded), naming the files the run wrote; nothing else differs.
    assert "the restart marker stays" in entry["reason"], entry["reason"]
    marker = node.path("var/lib/gpurt-runtime-gate/restart-pending.json")
    with open(marker) as handle:
        assert node.path("etc/containerd/conf.d/zz-gpurt-nvidia.toml") in json.load(handle)["files"]
    after = dict((p, v) for p, v in shapes.tree(node.root).items()
                 if "/var/backups/" not in p and not p.endswith("restarts.log") and p != marker)
    assert after == before


@pytest.mark.parametrize("version", ["1.7", "2.1"])
def test_a_node_nothing_regenerates_is_written_and_the_runtime_survives_the_restart(shared, version):
    """kind's node image: a config written once, a unit whose start writes nothing. The evidence leads to a
    plain write (no false refusal), the restarted containerd's config has nvidia, what the file declared
    stays loaded, and a second run changes nothing."""
    host = "kind-" + version
    node, entry = shared["nodes"][host], shared["entries"][host]
    before, _cri, before_doc = shared["loaded_before"][host]
    after, cri, after_doc = shared["loaded_after"][host]
    assert passed(entry) and entry["remediation"]["outcome"] == "changed", json.dumps(entry, indent=1)
    assert "after the restart the config containerd starts with" in entry["remediation"]["msg"], entry["remediation"]
    assert sorted(after) == sorted(set(before) | {"nvidia"})
    del after["nvidia"]  # the dump's tables are the loaded ones: nothing else may differ but the imports line
    before_doc.pop("imports", None)
    after_doc.pop("imports", None)
    assert after_doc == before_doc
    assert shared["restarts"][host] == 1
    again, nodes = shared["again"], shared["again_entries"]
    assert nodes[host]["remediation"]["outcome"] == "unchanged" and again.changed() == 0 and restarts(node) == 1


def test_a_template_beside_the_file_is_its_input_even_without_a_header(tmp_path, containerd):
    """k3s with the GPU Operator's toolkit pointed at config.toml.tmpl: the template, re-encoded as plain TOML,
    is all the evidence (no header, a binary unit). The change goes through the template, check mode says the
    same, and after k3s renders the template again at the restart nvidia-cdi is loaded, next to the operator's
    nvidia."""
    shape = "k3s-operator-template-1.7"
    nodes = {}
    for mode in ("check", "real"):
        node = install(tmp_path / mode, shape, "1.7")
        facts = host_vars(node, shape, handlers=("nvidia", "nvidia-cdi"), nvidia=False, cdi=True,
                          restart=[sys.executable, GENERATORS, "k3s", node.root])
        tree = shapes.tree(node.root)
        run, entries = remediate(tmp_path / mode, {"k": facts}, check=mode == "check")
        nodes[mode] = (node, tree, run, entries["k"])
    node, tree, _run, entry = nodes["check"]
    template = node.path("var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl")
    assert shapes.tree(node.root) == tree and restarts(node) == 0
    assert template in entry["remediation"]["msg"] and passed(entry), json.dumps(entry, indent=1)
    node, _tree, _run, entry = nodes["real"]
    template = node.path("var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl")
    runtimes, _cri, _doc = loaded(node)  # config.toml as k3s rendered it again at the restart
    assert passed(entry) and restarts(node) == 1, json.dumps(entry, indent=1)
    assert template in entry["remediation"]["msg"] and "conf.d" in open(template).read()
    assert sorted(runtimes) == ["nvidia", "nvidia-cdi", "runc"]
    assert runtimes["nvidia"]["options"]["BinaryName"] == node.path("usr/local/nvidia/toolkit/nvidia-container-runtime")
    assert verdict(nodes["check"][3]) == verdict(entry)


# --- no needless change ----------------------------------------------------------------------------

@pytest.mark.parametrize("shape, version", ADOPTED)
def test_a_runtime_another_tool_registered_as_wanted_is_adopted(shared, shape, version):
    host = "adopted-" + version  # a host of the second run, where every host must change nothing
    node, before, run, entry = shared["nodes"][host], shared["before"][host], shared["again"], shared["again_entries"]
    entry = entry[host]
    assert passed(entry), json.dumps(entry, indent=1)
    assert entry["remediation"]["outcome"] == "unchanged" and run.changed() == 0, json.dumps(entry["remediation"])
    assert shapes.tree(node.root) == before and restarts(node) == 0


def test_a_change_next_to_another_tools_dropin_says_what_takes_precedence(shared):
    run, entry = shared["run"], shared["entries"]["prec"]
    assert passed(entry), json.dumps(entry, indent=1)
    notes = " ".join(entry["remediation"].get("notes") or [])
    assert "99-nvidia.toml" in notes and "precedence" in notes, notes
    # 2.x: per key; the role's nvidia drop-in sorts after the toolkit's, and its BinaryName is the key both set.
    assert "zz-gpurt-nvidia.toml sorts after" in notes and "containerd.runtimes.nvidia.options.BinaryName" in notes, notes
    said = "".join(run.text.split())  # the console line for the host (Ansible wraps warnings)
    assert "".join(("prec: precedence: containerd 2.x merges").split()) in said, run.text[-3000:]


# --- closure: every error the audit reports is fixed or explained ----------------------------------

def test_shims_in_gpurt_shim_dirs_are_judged_by_the_reaudit_as_by_the_audit(shared):
    audit, audited = shared["audit"], shared["audited"]["shims"]  # the audit ran before the remediation
    assert [f for f in audited["findings"] if f["check"] == "runtime_binary"] == [], audit
    entry = shared["entries"]["shims"]
    assert [f for f in entry["findings"] if f["check"] == "runtime_binary"] == [], json.dumps(entry["findings"])
    assert passed(entry), json.dumps(entry, indent=1)


def test_a_version_3_file_on_16_is_converted_to_what_the_node_reads(shared):
    node, entry = shared["nodes"]["v"], shared["entries"]["v"]
    runtimes, _cri, _doc = loaded(node)
    assert passed(entry), json.dumps(entry, indent=1)
    assert runtimes["runc"]["options"]["SystemdCgroup"] is True and "nvidia" in runtimes


@pytest.mark.parametrize("shape", ["gvisor-dropin-1.7", "gvisor-quickstart-1.7"])
def test_a_17_section_replacement_gets_the_key_by_key_merge_back(shared, shape):
    node, entry = shared["nodes"][shape], shared["entries"][shape]
    runtimes, cri, _doc = loaded(node)
    assert passed(entry), json.dumps(entry, indent=1)
    assert sorted(runtimes) == ["nvidia", "runc", "runsc"]
    if shape == "gvisor-dropin-1.7":
        assert runtimes["runc"]["options"]["SystemdCgroup"] is True
        assert cri["sandbox_image"] == "registry.k8s.io/pause:3.9"


def test_a_key_the_17_node_does_not_know_is_no_loss_but_a_known_lost_key_comes_back(shared):
    """The class behind kind on 1.7: a key containerd 1.7 drops silently (not in its config struct) is not
    loaded today, so the merge that restores a replaced CRI section need not load it. Written here on the
    gVisor drop-in node: config.toml's runc also carries cgroup_writable (containerd 2.1's runtime key)
    and a key 1.7 never had; runc's SystemdCgroup and the sandbox image, which 1.7 knows and lost to the
    drop-in, must still come back, and runsc's free-form options stay."""
    node, entry = shared["nodes"]["g-key"], shared["entries"]["g-key"]
    runtimes, cri, _doc = loaded(node)
    assert passed(entry), json.dumps(entry, indent=1)
    assert runtimes["runc"]["options"]["SystemdCgroup"] is True and cri["sandbox_image"] == "registry.k8s.io/pause:3.9"
    assert "cgroup_writable" not in runtimes["runc"] and "tolerate_missing_hugepages_controller" not in cri
    assert runtimes["runsc"]["options"]["TypeUrl"] == "io.containerd.runsc.v1.options"
    notes = " ".join(entry["remediation"].get("notes") or [])
    assert "cgroup_writable" in notes and "tolerate_missing_hugepages_controller" in notes, notes
    again, nodes = shared["again"], shared["again_entries"]
    assert nodes["g-key"]["remediation"]["outcome"] == "unchanged" and again.changed() == 0, json.dumps(nodes["g-key"])


@pytest.mark.parametrize("align", [False, True], ids=["without-opt-in", "with-opt-in"])
def test_runc_cgroup_is_aligned_only_when_asked_and_explained_otherwise(shared, align):
    host = "cgroup-%s" % ("on" if align else "off")
    node, run, entry = shared["nodes"][host], shared["run"], shared["entries"][host]
    runtimes, _cri, _doc = loaded(node)
    if align:
        assert passed(entry) and runtimes["runc"]["options"]["SystemdCgroup"] is True, json.dumps(entry)
    else:
        assert verdict(entry) == ("FINDINGS", ["cgroup_driver"]), json.dumps(entry, indent=1)
        said = json.dumps(entry) + run.said(host)  # its report entry and its own lines of the shared run
        assert "containerd_runtime_align_runc_cgroup" in said and "drain" in said


# --- bad input -------------------------------------------------------------------------------------

def test_a_template_that_does_not_render_is_a_clear_refusal(shared):
    node, before, entry = shared["nodes"]["m-broken"], shared["before"]["m-broken"], shared["entries"]["m-broken"]
    assert entry["status"] == "REFUSED" and "containerd-template.toml" in entry["reason"], json.dumps(entry, indent=1)
    assert shapes.tree(node.root) == before


def test_a_unit_file_that_cannot_be_read_is_a_clear_refusal(shared):
    node, before, entry = shared["nodes"]["u"], shared["before"]["u"], shared["entries"]["u"]
    assert entry["status"] == "REFUSED" and "containerd.service" in entry["reason"], json.dumps(entry, indent=1)
    assert shapes.tree(node.root) == before


# --- the dry run predicts the real run -------------------------------------------------------------

# (shape, containerd, handlers its node serves, extra role variables)
CONVERGE = [
    ("microk8s", "2.1", ("nvidia",), {}),
    ("talos", "2.1", ("nvidia",), {}),
    ("bottlerocket-nvidia", "1.7", ("nvidia",), {}),
    ("flatcar", "2.3", ("nvidia",), {}),
    ("k0s", "2.1", ("nvidia", "runsc"), {}),
    ("rke2-v3", "2.1", ("nvidia", "runsc"), {}),
    ("azure-linux-3-gpu", "2.1", ("nvidia",), {}),
    ("kubeadm-documented-1.7", "1.7", ("nvidia",), {}),
    ("kubeadm-documented-2.1", "2.1", ("nvidia",), {}),
    ("kubeadm-cgroup-mismatch-1.7", "1.7", ("nvidia",), {}),
    ("nvidia-ctk-registered-1.7", "1.7", ("nvidia", "nvidia-cdi"), {"cdi": True}),
    ("nvidia-ctk-registered-2.1", "2.1", ("nvidia", "nvidia-cdi"), {"cdi": True}),
    ("gvisor-quickstart-1.7", "1.7", ("nvidia", "runsc"), {}),
    ("gvisor-dropin-1.7", "1.7", ("nvidia", "runsc"), {}),
    ("v3-file-1.6", "1.6", ("nvidia",), {}),
    ("kubespray-v4", "2.3", ("nvidia",), {}),
    ("gpu-operator-v4-dropin-2.3", "2.3", ("nvidia", "nvidia-cdi"), {}),
    ("k3s", "1.7", ("nvidia", "nvidia-cdi"), {}),
    ("site-partial-dropin-1.7", "1.7", ("nvidia",), {}),
    ("nixos", "2.1", ("nvidia",), {}),
    ("kubeadm-documented-2.3", "2.3", ("nvidia",), {}),
]


@pytest.fixture(scope="module")
def both_runs(tmp_path_factory, containerd):
    """Every CONVERGE shape twice, on fresh nodes: remediate.yml --check on one copy, the real run on the other."""
    base = tmp_path_factory.mktemp("converge")
    out = {}
    for mode in ("check", "real"):
        hosts, nodes = {}, {}
        for shape, version, handlers, extra in CONVERGE:
            node = shapes.install(base / mode, "%s--%s" % (shape, version), shape, version)
            facts = host_vars(node, shape, handlers=handlers, cdi=extra.get("cdi", False))
            if shape == "microk8s":
                facts["containerd_runtime_restart_command"] = [sys.executable, GENERATORS, "microk8s", node.root]
            hosts[node.name], nodes[node.name] = facts, node
        before = dict((name, shapes.tree(n.root)) for name, n in nodes.items())
        run, entries = remediate(base / mode, hosts, check=mode == "check")
        out[mode] = {"run": run, "entries": entries, "nodes": nodes, "before": before}
    return out


@pytest.mark.parametrize("shape, version", [(shape, version) for shape, version, _h, _x in CONVERGE])
def test_check_mode_predicts_the_real_run(both_runs, shape, version):
    name = "%s--%s" % (shape, version)
    check, real = both_runs["check"], both_runs["real"]
    assert shapes.tree(check["nodes"][name].root) == check["before"][name], "check mode changed the node"
    assert verdict(check["entries"][name]) == verdict(real["entries"][name]), json.dumps(
        {"check": check["entries"][name], "real": real["entries"][name]}, indent=1)[:8000]
    rem = check["entries"][name]["remediation"]
    if check["entries"][name]["status"] in ("OK", "FINDINGS"):
        # Every check of the real re-audit ran, but those check mode names as beyond it (the daemon after the restart).
        named = set(rem.get("not_run_in_check_mode") or ())
        assert set(check["entries"][name]["checks_run"]) | named >= set(real["entries"][name]["checks_run"]), (
            check["entries"][name]["checks_run"], real["entries"][name]["checks_run"], named)
        assert set(check["entries"][name]["checks_run"]) <= set(real["entries"][name]["checks_run"])
    if rem["changed"]:  # what check mode cannot judge is named, in the report and on the console
        assert "restart_pending" in rem["not_run_in_check_mode"], json.dumps(rem)
        said = "".join(check["run"].text.split())  # Ansible wraps warnings, at spaces and hyphens
        for line in ("%s: check mode re-audited the staged files" % name, "not run in check mode: restart_pending"):
            assert "".join(line.split()) in said, check["run"].err[-3000:]


# --- messages that are true ------------------------------------------------------------------------

def test_a_failed_write_names_the_files_it_changed_and_put_back_and_nothing_when_nothing(tmp_path, containerd):
    """The node's write on a real read-only bind mount of the drop-in dir: written after the main config, the
    drop-in fails, the main config is put back and the message names exactly that; a write whose first file
    fails says "nothing was changed", never "could NOT all be put back: None"."""
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_remediation as node_remediation
    from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import restart_proof
    node = install(tmp_path / "nodes", "kubeadm-documented-2.1", "2.1")
    dropin_dir = node.path("etc/containerd/conf.d")
    os.makedirs(dropin_dir)
    main, dropin = node.config_path, os.path.join(dropin_dir, "zz-gpurt-nvidia.toml")
    with open(main, "rb") as handle:
        original = handle.read()
    params = {"config_path": main, "dropin_dir": dropin_dir, "backup_dir": node.path("var/backups/gpurt"),
              "containerd_bin": node.binary, "timeout": 30, "max_dump_bytes": 1 << 26, "max_memory_mb": 0,
              "expected_sha256": "0" * 64, "import_patterns": [], "input_paths": []}
    main_item = {"path": main, "content": original.decode() + "\n# edited\n",
                 "expect_sha256": node_remediation.file_state(main)["sha256"]}
    dropin_item = {"path": dropin, "content": "version = 3\n", "expect_sha256": None}
    subprocess.run(["mount", "--bind", dropin_dir, dropin_dir], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", dropin_dir], check=True)
        out = node_remediation.write(dict(params, files=[main_item, dropin_item]))
        assert out["failed"] and out["changed_files"] == [main] and out["put_back"] == [main], out
        assert out["msg"].startswith("writing %s failed: Read-only file system" % dropin), out["msg"]
        line = restart_proof.files_line(out["changed_files"], out["put_back"], out["restore_problems"])
        assert line == "changed: %s; every file was put back as it was before the run" % main
        with open(main, "rb") as handle:
            assert handle.read() == original
        out = node_remediation.write(dict(params, files=[dropin_item]))
        assert out["failed"] and out["changed_files"] == [] and out["put_back"] == []
        assert restart_proof.files_line(out["changed_files"], [], out["restore_problems"]) == "nothing was changed"
    finally:
        subprocess.run(["umount", dropin_dir], check=False)
