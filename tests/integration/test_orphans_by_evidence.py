"""Drop-ins found by their content, not by the name of their directory, and drop-in slots that wait
empty on purpose: layouts written from what real projects publish, each loaded by the real containerd
of the releases it is meant for and judged by the real `ansible-playbook audit.yml --check`.

- k0s, user-managed config (docs/runtime.md: remove '# k0s_managed=true' and write your own
  /etc/k0s/containerd.toml): imports = [] there, and a correct-looking containerd.d/nvidia.toml is never
  loaded: an orphan_dropin error naming the glob that would load it, besides MISSING.
- k0s' own generated config imports containerd.d/*.toml, empty at first: a slot (info).
- EKS AL2 (amazon-eks-ami #1630): imports /etc/containerd/config.d/*.toml, a directory the AMI creates
  empty: a slot (info); the same import of a directory that does not exist stays a warning.
- image-builder's version 2 config, with nvidia-ctk's drop-in written next to it in conf.d while the
  config has no imports: an orphan.
- containerd 2.2's own default config imports conf.d/*.toml, created empty: a slot (info).
- containerd 2.2+'s default config written as is, with no conf.d directory: its own entry is a slot (info);
  on 2.1, whose default imports nothing, the same entry written by hand is a warning.
- Canonical Kubernetes (k8s-snap): k8sd's version 2 config imports /etc/containerd/conf.d/*.toml, created
  empty: a slot (info).
- A kata ConfigPath file (TOML) and a base_runtime_spec beside the config are never orphans.

Expected severities come from the registry: each is one the check declares, on a release it fires on.
"""
import json
import os

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from tests.integration.test_audit_checks import NV, V2, V3, runtime
from tests.lib import ansible_run
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration

PLAYBOOK = os.path.join(ansible_run.REPO, "playbooks", "audit.yml")
NV_LABEL = {"gpurt.test/nvidia": "true"}
RUNTIMECLASS = ("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n"
                "scheduling:\n  nodeSelector: {gpurt.test/nvidia: \"true\"}\n")
SCRATCH = 'root = "{root}/var/lib/containerd"\nstate = "{root}/run/containerd"\n'


def k0s_user_managed(n):
    n.config_rel = "etc/k0s/containerd.toml"
    n.write(n.config_rel, "version = 3\nimports = []\n" + SCRATCH)
    n.write("etc/k0s/containerd.d/nvidia.toml", "version = 3\n" + runtime(V3, "nvidia", NV, systemd=False))
    n.runtime_binary()


def k0s_managed_empty(n):
    n.config_rel = "etc/k0s/containerd.toml"
    n.write(n.config_rel, '# k0s_managed=true\nimports = ["{root}/etc/k0s/containerd.d/*.toml"]\nversion = 3\n' + SCRATCH
            + '[plugins."io.containerd.cri.v1.images".pinned_images]\n  sandbox = "quay.io/k0sproject/pause:3.10.1"\n')
    os.makedirs(n.path("etc/k0s/containerd.d"))


def eks_al2_slot(n):
    n.write(n.config_rel, 'version = 2\nimports = ["{root}/etc/containerd/config.d/*.toml"]\n' + SCRATCH
            + '[plugins."%s".containerd]\n  default_runtime_name = "runc"\n  discard_unpacked_layers = true\n' % V2)
    os.makedirs(n.path("etc/containerd/config.d"))


def eks_al2_no_dir(n):
    n.write(n.config_rel, 'version = 2\nimports = ["{root}/etc/containerd/config.d/*.toml"]\n' + SCRATCH)


def image_builder_with_ctk_dropin(n):
    n.write(n.config_rel, 'version = 2\n' + SCRATCH + '[plugins."%s"]\n  sandbox_image = "registry.k8s.io/pause:3.10"\n'
            % V2 + runtime(V2, "runc"))
    n.write("etc/containerd/conf.d/99-nvidia.toml", "version = 2\n" + runtime(V2, "nvidia", NV))
    n.runtime_binary()


def containerd_22_default(n):
    n.write(n.config_rel, 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n' + SCRATCH)
    os.makedirs(n.path("etc/containerd/conf.d"))


def containerd_default_no_dir(n):
    """`containerd config default > /etc/containerd/config.toml` on 2.2+ (kubeadm's documented setup): the
    default's own imports entry, and no conf.d directory, which nothing created."""
    n.write(n.config_rel, 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n' + SCRATCH)


def k8s_snap_slot(n):
    """Canonical Kubernetes (k8s-snap, classic): k8sd renders /etc/containerd/config.toml at bootstrap and join,
    version 2 with the 1.x CRI plugin name, importing conf.d/*.toml, a directory it creates for extra config
    (registry auths go there only when a registry has credentials)."""
    n.write(n.config_rel, 'version = 2\noom_score = 0\n\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n\n' + SCRATCH
            + '\n[grpc]\n  uid = 0\n  gid = 0\n\n[plugins."%s"]\n  stream_server_address = "127.0.0.1"\n'
              '  sandbox_image = "ghcr.io/canonical/k8s-snap/pause:3.10"\n\n  [plugins."%s".containerd]\n'
              '    default_runtime_name = "runc"\n\n    [plugins."%s".containerd.runtimes.runc]\n'
              '      runtime_type = "io.containerd.runc.v2"\n\n  [plugins."%s".cni]\n    bin_dir = "/opt/cni/bin"\n'
              '    conf_dir = "/etc/cni/net.d"\n\n  [plugins."%s".registry]\n    config_path = "/etc/containerd/hosts.d"\n'
            % (V2, V2, V2, V2, V2))
    os.makedirs(n.path("etc/containerd/conf.d"))
    os.makedirs(n.path("etc/containerd/hosts.d"))


def runtime_named_files(n):
    kata_conf = "{root}/opt/kata/configuration.toml"
    n.write(n.config_rel, "version = 3\n" + SCRATCH + runtime(V3, "runc")
            + '  base_runtime_spec = "{root}/etc/containerd/base-spec.toml"\n'
            + '[plugins."%s".containerd.runtimes.kata]\n  runtime_type = "io.containerd.runc.v2"\n'
              '[plugins."%s".containerd.runtimes.kata.options]\n  ConfigPath = "%s"\n' % (V3, V3, kata_conf))
    # a TOML file a runtime names, with a version line: never an orphan
    n.write("etc/containerd/base-spec.toml", 'version = 9\n[plugins.x]\na = 1\n')
    n.write("opt/kata/configuration.toml", '[hypervisor.qemu]\npath = "/usr/bin/qemu"\n')


# name: (layout, releases, node labels, {(check, severity): count})
LAYOUTS = {
    "k0s-user-managed": (k0s_user_managed, ("2.1", "2.3"), NV_LABEL,
                         {("orphan_dropin", "error"): 1, ("missing_handler", "error"): 1}),
    "k0s-managed-empty": (k0s_managed_empty, ("2.1", "2.3"), {}, {("dead_imports_glob", "info"): 1}),
    "eks-al2-slot": (eks_al2_slot, ("1.7", "2.1"), {}, {("dead_imports_glob", "info"): 1}),
    "eks-al2-no-dir": (eks_al2_no_dir, ("1.7", "2.1"), {}, {("dead_imports_glob", "warning"): 1}),
    "image-builder-ctk": (image_builder_with_ctk_dropin, ("1.7", "2.1"), NV_LABEL,
                          {("orphan_dropin", "error"): 1, ("missing_handler", "error"): 1}),
    "containerd-22-default": (containerd_22_default, ("2.2",), {}, {("dead_imports_glob", "info"): 1}),
    "k8s-snap-slot": (k8s_snap_slot, ("1.7", "2.1"), {}, {("dead_imports_glob", "info"): 1}),
    "containerd-default-no-dir": (containerd_default_no_dir, ("2.2", "2.3", "2.4"), {}, {("dead_imports_glob", "info"): 1}),
    # the same entry written by hand on 2.1, whose default imports nothing, stays a warning
    "conf-d-no-dir-2.1": (containerd_default_no_dir, ("2.1",), {}, {("dead_imports_glob", "warning"): 1}),
    "runtime-named-files": (runtime_named_files, ("2.1",), {}, {}),
}
CASES = sorted((name, release) for name, (_setup, releases, _labels, _want) in LAYOUTS.items() for release in releases)


def _release_tuple(release):
    return tuple(int(p) for p in release.split("."))


def test_expectations_are_what_the_registry_declares():
    for name, release in CASES:
        for check_id, severity in LAYOUTS[name][3]:
            declared = checks.BY_ID[check_id]
            assert severity in declared.severities, (name, check_id, severity)
            assert declared.fires_on(_release_tuple(release)), (name, check_id, release)


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    base = tmp_path_factory.mktemp("orphans")
    hosts, nodes = {}, {}
    for name, release in CASES:
        setup, _releases, labels, _want = LAYOUTS[name]
        node = Node(base / "nodes", "%s--%s" % (name, release), release)
        node.config_rel = "etc/containerd/config.toml"
        setup(node)
        nodes[node.name] = node
        hosts[node.name] = node.host_vars(gpurt_containerd_config_path=node.path(node.config_rel),
                                          gpurt_cdi_spec_dirs=[node.path("etc/cdi")],
                                          gpurt_node_labels=labels)
    manifest = base / "runtimeclasses.yaml"
    manifest.write_text(RUNTIMECLASS)
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts)
    run = ansible_run.playbook(PLAYBOOK, inventory, {"gpurt_runtimeclasses_src": str(manifest),
                                                     "gpurt_report_dir": str(base / "report")},
                               check=True, extra_env={"ANSIBLE_FORKS": "4"}, timeout=900)
    with open(str(base / "report" / "audit.json")) as handle:
        return run, json.load(handle), nodes


@pytest.mark.parametrize("name, release", CASES)
def test_layout(audited, name, release):
    _run, report, nodes = audited
    node = nodes["%s--%s" % (name, release)]
    entry = report["nodes"][node.name]
    assert entry["status"] != "NOT CHECKED", entry.get("reason")
    got = {}
    for item in entry["findings"]:
        got[(item["check"], item["severity"])] = got.get((item["check"], item["severity"]), 0) + 1
    assert got == LAYOUTS[name][3], json.dumps(entry["findings"], indent=1)[:4000]
    assert entry["failing"] is any(sev == "error" for _c, sev in LAYOUTS[name][3])


def test_k0s_orphan_names_the_file_and_the_glob_that_would_load_it(audited):
    _run, report, nodes = audited
    for release in LAYOUTS["k0s-user-managed"][1]:
        node = nodes["k0s-user-managed--%s" % release]
        rc, out, _err = node_dump(node)
        assert rc == 0 and "runtimes.nvidia]" not in out.replace("'", '"')  # the real containerd never loads it
        item = [f for f in report["nodes"][node.name]["findings"] if f["check"] == "orphan_dropin"][0]
        dropin = node.path("etc/k0s/containerd.d/nvidia.toml")
        assert item["subject"] == dropin and item["evidence"]["glob"] == node.path("etc/k0s/containerd.d") + "/*.toml"
        assert "the glob '%s/*.toml' would load it" % node.path("etc/k0s/containerd.d") in item["message"]
        assert item["evidence"]["not_loaded"] == ["nvidia"]


def test_a_slot_says_it_waits_for_a_drop_in(audited):
    _run, report, nodes = audited
    item = report["nodes"]["k0s-managed-empty--2.1"]["findings"][0]
    assert "a slot waiting for a drop-in" in item["message"] and item["evidence"]["dir_exists"] is True
    missing = report["nodes"]["eks-al2-no-dir--1.7"]["findings"][0]
    assert "does not exist" in missing["message"] and missing["evidence"]["dir_exists"] is False


def node_dump(node):
    from tests.lib import containerd_bins
    return containerd_bins.dump(node.binary, node.path(node.config_rel))
