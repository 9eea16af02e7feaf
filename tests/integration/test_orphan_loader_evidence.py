"""Orphan drop-ins judged by containerd's own loader (issue 37): a config fragment nothing imports is an
orphan only when loading it as an import, by the node's own containerd, would change what containerd
loads. Node shapes written by hand after what projects publish, loaded by the real binaries:

- Talos-like: machined merges /etc/cri/conf.d/*.part into the cri.toml that /etc/cri/containerd.toml
  imports; parts of the version 2 era carry runtime_engine/runtime_root, which containerd 2.x drops when
  it migrates the merged file (measured on 2.1-2.4: "Ignoring unknown key"; 1.x keeps them).
- microk8s-like: the snap renders args/containerd.toml from args/containerd-template.toml (${SNAP_DATA}
  and friends) at every start; an older template also carries no_pivot and runtime_engine.
- A version 2 fragment with runtime_engine/runtime_root/no_pivot beside a config that already carries
  its runtime (a provisioner merged it).
- True orphans stay errors: `.conf` vs `.toml`, nvidia-ctk's config.d vs conf.d, a 2.3 drop-in when the
  config declares no imports, and a runtime fragment whose runtime is not loaded.
- k3s-like: config.toml rendered from the user's config.toml.tmpl ({{ .NodeConfig... }} inside strings).
- A slot a generated config imports (k3s' config-v3.toml.d) is info, the directory there or not yet.

The gather runs in-process as the module runs it on a node; test_audit_and_remediation_of_a_talos_like_node
runs the real ansible-playbook audit and remediation.
"""
import json
import os

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_fragment_scan as fragment_scan
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_gather as node_gather
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _audit as audit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from tests.lib import ansible_run
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration

V2, V3 = "io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"
NV = "{root}/usr/bin/nvidia-container-runtime"
SCRATCH = 'root = "{root}/var/lib/containerd"\nstate = "{root}/run/containerd"\n'
TWO_X = ("2.1", "2.2", "2.3", "2.4")


def nvidia_v2_part(name="nvidia"):
    """A version 2 era runtime part: the keys containerd 2.x no longer has."""
    return ('[plugins."%s".containerd.runtimes.%s]\n  privileged_without_host_devices = false\n  runtime_engine = ""\n'
            '  runtime_root = ""\n  runtime_type = "io.containerd.runc.v2"\n'
            '[plugins."%s".containerd.runtimes.%s.options]\n  BinaryName = "%s"\n' % (V2, name, V2, name, NV))


def talos_like(n):
    """/etc/cri/containerd.toml imports conf.d/cri.toml, which machined merged from the parts beside it."""
    n.config_rel = "etc/cri/containerd.toml"
    n.write(n.config_rel, 'version = 2\n' + SCRATCH + 'imports = ["{root}/etc/cri/conf.d/cri.toml"]\n'
            '[debug]\n  level = "info"\n')
    base = ('version = 2\n[plugins."%s"]\n  enable_cdi = true\n  cdi_spec_dirs = ["/run/cdi"]\n'
            '[plugins."%s".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
            '  runtime_engine = ""\n  runtime_root = ""\n' % (V2, V2))
    n.write("etc/cri/conf.d/00-base.part", base)
    n.write("etc/cri/conf.d/10-nvidia-container-runtime.part", nvidia_v2_part())
    n.write("etc/cri/conf.d/cri.toml", base + nvidia_v2_part())  # the merge of the two parts
    n.runtime_binary()


MICROK8S_TEMPLATE = """# Config version 2
version = 2
oom_score = 0

[grpc]
  uid = 0
  gid = 0

[plugins."%(V2)s"]
  stream_server_address = "127.0.0.1"
  sandbox_image = "registry.k8s.io/pause:3.10"

  [plugins."%(V2)s".containerd]
    no_pivot = false
    snapshotter = "${SNAPSHOTTER}"
    default_runtime_name = "${RUNTIME}"

    [plugins."%(V2)s".containerd.runtimes.runc]
      runtime_type = "${RUNTIME_TYPE}"
      runtime_engine = ""
      runtime_root = ""

    [plugins."%(V2)s".containerd.runtimes.nvidia-container-runtime]
      runtime_type = "${RUNTIME_TYPE}"

      [plugins."%(V2)s".containerd.runtimes.nvidia-container-runtime.options]
        BinaryName = "nvidia-container-runtime"

  [plugins."%(V2)s".cni]
    bin_dir = "${SNAP_DATA}/opt/cni/bin"
    conf_dir = "${SNAP_DATA}/args/cni-network"

  [plugins."%(V2)s".registry]
    config_path = "${SNAP_DATA}/args/certs.d"
""" % {"V2": V2}


def microk8s_like(n):
    """The rendered args/containerd.toml beside the template it was rendered from."""
    args = "var/snap/microk8s/current/args/"
    n.config_rel = args + "containerd.toml"
    rendered = (MICROK8S_TEMPLATE.replace("${SNAPSHOTTER}", "overlayfs").replace("${RUNTIME}", "runc")
                .replace("${RUNTIME_TYPE}", "io.containerd.runc.v2").replace("${SNAP_DATA}", "/var/snap/microk8s/8147"))
    n.write(n.config_rel, rendered.replace("oom_score = 0\n", "oom_score = 0\n" + SCRATCH))
    n.write(args + "containerd-template.toml", MICROK8S_TEMPLATE)


def merged_v2_fragment(n):
    """A provisioner merged /etc/containerd/runtimes/nvidia.toml into config.toml; the fragment stays beside."""
    n.write(n.config_rel, 'version = 2\n' + SCRATCH + '[plugins."%s".containerd]\n  default_runtime_name = "runc"\n'
            '[plugins."%s".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n' % (V2, V2)
            + nvidia_v2_part())
    n.write("etc/containerd/runtimes/nvidia.toml", 'version = 2\n[plugins."%s".containerd]\n  no_pivot = false\n' % V2
            + nvidia_v2_part())
    n.runtime_binary()


def unmerged_v2_fragment(n):
    """The same fragment declaring a runtime the config does not have: an orphan."""
    merged_v2_fragment(n)
    n.write("etc/containerd/runtimes/nvidia.toml", 'version = 2\n[plugins."%s".containerd]\n  no_pivot = false\n' % V2
            + nvidia_v2_part("nvidia-experimental"))


def conf_vs_toml(n):
    version = 2 if n.version.startswith("1.") else 3
    plugin = V2 if version == 2 else V3
    n.write(n.config_rel, 'version = %d\n' % version + SCRATCH + 'imports = ["{root}/etc/containerd/conf.d/*.toml"]\n')
    n.write("etc/containerd/conf.d/99-nvidia.conf", 'version = %d\n[plugins."%s".containerd.runtimes.nvidia]\n'
            '  runtime_type = "io.containerd.runc.v2"\n' % (version, plugin))


def ctk_config_d(n):
    n.write(n.config_rel, 'version = 3\n' + SCRATCH + 'imports = ["{root}/etc/containerd/conf.d/*.toml"]\n')
    os.makedirs(n.path("etc/containerd/conf.d"))
    n.write("etc/containerd/config.d/99-nvidia.toml", 'version = 3\n[plugins."%s".containerd.runtimes.nvidia]\n'
            '  runtime_type = "io.containerd.runc.v2"\n' % V3)


def no_imports_23(n):
    n.write(n.config_rel, 'version = 4\n' + SCRATCH)
    n.write("etc/containerd/conf.d/99-nvidia.toml", 'version = 4\n[plugins."%s".containerd.runtimes.nvidia]\n'
            '  runtime_type = "io.containerd.runc.v2"\n' % V3)


K3S_HEADER = "# File generated by k3s. DO NOT EDIT. Use config-v3.toml.tmpl instead.\n"
K3S_TEMPLATE = """version = 2
[plugins."%(V2)s"]
  sandbox_image = "{{ .NodeConfig.AgentConfig.PauseImage }}"
[plugins."%(V2)s".containerd]
  snapshotter = "overlayfs"
[plugins."%(V2)s".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  runtime_engine = ""
  runtime_root = ""
[plugins."%(V2)s".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  runtime_engine = ""
  runtime_root = ""
[plugins."%(V2)s".containerd.runtimes.nvidia.options]
  BinaryName = "%(NV)s"
[plugins."%(V2)s".cni]
  bin_dir = "{{ .NodeConfig.AgentConfig.CNIBinDir }}"
  conf_dir = "{{ .NodeConfig.AgentConfig.CNIConfDir }}"
""" % {"V2": V2, "NV": NV}


def k3s_like_template(n):
    """k3s renders config.toml from the user's config.toml.tmpl at every start (a template written whole, Go template
    actions only inside strings, so it is TOML), runtime_engine/runtime_root copied from an old how-to."""
    d = "var/lib/rancher/k3s/agent/etc/containerd/"
    n.config_rel = d + "config.toml"
    rendered = (K3S_TEMPLATE.replace("{{ .NodeConfig.AgentConfig.PauseImage }}", "rancher/mirrored-pause:3.6")
                .replace("{{ .NodeConfig.AgentConfig.CNIBinDir }}", "/var/lib/rancher/k3s/data/cni")
                .replace("{{ .NodeConfig.AgentConfig.CNIConfDir }}", "/var/lib/rancher/k3s/agent/etc/cni/net.d"))
    n.write(n.config_rel, K3S_HEADER.replace("config-v3.toml.tmpl", "config.toml.tmpl")
            + rendered.replace("version = 2\n", "version = 2\n" + SCRATCH))
    n.write(d + "config.toml.tmpl", K3S_TEMPLATE)
    n.runtime_binary()


def k3s_slot(n):
    """k3s' generated version 3 config imports config-v3.toml.d/*.toml, created only once someone uses it."""
    n.config_rel = "var/lib/rancher/k3s/agent/etc/containerd/config.toml"
    n.write(n.config_rel, K3S_HEADER + 'version = 3\n' + SCRATCH
            + 'imports = ["{root}/var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.d/*.toml"]\n'
            '[plugins."%s".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n' % V3)


def k3s_slot_created(n):
    k3s_slot(n)
    os.makedirs(n.path("var/lib/rancher/k3s/agent/etc/containerd/config-v3.toml.d"))


# name: (layout, releases, {(check, severity): count} of orphan_dropin and dead_imports_glob)
LAYOUTS = {
    "talos-like-v2-parts": (talos_like, TWO_X, {("orphan_dropin", "info"): 2}),
    "talos-like-v2-parts-1.7": (talos_like, ("1.7",), {}),
    "microk8s-like": (microk8s_like, TWO_X, {("orphan_dropin", "info"): 1}),
    # 1.x keeps no_pivot and runtime_engine: the settings are carried as written, nothing to say
    "microk8s-like-1.7": (microk8s_like, ("1.7",), {}),
    "merged-v2-fragment": (merged_v2_fragment, TWO_X, {("orphan_dropin", "info"): 1}),
    "merged-v2-fragment-1.x": (merged_v2_fragment, ("1.6", "1.7"), {}),
    "unmerged-v2-fragment": (unmerged_v2_fragment, ("1.7",) + TWO_X, {("orphan_dropin", "error"): 1}),
    "conf-vs-toml": (conf_vs_toml, ("1.7", "2.1", "2.3"),
                     {("orphan_dropin", "error"): 1, ("dead_imports_glob", "warning"): 1}),
    "ctk-config-d": (ctk_config_d, ("2.1", "2.2"), {("orphan_dropin", "error"): 1, ("dead_imports_glob", "info"): 1}),
    "no-imports-23": (no_imports_23, ("2.3", "2.4"), {("orphan_dropin", "error"): 1}),
    "k3s-like-template": (k3s_like_template, TWO_X, {("orphan_dropin", "info"): 1}),
    "k3s-like-template-1.7": (k3s_like_template, ("1.7",), {}),
    "k3s-slot": (k3s_slot, ("2.1",), {("dead_imports_glob", "info"): 1}),
    "k3s-slot-created": (k3s_slot_created, ("2.1",), {("dead_imports_glob", "info"): 1}),
}
CASES = sorted((name, release) for name, (_setup, releases, _want) in LAYOUTS.items() for release in releases)
JUDGED = ("orphan_dropin", "dead_imports_glob")


def make(base, name, release):
    node = Node(base, "%s--%s" % (name, release), release)
    node.config_rel = "etc/containerd/config.toml"
    LAYOUTS[name][0](node)
    return node


def gather(node):
    params = dict(containerd_bin=node.binary, config_path=node.path(node.config_rel), dropin_dirs=None,
                  kubelet_config_path=node.kubelet_config_path, cdi_spec_dirs=[], timeout=30, max_file_bytes=1048576,
                  max_dump_bytes=64 << 20, max_memory_mb=1024, on_refused="report", gather_running=False,
                  read_marker=False)
    return parse_gathered.parse_gathered(node_gather.gather(params))


def judged(gathered):
    entry = audit.audit_host("node", gathered, [], labels={})
    got = {}
    for item in entry["findings"]:
        if item["check"] in JUDGED:
            got[(item["check"], item["severity"])] = got.get((item["check"], item["severity"]), 0) + 1
    return entry, got


@pytest.mark.parametrize("name, release", CASES)
def test_layout(tmp_path, name, release):
    node = make(tmp_path, name, release)
    entry, got = judged(gather(node))
    assert got == LAYOUTS[name][2], json.dumps(entry["findings"], indent=1)[:4000]


@pytest.mark.parametrize("release", TWO_X)
def test_talos_parts_are_no_orphans_because_their_load_changes_nothing(tmp_path, release):
    node = make(tmp_path, "talos-like-v2-parts", release)
    gathered = gather(node)
    part = [f for f in gathered["files"] if f["path"].endswith("10-nvidia-container-runtime.part")][0]
    # the premise: the simple test fails (containerd 2.x dropped runtime_engine and runtime_root on load)
    assert part["parsed"]["not_carried_count"] > 0
    assert any("runtime_engine" in key for key in part["parsed"]["not_carried"])
    assert part["parsed"]["load"]["state"] == "loaded" and part["parsed"]["load"]["changed_count"] == 0
    items = [f for f in audit.audit_host("node", gathered, [], labels={})["findings"] if f["subject"] == part["path"]]
    assert [i["severity"] for i in items] == ["info"]
    assert "containerd's own load of it as an import changes nothing" in items[0]["message"]
    assert items[0]["evidence"]["load"] == "loaded" and items[0]["evidence"]["would_change"] == []
    assert gathered["fragment_loads"] == {"loaded": 2, "cap": fragment_scan.MAX_LOADS, "left_out": []}


def test_microk8s_template_placeholders_are_what_the_generator_substituted(tmp_path):
    node = make(tmp_path, "microk8s-like", "2.1")
    gathered = gather(node)
    template = [f for f in gathered["files"] if f["path"].endswith("containerd-template.toml")][0]
    load = template["parsed"]["load"]
    assert load["changed_count"] == 0, load
    assert any("default_runtime_name" in key for key in load["substituted"]), load
    item = [f for f in audit.audit_host("node", gathered, [], labels={})["findings"]
            if f["subject"] == template["path"]][0]
    assert item["severity"] == "info" and "placeholders a generator fills" in item["message"]


def test_a_true_orphan_names_what_importing_it_would_change(tmp_path):
    node = make(tmp_path, "unmerged-v2-fragment", "2.1")
    item = [f for f in audit.audit_host("node", gather(node), [], labels={})["findings"]
            if f["check"] == "orphan_dropin"][0]
    assert item["severity"] == "error"
    assert "importing it would change" in item["message"] and "nvidia-experimental" in item["message"]
    assert item["evidence"]["load"] == "loaded" and item["evidence"]["would_change_count"] > 0


def test_the_cap_is_reported_and_the_rest_judged_by_their_settings(tmp_path, monkeypatch):
    node = make(tmp_path, "talos-like-v2-parts", "2.1")
    monkeypatch.setattr(fragment_scan, "MAX_LOADS", 1)
    gathered = gather(node)
    assert gathered["fragment_loads"]["loaded"] == 1
    assert gathered["fragment_loads"]["left_out"] == [node.path("etc/cri/conf.d/10-nvidia-container-runtime.part")]
    items = dict((f["subject"], f) for f in audit.audit_host("node", gathered, [], labels={})["findings"]
                 if f["check"] == "orphan_dropin")
    left = items[node.path("etc/cri/conf.d/10-nvidia-container-runtime.part")]
    # not loaded: the settings decide, and the finding says containerd did not load it
    assert left["severity"] == "error" and "judged without containerd's load" in left["message"]
    assert items[node.path("etc/cri/conf.d/00-base.part")]["severity"] == "info"


RUNTIMECLASSES = "".join(
    "---\napiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: %s}\nhandler: %s\n"
    "scheduling:\n  nodeSelector: {gpurt.test/%s: \"true\"}\n" % (h, h, h) for h in ("nvidia", "nvidia-cdi"))


def test_audit_of_healthy_nodes_with_unreferenced_fragments(tmp_path):
    """The real ansible-playbook audit of the Talos-like, microk8s-like and merged-fragment nodes on 2.1 (the
    Talos-like and merged ones serving nvidia to its RuntimeClass) exits 0 with no error."""
    (tmp_path / "manifest.yaml").write_text(RUNTIMECLASSES)
    hosts, nodes = {}, {}
    for name in ("talos-like-v2-parts", "microk8s-like", "merged-v2-fragment"):
        node = make(tmp_path / "nodes", name, "2.1")
        nodes[name] = node
        hosts[node.name] = node.host_vars(gpurt_containerd_config_path=node.path(node.config_rel),
                                          gpurt_cdi_spec_dirs=[node.path("etc/cdi")],
                                          gpurt_node_labels={"gpurt.test/nvidia": "true"} if name != "microk8s-like"
                                          else {})
    inventory = ansible_run.write_inventory(str(tmp_path / "hosts.json"), hosts)
    run = ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", "audit.yml"), inventory,
                               {"gpurt_runtimeclasses_src": str(tmp_path / "manifest.yaml"),
                                "gpurt_report_dir": str(tmp_path / "report")}, check=True, timeout=600)
    with open(str(tmp_path / "report" / "audit.json")) as handle:
        report = json.load(handle)
    assert sorted(report["nodes"]) == sorted(hosts)
    for name, entry in report["nodes"].items():
        errors = [f for f in entry["findings"] if f["severity"] == "error"]
        orphans = [f for f in entry["findings"] if f["check"] == "orphan_dropin"]
        assert not errors and orphans and all(f["severity"] == "info" for f in orphans), (name, entry["findings"])
    assert run.rc == 0, run.out[-3000:]


def test_remediation_does_not_fail_on_a_healthy_node_with_an_unreferenced_fragment(tmp_path):
    """remediate.yml adding nvidia-cdi to the merged-fragment node (2.1: a drop-in and an imports entry) writes,
    restarts, and its re-audit has no error: the fragment beside the config is judged by containerd's load."""
    (tmp_path / "manifest.yaml").write_text(RUNTIMECLASSES)
    node = make(tmp_path / "nodes", "merged-v2-fragment", "2.1")
    hosts = {node.name: node.host_vars(gpurt_containerd_config_path=node.path(node.config_rel),
                                       gpurt_cdi_spec_dirs=[node.path("etc/cdi")])}
    cdi = node.runtime_binary("usr/bin/nvidia-container-runtime.cdi")
    facts = dict(hosts[node.name], gpurt_node_labels={"gpurt.test/nvidia": "true", "gpurt.test/nvidia-cdi": "true"},
                 gpurt_host_root=node.root,
                 containerd_runtime_runtimes=[{"name": "nvidia",
                                               "binary_name": node.path("usr/bin/nvidia-container-runtime")}],
                 containerd_runtime_enable_nvidia_cdi=True,
                 containerd_runtime_nvidia_cdi={"name": "nvidia-cdi", "binary_name": cdi},
                 containerd_runtime_restart_command=["sh", "-c", "echo restarted >> %s" % node.path("restarts.log")],
                 containerd_runtime_restart_proof="config",
                 containerd_runtime_backup_dir=node.path("var/backups/gpurt"))
    group = {"gpurt_runtimeclasses_src": str(tmp_path / "manifest.yaml"), "gpurt_report_dir": str(tmp_path / "fixed"),
             "gpurt_skip_checks": ["cdi_stale_spec"]}
    inventory = ansible_run.write_inventory(str(tmp_path / "fix.json"), {node.name: facts}, group_vars=group)
    run = ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", "remediate.yml"), inventory, timeout=900)
    with open(str(tmp_path / "fixed" / "remediate.json")) as handle:
        entry = json.load(handle)["nodes"][node.name]
    assert run.rc == 0 and not entry["failing"], (run.out[-4000:], entry)
    assert os.path.exists(node.path("restarts.log"))  # it wrote and restarted: the fix really ran
    assert not [f for f in entry["findings"] if f["severity"] == "error"], entry["findings"]
    assert [f["severity"] for f in entry["findings"] if f["check"] == "orphan_dropin"] == ["info"]
