"""The audit on the shapes real tools publish (tests/fixtures/shapes: nvidia-ctk, the GPU Operator,
EKS AL2023, kubespray, k3s, RKE2, AgentBaker, kata-deploy, microk8s, Talos, Bottlerocket, Flatcar, k0s,
kubeadm's documented config, gVisor's guides), each on the containerd releases it is meant
for, through the real `ansible-playbook audit.yml --check`: healthy shapes raise no false alarm,
broken ones raise exactly the findings their breakage explains.

Each node gets the labels of the RuntimeClasses its tool means to serve (nvidia, nvidia-cdi, kata, runsc),
so a RuntimeClass lands on a node only where the shape claims its handler.
"""
import json
import os

import pytest

from tests.lib import ansible_run, known_failure
from tests.lib import shapes

pytestmark = pytest.mark.integration

SHAPES = shapes.SHAPES
PLAYBOOK = os.path.join(ansible_run.REPO, "playbooks", "audit.yml")
RUNTIMECLASSES = "\n---\n".join(
    "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: %s}\nhandler: %s\n"
    "scheduling:\n  nodeSelector: {gpurt.test/%s: \"true\"}\n" % (name, name, name)
    for name in ("nvidia", "nvidia-cdi", "kata", "runsc"))

# (shape, containerd) -> (handlers the tool means the node to serve, {(check, severity): count} expected)
# Every finding of the node must be listed here: anything else is a false alarm (or a missed one).
CASES = {
    # nvidia-ctk drop-in mode on 1.7: the whole CRI table in 99-nvidia.toml, enable_cdi set
    ("nvidia-ctk-v2-complex-1.7", "1.7"): (["nvidia", "nvidia-cdi"], {}),
    # the v2 root with the installer's v3 drop-in: loads on 2.1, but 2.1 migrates the merged files
    # and the drop-in's runtimes table replaces the root's: its runc settings are dropped; 2.3.4 refuses it
    # ... and the root's other io.containerd.grpc.v1.cri keys (cni, max_container_log_line_size, registry,
    # sandbox_image) are ignored too, each with containerd's own warning line
    ("nvidia-ctk-v2-complex-2.1", "2.1"): (["nvidia", "nvidia-cdi"], {
        ("dropin_version_above_root", "warning"): 1, ("ignored_plugin_section", "warning"): 1,
        ("config_load_warning", "warning"): 4}),
    ("nvidia-ctk-v2-complex-2.1", "2.3.4"): (["nvidia", "nvidia-cdi"], {("config_refused", "error"): 1}),
    ("gpu-operator-v4-dropin-2.3", "2.3.4"): (["nvidia", "nvidia-cdi"], {("config_refused", "error"): 1}),
    # ... which 2.3.7 and 2.4.2 load (measured)
    ("nvidia-ctk-v2-complex-2.1", "2.3"): (["nvidia", "nvidia-cdi"], {}),
    ("nvidia-ctk-v2-complex-2.1", "2.4"): (["nvidia", "nvidia-cdi"], {}),
    ("gpu-operator-v4-dropin-2.3", "2.3"): (["nvidia", "nvidia-cdi"], {}),
    # 2.4 ignores enable_experimental_restore_via_create = false, enable_cdi = true (always on) and bin_dir = "" of
    # 2.3's `config default` copied into the drop-in: each with a warning line, none loses anything (no finding)
    ("gpu-operator-v4-dropin-2.3", "2.4"): (["nvidia", "nvidia-cdi"], {}),
    ("gpu-operator", "1.7"): (["nvidia", "nvidia-cdi"], {}),
    # --set-as-default: every pod goes through nvidia
    ("nvidia-ctk-v3-default", "2.1"): (["nvidia"], {("default_runtime_blast_radius", "warning"): 1}),
    # nodeadm writes no runc: containerd's own has no SystemdCgroup, but no pod reaches it (default nvidia)
    ("eks-al2023-gpu", "2.1"): (["nvidia"], {("default_runtime_blast_radius", "warning"): 1,
                                             ("cgroup_driver", "info"): 1}),
    ("eks-al2023-gpu", "2.3"): (["nvidia"], {("default_runtime_blast_radius", "warning"): 1,
                                             ("cgroup_driver", "info"): 1}),
    ("eks-al2023-gpu-1.7", "1.7"): (["nvidia"], {("default_runtime_blast_radius", "warning"): 1}),
    ("kata-neighbour-1.7", "1.7"): (["kata"], {}),
    # nvidia-ctk's whole-CRI 99-nvidia.toml replaces 50-kata.toml on 1.7: kata is lost
    ("kata-plus-nvidia-ctk-1.7", "1.7"): (["nvidia", "kata"], {
        ("missing_handler", "error"): 1, ("file_loaded_drift", "error"): 1}),
    ("site-cri-dropin-1.7", "1.7"): (["nvidia"], {}),
    # a drop-in written the 2.x way on 1.7: config.toml's nvidia is lost
    ("site-partial-dropin-1.7", "1.7"): (["nvidia"], {
        ("missing_handler", "error"): 1, ("file_loaded_drift", "error"): 1, ("cgroup_driver", "error"): 1}),
    ("kubespray", "1.7"): (["nvidia"], {}),
    ("kubespray-v3", "2.1"): (["nvidia"], {}),
    ("kubespray-v4", "2.3"): (["nvidia"], {}),
    ("kubespray-v4", "2.4"): (["nvidia"], {}),
    ("kubespray-v3", "2.2"): (["nvidia"], {}),
    # k3s: NVIDIA's nvidia-cdi (nvidia-container-runtime.cdi) without enable_cdi is healthy; its
    # template's Windows runtime (runhcs-wcow-process) has no shim on Linux, and no pod reaches it
    ("k3s", "1.7"): (["nvidia", "nvidia-cdi"], {("runtime_binary", "info"): 1}),
    ("k3s-v3", "2.1"): (["nvidia", "nvidia-cdi"], {("runtime_binary", "info"): 1}),
    # AgentBaker's kata template on 2.x: the kata runtimes under the old name vanish
    # ... and 2.1's erofs snapshotter has no default_size (the template is for newer releases; its ignored
    # enable_tar_index = false loses nothing)
    ("agentbaker-kata", "2.1"): (["kata"], {("missing_handler", "error"): 1, ("ignored_plugin_section", "error"): 1,
                                            ("config_load_warning", "warning"): 1}),
    ("already-correct-2.1", "2.1"): (["nvidia"], {}),
    # 0xE9 in a comment: 1.7 loads it; the audit cannot read the file as UTF-8
    ("latin1-comment-1.7", "1.7"): (["nvidia"], {("config_unreadable", "error"): 1}),
    # ... and 2.x refuses it: a parse error is config_refused, with containerd's cause line
    ("latin1-comment-1.7", "2.1"): (["nvidia"], {("config_refused", "error"): 1}),
    ("latin1-comment-1.7", "2.3"): (["nvidia"], {("config_refused", "error"): 1}),
    # the shape installs no kata shim; no RuntimeClass asks for kata here
    # 1.x warns that config version 1 is deprecated
    ("version1-file", "1.6"): ([], {("runtime_binary", "info"): 1, ("config_load_warning", "warning"): 1}),
    ("version1-file", "1.7"): ([], {("runtime_binary", "info"): 1, ("config_load_warning", "warning"): 1}),
    # microk8s without a GPU or kata: its template's nvidia-container-runtime and kata-runtime are bare
    # names no PATH entry has, and no pod reaches them
    ("microk8s", "2.1"): ([], {("runtime_binary", "info"): 3}),
    ("talos", "2.1"): (["nvidia"], {}),
    # the nvidia variant runs every pod through nvidia-oci
    ("bottlerocket-nvidia", "1.7"): (["nvidia"], {("default_runtime_blast_radius", "warning"): 1}),
    ("nvidia-ctk-registered-1.7", "1.7"): (["nvidia", "nvidia-cdi"], {}),
    ("nvidia-ctk-registered-2.1", "2.1"): (["nvidia", "nvidia-cdi"], {}),
    ("kubeadm-documented-1.7", "1.7"): ([], {}),
    ("kubeadm-documented-2.1", "2.1"): ([], {}),
    # containerd 2.3's default config as is: its own conf.d/*.toml entry, no conf.d yet (a slot)
    ("kubeadm-documented-2.3", "2.3"): ([], {("dead_imports_glob", "info"): 1}),
    # kind's node image: nothing GPU on it; the RuntimeClass nvidia finds no handler. On 2.x its version 2
    # key tolerate_missing_hugepages_controller is dropped with containerd's warning: config_load_warning.
    ("kind", "1.7"): (["nvidia"], {("missing_handler", "error"): 1}),
    ("kind", "2.1"): (["nvidia"], {("missing_handler", "error"): 1, ("config_load_warning", "warning"): 1}),
    # k3s with the GPU Operator's template: nvidia loaded from it, nvidia-cdi not registered yet.
    ("k3s-operator-template-1.7", "1.7"): (["nvidia", "nvidia-cdi"], {("missing_handler", "error"): 1}),
    # runc (the default: every pod) keeps SystemdCgroup = false under a systemd kubelet
    ("kubeadm-cgroup-mismatch-1.7", "1.7"): ([], {("cgroup_driver", "error"): 1}),
    # every pod through nvidia-container-runtime; 'untrusted' and containerd's own runc lack SystemdCgroup, but no pod
    # reaches them
    ("azure-linux-3-gpu", "2.1"): ([], {("default_runtime_blast_radius", "warning"): 1, ("cgroup_driver", "info"): 2}),
    # the quick start's file declares runsc without runc: 1.x keeps no runc of its own and the CRI plugin cannot
    # load (the shim itself is found in gpurt_shim_dirs, /usr/local/bin of the node)
    # (and 1.x warns that config version 1 is deprecated)
    ("gvisor-quickstart-1.7", "1.6"): (["runsc"], {("config_refused", "error"): 1,
                                                   ("config_load_warning", "warning"): 1}),
    ("gvisor-quickstart-1.7", "1.7"): (["runsc"], {("config_refused", "error"): 1,
                                                   ("config_load_warning", "warning"): 1}),
    # the runsc drop-in replaces config.toml's CRI section on 1.7: runc is gone and the CRI plugin cannot load
    ("gvisor-dropin-1.7", "1.7"): (["runsc"], {("config_refused", "error"): 1, ("file_loaded_drift", "error"): 1}),
    # 1.6 ignores the version 3 CRI section: nvidia is not loaded; two ignored_plugin_section findings
    # (the file's version, and its runtimes), and runc's SystemdCgroup = true with it
    ("v3-file-1.6", "1.6"): (["nvidia"], {("missing_handler", "error"): 1, ("ignored_plugin_section", "error"): 2,
                                          ("cgroup_driver", "error"): 1}),
    # Flatcar's /usr/share/containerd/config.toml sets subreaper = true, a top-level key 2.x no longer has
    ("flatcar", "2.3"): ([], {("config_load_warning", "warning"): 1}),
    ("k0s", "2.1"): (["runsc"], {}),
    ("k0s", "2.3"): (["runsc"], {}),
    ("rke2-v3", "2.1"): (["nvidia", "runsc"], {}),
    # the GPU Operator's toolkit on 2.4: a version 4 drop-in, runc's SystemdCgroup copied (no enable_cdi: 2.4 has none)
    ("gpu-operator-toolkit-systemd-2.4", "2.4"): (["nvidia", "nvidia-cdi"], {}),
    # kata-deploy's versionless drop-in outside conf.d (its handlers are kata-qemu, kata-clh: no class here names
    # them); conf.d/*.toml, containerd 2.2's own default entry, matches no file yet: a slot (info)
    ("kata-deploy-dropin-2.2", "2.2"): ([], {("dead_imports_glob", "info"): 1}),
    ("nixos", "2.1"): ([], {}),
}


# The audit's false alarms on these shapes, to be fixed by issue 27's second phase: (why, the findings it gives
# now). Each case expects the right findings and fails now only with exactly these (strict: it must be removed
# here the moment the audit gets it right; another wrong outcome fails the test).
FALSE_ALARMS = {}


def cases():
    return [pytest.param(name, version, marks=known_failure.xfail(FALSE_ALARMS[(name, version)][0]))
            if (name, version) in FALSE_ALARMS else (name, version) for name, version in sorted(CASES)]


def build(base, name, version):
    """A fake node from a shape (tests/lib/shapes.install) and its host variables."""
    node = shapes.install(base, "%s--%s" % (name, version), name, version)
    # the fake node's PATH: the directories its binaries were installed in
    path_dirs = sorted(set(os.path.dirname(node.path(rel)) for rel in shapes.meta(name).get("runtime_binaries") or []))
    host = node.host_vars(gpurt_containerd_config_path=node.path(node.config_rel),
                          gpurt_cdi_spec_dirs=[node.path("etc/cdi"), node.path("var/run/cdi")],
                          gpurt_kubelet_config_path=node.path(node.kubelet_rel), gpurt_shim_dirs=path_dirs)
    return node, host


def every_case():
    """The (shape, version) pairs of the catalogue, each on a release it is meant for (and the
    2.3 refusals of nvidia-ctk-v2-complex-2.1 listed in CASES)."""
    pairs = set(CASES)
    for name in sorted(os.listdir(SHAPES)):
        if os.path.isfile(os.path.join(SHAPES, name, "shape.json")):
            for version in shapes.meta(name)["containerd"]:
                pairs.add((name, version))
    return sorted(pairs)


def test_every_shape_of_the_catalogue_has_an_expectation():
    assert sorted(set(every_case()) - set(CASES)) == []


@pytest.fixture(scope="module")
def audited(tmp_path_factory, containerd):
    base = tmp_path_factory.mktemp("shapes")
    hosts = {}
    for name, version in every_case():
        node, host = build(base / "nodes", name, version)
        handlers, _expected = CASES[(name, version)]
        host["gpurt_node_labels"] = dict(("gpurt.test/%s" % h, "true") for h in handlers)
        hosts[node.name] = host
    manifest = base / "runtimeclasses.yaml"
    manifest.write_text(RUNTIMECLASSES)
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts)
    # The shapes' CDI specs name the real device nodes of a GPU host (/dev/nvidia0), absent here.
    run = ansible_run.playbook(PLAYBOOK, inventory, {"gpurt_runtimeclasses_src": str(manifest),
                                                     "gpurt_report_dir": str(base / "report"),
                                                     "gpurt_skip_checks": ["cdi_stale_spec"]},
                               check=True, extra_env={"ANSIBLE_FORKS": "8"}, timeout=900)
    with open(str(base / "report" / "audit.json")) as handle:
        return run, json.load(handle)


@pytest.mark.parametrize("name, version", cases())
def test_shape(audited, name, version):
    _run, report = audited
    entry = report["nodes"]["%s--%s" % (name, version)]
    assert entry["status"] != "NOT CHECKED", entry["reason"]
    _handlers, expected = CASES[(name, version)]
    got = {}
    for item in entry["findings"]:
        key = (item["check"], item["severity"])
        got[key] = got.get(key, 0) + 1
    if (name, version) in FALSE_ALARMS:
        known_failure.unless_known(got, FALSE_ALARMS[(name, version)][1], FALSE_ALARMS[(name, version)][0])
    assert got == expected, json.dumps(entry["findings"], indent=1)[:6000]
    for item in entry["findings"]:
        if item["check"] == "config_refused" and item["subject"] != "runc":
            assert item["evidence"]["cause"] and "goroutine" not in item["evidence"]["cause"]
    failing = any(severity == "error" for _check, severity in expected)
    assert entry["failing"] is failing
