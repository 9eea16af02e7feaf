"""One faulty node per audit check, loaded by the real containerd binaries and judged by the
real `ansible-playbook playbooks/audit.yml --check`.

A module-scoped fixture builds every node (real files under a node root), writes RuntimeClass
manifests and runs the playbook once; each test then asserts that its node's real dump shows
the fault (so the premise is real) and that the report has exactly the expected finding.
"""
import hashlib
import json
import os
import re
import stat
import tomllib
import xml.etree.ElementTree as ET

import pytest

from tests.lib import ansible_run
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(REPO, "playbooks", "audit.yml")

V1, V2, V3 = "cri", "io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime"
NV = "{root}/usr/bin/nvidia-container-runtime"
NV_CDI = "{root}/usr/bin/nvidia-container-runtime.cdi"
DROPINS = '"{root}/etc/containerd/conf.d/*.toml"'
CDI_LABEL = {"gpurt.test/cdi": "true"}
KUBELET_SYSTEMD = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n"

RUNTIMECLASSES = """\
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia}
handler: nvidia
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia-cdi}
handler: nvidia-cdi
scheduling:
  nodeSelector: {gpurt.test/cdi: "true"}
"""
RC_OVERHEAD = """\
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia-overhead}
handler: nvidia
overhead:
  podFixed: {cpu: 250m}
scheduling:
  nodeSelector: {gpurt.test/overhead: "true"}
"""


def rc_yaml(name, handler, label):
    """A RuntimeClass manifest that lands only on nodes labelled gpurt.test/<label>=true."""
    return ("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: %s}\nhandler: %s\n"
            "scheduling:\n  nodeSelector: {gpurt.test/%s: \"true\"}\n" % (name, handler, label))


RC_CRUN = rc_yaml("crun", "crun", "crun")
RC_KATA = rc_yaml("kata", "kata", "kata")
KATA_LABEL = {"gpurt.test/kata": "true"}
RC_TYPO = rc_yaml("nvidia-legacy", "nvidia-legcy", "typo")


# --- config builders ------------------------------------------------------------------------

def runtime(plugin, name, binary=None, systemd=True):
    head = '[plugins."%s".containerd.runtimes.%s]' % (plugin, name)
    lines = [head, '  runtime_type = "io.containerd.runc.v2"']
    options = []
    if binary:
        options.append('BinaryName = "%s"' % binary)
    if systemd is not None:
        options.append("SystemdCgroup = %s" % str(systemd).lower())
    if options:
        lines.append('[plugins."%s".containerd.runtimes.%s.options]' % (plugin, name))
        lines += ["  " + o for o in options]
    return "\n".join(lines) + "\n"


def config(version, plugin, runtimes, imports=None, cdi=True, default="runc"):
    """A main config: version line, imports, the CRI section and its runtimes."""
    lines = ["version = %d" % version] if version else []
    if imports:
        lines.append("imports = [%s]" % ", ".join(imports))
    lines.append('[plugins."%s"]' % plugin)
    if cdi is not None:
        lines.append("  enable_cdi = %s" % str(cdi).lower())
        lines.append('  cdi_spec_dirs = ["{root}/etc/cdi"]')
    if default is not None:
        lines.append('[plugins."%s".containerd]' % plugin)
        lines.append('  default_runtime_name = "%s"' % default)
    return "\n".join(lines) + "\n" + "".join(runtimes)


def good_v3(version=3, **kw):
    """A 2.x main config (version 3, or 4 for 2.3+) with runc and nvidia."""
    runtimes = kw.pop("runtimes", None)
    if runtimes is None:
        runtimes = [runtime(V3, "runc"), runtime(V3, "nvidia", NV)]
    return config(version, V3, runtimes, **kw)


def good_v2(cdi=True, **kw):
    runtimes = kw.pop("runtimes", None)
    if runtimes is None:
        runtimes = [runtime(V2, "runc"), runtime(V2, "nvidia", NV)]
    return config(2, V2, runtimes, cdi=cdi, **kw)


def cdi_spec(*host_paths):
    return ("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n  - name: \"0\"\n    containerEdits:\n"
            "      deviceNodes:\n        - path: %s\ncontainerEdits:\n  hooks:\n    - hookName: createContainer\n"
            "      path: %s\n  mounts:\n" % host_paths[:2]
            + "".join("    - hostPath: %s\n      containerPath: /usr/lib/x86_64-linux-gnu/%s\n      options: [ro, bind]\n"
                      % (p, os.path.basename(p)) for p in host_paths[2:]))


# --- the nodes: (containerd version, setup, extra host vars) --------------------------------

def setup_healthy(n, version=3):
    # explicit imports (2.3 loads conf.d only when the file itself says so)
    n.write("etc/containerd/config.toml", good_v3(version=version, imports=[DROPINS]))
    n.write("etc/containerd/conf.d/50-nvidia-cdi.toml", "version = %d\n" % version + runtime(V3, "nvidia-cdi", NV_CDI))
    n.runtime_binary()
    n.runtime_binary("usr/bin/nvidia-container-runtime.cdi")
    n.runtime_binary("usr/bin/nvidia-cdi-hook")
    n.write("dev/nvidia0", "")
    n.write("usr/lib/libcuda.so.550.54", "")
    n.write("etc/cdi/nvidia.yaml", cdi_spec(n.path("dev/nvidia0"), n.path("usr/bin/nvidia-cdi-hook"),
                                            n.path("usr/lib/libcuda.so.550.54")))
    n.write("var/lib/kubelet/config.yaml", KUBELET_SYSTEMD)


def setup_plain_v3(n, **kw):
    n.write("etc/containerd/config.toml", good_v3(**kw))
    n.runtime_binary()
    n.write("var/lib/kubelet/config.yaml", KUBELET_SYSTEMD)


def setup_missing_handler(n, version=3):
    setup_plain_v3(n, version=version, runtimes=[runtime(V3, "runc"), runtime(V3, "nvidia", NV),
                                                 runtime(V3, "nvidia-legacy", NV)])


def setup_default_not_loaded(n):
    setup_plain_v3(n, default="crun")


def setup_blast_radius(n):
    setup_plain_v3(n, default="nvidia")


def setup_dead_glob(n):
    setup_plain_v3(n, imports=[DROPINS])
    os.makedirs(n.path("etc/containerd/conf.d"))


def setup_orphan(n, version=3):
    setup_plain_v3(n, version=version, imports=[DROPINS])
    n.write("etc/containerd/conf.d/10-runc.toml", "version = %d\n" % version + runtime(V3, "runc"))
    # the .conf vs .toml incident: a duplicate of nvidia that imports never read (the loaded config carries
    # it: no orphan), and a runtime that only a .conf file declares (an orphan)
    n.write("etc/containerd/conf.d/20-nvidia.conf", "version = %d\n" % version + runtime(V3, "nvidia", NV))
    n.write("etc/containerd/conf.d/30-nvidia-cdi.conf", "version = %d\n" % version + runtime(V3, "nvidia-cdi-conf", NV))
    # nvidia-ctk wrote into config.d while imports read conf.d (NVIDIA/nvidia-container-toolkit#1404)
    n.write("etc/containerd/config.d/99-nvidia.toml", "version = %d\n" % version + runtime(V3, "nvidia-experimental", NV))


def setup_ignored_v3_oldname(n):
    setup_plain_v3(n, runtimes=[runtime(V3, "runc"), runtime(V2, "nvidia", NV)])


def setup_ignored_v3_on_16(n):
    # no kubelet config: the default runc that 1.6 falls back to has SystemdCgroup = false
    n.write("etc/containerd/config.toml", config(3, V3, [runtime(V3, "runc"), runtime(V3, "nvidia", NV)], cdi=None))
    n.runtime_binary()


def setup_ignored_v1_on_21(n):
    n.write("etc/containerd/config.toml", config(1, V1, [runtime(V1, "nvidia", NV)], cdi=None, default=None))
    n.runtime_binary()


def setup_drift_17(n):
    n.write("etc/containerd/config.toml", good_v2(cdi=False, runtimes=[runtime(V2, "runc")], imports=[DROPINS]))
    n.write("etc/containerd/conf.d/10-extra.toml", "version = 2\n" + runtime(V2, "nvidia-extra", NV))
    n.write("etc/containerd/conf.d/20-nvidia.toml", "version = 2\n" + runtime(V2, "nvidia", NV))
    n.runtime_binary()
    n.write("var/lib/kubelet/config.yaml", KUBELET_SYSTEMD)


def setup_runtime_binary(n):
    n.write("etc/containerd/config.toml", good_v3())  # BinaryName points at a file never written
    n.write("var/lib/kubelet/config.yaml", KUBELET_SYSTEMD)


def setup_cgroup(n):
    setup_plain_v3(n, runtimes=[runtime(V3, "runc"), runtime(V3, "nvidia", NV, systemd=False)])


def setup_cdi_disabled(n, version=2):
    # nvidia-cdi through the plain nvidia-container-runtime: only containerd's enable_cdi would inject
    plugin = V2 if version == 2 else V3
    n.write("etc/containerd/config.toml", config(version, plugin, [
        runtime(plugin, "runc"), runtime(plugin, "nvidia", NV), runtime(plugin, "nvidia-cdi", NV)], cdi=False))
    n.runtime_binary()
    n.write("var/lib/kubelet/config.yaml", KUBELET_SYSTEMD)


def setup_cdi_stale(n, version=3):
    setup_plain_v3(n, version=version)
    n.runtime_binary("usr/bin/nvidia-cdi-hook")
    n.write("dev/nvidia0", "")
    # the driver was updated to 550; the spec still names the 535 libraries
    n.write("etc/cdi/nvidia.yaml", cdi_spec(n.path("dev/nvidia0"), n.path("usr/bin/nvidia-cdi-hook"),
                                            n.path("usr/lib/libcuda.so.535.104.05")))


def setup_overhead(n):
    setup_plain_v3(n)


def setup_pool_a(n):
    setup_plain_v3(n)


def setup_pool_b(n):
    setup_plain_v3(n, runtimes=[runtime(V3, "runc")])


def setup_unreadable(n, version=3):
    setup_plain_v3(n, version=version, imports=[DROPINS])
    # valid TOML that containerd loads, but larger than the module's max_file_bytes (1 MiB)
    padding = ("# padding\n" * 110000)
    n.write("etc/containerd/conf.d/50-big.toml", "version = %d\n" % version + padding + runtime(V3, "runc"))


def setup_commented_import(n):
    # an imports entry commented out inside a multi-line array: containerd never reads config.d
    n.write("etc/containerd/config.toml", good_v3(imports=[
        DROPINS + ',\n  # "{root}/etc/containerd/config.d/*.toml",  disabled: nvidia-ctk wrote there\n']))
    n.write("etc/containerd/conf.d/10-runc.toml", "version = 3\n" + runtime(V3, "runc"))
    n.write("etc/containerd/config.d/99-nvidia.toml", "version = 3\n" + runtime(V3, "nvidia-experimental", NV))
    n.runtime_binary()


def setup_no_binary(n):
    setup_plain_v3(n)


def setup_refused_v3_17(n):
    n.write("etc/containerd/config.toml", config(3, V3, [runtime(V3, "runc"), runtime(V3, "nvidia", NV)]))
    n.runtime_binary()


def setup_kata_shim(n, version=3):
    # a non-runc runtime: its shim (containerd-shim-kata-v2) and its ConfigPath are on no path of the node
    kata = ('[plugins."%s".containerd.runtimes.kata]\n  runtime_type = "io.containerd.kata.v2"\n'
            '[plugins."%s".containerd.runtimes.kata.options]\n'
            '  ConfigPath = "{root}/opt/kata/share/defaults/kata-containers/configuration.toml"\n' % (V3, V3))
    setup_plain_v3(n, version=version, runtimes=[runtime(V3, "runc"), runtime(V3, "nvidia", NV), kata])


def setup_kata_ok(n):
    setup_plain_v3(n, runtimes=[runtime(V3, "runc"), runtime(V3, "nvidia", NV),
                                '[plugins."%s".containerd.runtimes.kata]\n  runtime_type = "io.containerd.kata.v2"\n'
                                '  runtime_path = "{root}/opt/kata/bin/containerd-shim-kata-v2"\n'
                                '  base_runtime_spec = "{root}/etc/containerd/base-runtime-spec.json"\n'
                                '[plugins."%s".containerd.runtimes.kata.options]\n'
                                '  ConfigPath = "{root}/opt/kata/share/defaults/kata-containers/configuration.toml"\n'
                                % (V3, V3)])
    n.runtime_binary("opt/kata/bin/containerd-shim-kata-v2")
    n.write("opt/kata/share/defaults/kata-containers/configuration.toml", "[hypervisor.qemu]\n")
    n.write("etc/containerd/base-runtime-spec.json", "{}\n")


def setup_dropin_above_root(n, dropin_version=3):
    # a version 3 (4) drop-in under a version 2 root that declares no runtime of its own (with runtimes
    # in the root, 2.1 drops them: the nvidia-ctk-v2-complex-2.1 shape of tests/integration/test_shapes.py)
    n.write("etc/containerd/config.toml", "version = 2\nimports = [%s]\n" % DROPINS)
    n.write("etc/containerd/conf.d/99-nvidia.toml", "version = %d\n" % dropin_version + runtime(V3, "nvidia", NV))
    n.runtime_binary()


def setup_no_config(n):
    os.rmdir(n.path("etc/containerd"))


def setup_backups(n):
    setup_plain_v3(n, runtimes=[runtime(V3, "runc")], imports=[DROPINS])
    dropin = "version = 3\n" + runtime(V3, "nvidia", NV)
    n.write("etc/containerd/conf.d/99-nvidia.toml", dropin)
    # what nvidia-ctk, editors and dpkg leave next to the drop-in: never loaded, never meant to be
    n.write("etc/containerd/conf.d/99-nvidia.toml.1234.2025-06-01@10:00:00~", dropin.replace("nvidia]", "nvidia-old]"))
    n.write("etc/containerd/conf.d/99-nvidia.toml.bak", dropin.replace("nvidia]", "nvidia-bak]"))
    n.write("etc/containerd/conf.d/99-nvidia.toml.dpkg-old", dropin.replace("nvidia]", "nvidia-dpkg]"))


def setup_cgroup_unreachable(n):
    # nvidia-experimental is loaded with the wrong SystemdCgroup, but no pod can reach it here
    setup_plain_v3(n, runtimes=[runtime(V3, "runc"), runtime(V3, "nvidia", NV),
                                runtime(V3, "nvidia-experimental", NV, systemd=False)])


def setup_garbage_kubelet(n):
    setup_plain_v3(n)
    n.write("var/lib/kubelet/config.yaml", "\x1b[31mcgroupDriver: [systemd\n\x1b[0m")


def setup_fifo_kubelet(n):
    setup_plain_v3(n)
    os.unlink(n.kubelet_config_path)
    os.mkfifo(n.kubelet_config_path)


def setup_dev_zero_import(n, version=3):
    n.write("etc/containerd/config.toml", good_v3(version=version, imports=['"/dev/zero"']))
    n.runtime_binary()


def setup_mixed_v2(n):
    # AgentBaker's kata template shape: a version 2 file with runtimes under both plugin names
    n.write("etc/containerd/config.toml", config(2, V3, [runtime(V3, "runc"), runtime(V3, "nvidia", NV),
                                                         runtime(V2, "kata-old")], cdi=None))
    n.runtime_binary()
    n.write("var/lib/kubelet/config.yaml", KUBELET_SYSTEMD)


def setup_nvidia_cdi_self(n):
    # NVIDIA's own shape (nvidia-ctk / k3s): nvidia-cdi through nvidia-container-runtime.cdi, no enable_cdi
    n.write("etc/containerd/config.toml", good_v2(cdi=None, runtimes=[
        runtime(V2, "runc"), runtime(V2, "nvidia", NV), runtime(V2, "nvidia-cdi", NV_CDI)]))
    n.runtime_binary()
    n.runtime_binary("usr/bin/nvidia-container-runtime.cdi")
    n.write("var/lib/kubelet/config.yaml", KUBELET_SYSTEMD)


NODES = {
    "healthy": ("2.1", setup_healthy, {"gpurt_node_labels": CDI_LABEL}),
    "missing-handler": ("2.1", setup_missing_handler, {"gpurt_node_labels": {"gpurt.test/typo": "true"}}),
    "default-not-loaded": ("2.1", setup_default_not_loaded, {}),
    "blast-radius": ("2.1", setup_blast_radius, {}),
    "dead-glob": ("2.1", setup_dead_glob, {}),
    "orphan": ("2.1", setup_orphan, {}),
    "ignored-v3-oldname": ("2.1", setup_ignored_v3_oldname, {}),
    "ignored-v3-on-16": ("1.6", setup_ignored_v3_on_16, {}),
    "ignored-v1-on-21": ("2.1", setup_ignored_v1_on_21, {}),
    "drift-17": ("1.7", setup_drift_17, {}),
    "runtime-binary": ("2.1", setup_runtime_binary, {}),
    "cgroup": ("2.1", setup_cgroup, {}),
    "cdi-disabled": ("1.7", setup_cdi_disabled, {"gpurt_node_labels": CDI_LABEL}),
    "cdi-stale": ("2.1", setup_cdi_stale, {}),
    "overhead": ("2.1", setup_overhead, {"gpurt_node_labels": {"gpurt.test/overhead": "true"},
                                         "gpurt_node_allocatable": {"cpu": "1"}}),
    "pool-a": ("2.1", setup_pool_a, {}),
    "pool-b": ("2.1", setup_pool_b, {}),
    "unreadable": ("2.1", setup_unreadable, {}),
    "commented-import": ("2.1", setup_commented_import, {}),
    "no-binary": ("2.1", setup_no_binary, {}),
    "refused-v3-17": ("1.7", setup_refused_v3_17, {}),
    "kata-shim": ("2.1", setup_kata_shim, {"gpurt_node_labels": KATA_LABEL}),
    "kata-ok": ("2.1", setup_kata_ok, {"gpurt_node_labels": KATA_LABEL}),
    "dropin-above-root": ("2.1", setup_dropin_above_root, {}),
    "no-config": ("2.1", setup_no_config, {}),
    "backups": ("2.1", setup_backups, {}),
    "cgroup-unreachable": ("2.1", setup_cgroup_unreachable, {}),
    "garbage-kubelet": ("2.1", setup_garbage_kubelet, {}),
    "fifo-kubelet": ("2.1", setup_fifo_kubelet, {}),
    "dev-zero-import": ("2.1", setup_dev_zero_import, {}),
    "mixed-v2": ("2.1", setup_mixed_v2, {}),
    "crun-missing": ("2.1", setup_plain_v3, {"gpurt_node_labels": {"gpurt.test/crun": "true"}}),
    "nvidia-cdi-self": ("1.7", setup_nvidia_cdi_self, {"gpurt_node_labels": CDI_LABEL}),
}
GROUPS = {"gpu_pool": ["pool-a", "pool-b"]}
# The releases whose `config default` writes version 3: the "2.1" nodes run on each.
V3_RELEASES = ("2.1", "2.2")
# Measured: 2.2 dumps its default import ahead of a file's own imports (whether it loads it:
# test_audit_checks_23.test_23_dump_imports_are_no_evidence_of_what_was_imported); 2.1 has no default.
DEFAULT_IMPORTS = {"2.1": [], "2.2": ["/etc/containerd/conf.d/*.toml"]}
# healthy real shapes that used to raise false alarms: OK now
OK_NODES = ["kata-ok", "backups", "garbage-kubelet", "fifo-kubelet", "nvidia-cdi-self"]
NOT_CHECKED_NODES = ("no-binary",)
SKIP = ["cdi_stale_spec", "runtime_binary", "default_runtime_blast_radius"]


def snapshot(root):
    """{path: (mtime_ns, sha256)} of every file under root."""
    out = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if not stat.S_ISREG(os.lstat(path).st_mode):
                out[path] = (os.lstat(path).st_mtime_ns, "not a regular file")  # the FIFO: never opened
                continue
            with open(path, "rb") as handle:
                out[path] = (os.stat(path).st_mtime_ns, hashlib.sha256(handle.read()).hexdigest())
    return out


class Lab(object):
    def __init__(self, base, nodes, inventory, manifests, release):
        self.release = release
        self.base = base
        self.nodes = nodes
        self.inventory = inventory
        self.manifests = manifests

    def run(self, report_dir, **extra):
        extra_vars = {"gpurt_runtimeclasses_src": self.manifests, "gpurt_report_dir": report_dir,
                      "gpurt_pod_requests": {"cpu": "900m"}}
        extra_vars.update(extra)
        limit = extra_vars.pop("limit", None)
        run = ansible_run.playbook(PLAYBOOK, self.inventory, extra_vars, check=True,
                                   args=("--limit", limit) if limit else (),
                                   extra_env={"ANSIBLE_FORKS": str(len(self.nodes))}, timeout=300)
        with open(os.path.join(report_dir, "audit.json")) as handle:
            report = json.load(handle)
        return run, report


@pytest.fixture(scope="module", params=V3_RELEASES)
def lab(request, tmp_path_factory, containerd):
    """The lab, its 2.1 nodes on each release that writes config version 3 (2.1, 2.2)."""
    release = request.param
    base = tmp_path_factory.mktemp("audit-checks-%s" % release)
    nodes = {}
    hosts = {}
    for name, (version, setup, extra) in sorted(NODES.items()):
        node = Node(base / "nodes", name, release if version == "2.1" else version)
        setup(node)
        nodes[name] = node
        host = node.host_vars(gpurt_cdi_spec_dirs=[node.path("etc/cdi")])
        host.update(extra)
        hosts[name] = host
    hosts["no-binary"]["gpurt_containerd_bin"] = nodes["no-binary"].path("usr/bin/containerd")
    manifests = base / "runtimeclasses"
    manifests.mkdir()
    (manifests / "10-nvidia.yaml").write_text(RUNTIMECLASSES)
    (manifests / "20-overhead.yaml").write_text(RC_OVERHEAD)
    (manifests / "30-typo.yaml").write_text(RC_TYPO)
    # a kustomize-style base/: manifests are read recursively
    (manifests / "base").mkdir()
    (manifests / "base" / "crun.yaml").write_text(RC_CRUN)
    (manifests / "base" / "kata.yaml").write_text(RC_KATA)
    (manifests / "kustomization.yaml").write_text("resources: [base]\n")
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts=hosts,
                                            group_vars={"gpurt_node_labels": {}}, groups=GROUPS)
    return Lab(base, nodes, inventory, str(manifests), release)


@pytest.fixture(scope="module")
def audit(lab):
    """The first --check run: (Run, report, snapshot before, snapshot after)."""
    before = snapshot(str(lab.base / "nodes"))
    run, report = lab.run(str(lab.base / "report"))
    after = snapshot(str(lab.base / "nodes"))
    return run, report, before, after


@pytest.fixture
def report(audit):
    return audit[1]


def findings(report, node):
    return report["nodes"][node]["findings"]


def checks_of(report, node):
    return sorted(set(f["check"] for f in findings(report, node)))


def only(report, node, check):
    items = [f for f in findings(report, node) if f["check"] == check]
    assert len(items) == 1, items
    return items[0]


def dumped(node):
    """(rc, {runtime: table}, doc, stderr) of the node's real `containerd config dump`."""
    rc, out, err = node.dump()
    if rc != 0:
        return rc, None, None, err
    doc = tomllib.loads(out)
    runtimes = {}
    for plugin in (V2, V3):
        section = doc.get("plugins", {}).get(plugin, {}).get("containerd", {})
        runtimes.update(section.get("runtimes", {}))
    return rc, runtimes, doc, err


def cri_value(doc, key):
    for plugin in (V3, V2):
        section = doc.get("plugins", {}).get(plugin, {})
        if key in section:
            return section[key]
        if key in section.get("containerd", {}):
            return section["containerd"][key]
    return None


# --- the whole run --------------------------------------------------------------------------

def test_play_fails_with_rc_2_and_changes_nothing(lab, audit):
    run, report, before, after = audit
    assert run.rc == 2, run
    assert sorted(run.recap) == sorted(NODES), run
    assert all(h["changed"] == 0 for h in run.recap.values()), run.recap
    assert before == after  # no node file was written, touched or removed
    assert report["fail_on"] == "error"
    assert report["runtimeclasses"] == [["crun", "crun"], ["kata", "kata"], ["nvidia", "nvidia"], ["nvidia-cdi", "nvidia-cdi"],
                                        ["nvidia-legacy", "nvidia-legcy"], ["nvidia-overhead", "nvidia"]]
    failing = sorted(n for n, e in report["nodes"].items() if e["failing"])
    # the nodes with only warnings pass at fail_on=error; the others fail the play
    passing = ["blast-radius", "dead-glob", "healthy", "pool-a"] + OK_NODES + [
        "dropin-above-root", "cgroup-unreachable"]
    assert failing == sorted(set(NODES) - set(passing))
    for name in NODES:
        assert run.recap[name]["failed"] == (1 if name in failing else 0), (name, run.recap[name])


def test_healthy_node_is_ok_with_zero_findings(lab, report):
    rc, runtimes, doc, _err = dumped(lab.nodes["healthy"])
    assert rc == 0 and sorted(runtimes) == ["nvidia", "nvidia-cdi", "runc"]
    assert cri_value(doc, "enable_cdi") is True
    entry = report["nodes"]["healthy"]
    assert entry["status"] == "OK"
    assert entry["findings"] == []
    assert entry["failing"] is False
    assert entry["runtimes"] == ["nvidia", "nvidia-cdi", "runc"]
    # every host check ran on it (overhead needs allocatable, drift a group)
    assert set(entry["checks_run"]) >= {"missing_handler", "dead_imports_glob", "orphan_dropin", "ignored_plugin_section",
                                        "file_loaded_drift", "runtime_binary", "cgroup_driver", "cdi_disabled",
                                        "cdi_stale_spec"}


def test_missing_handler_typo_only_where_the_selector_matches(lab, audit, report):
    run = audit[0]
    _rc, runtimes, _doc, _err = dumped(lab.nodes["missing-handler"])
    assert "nvidia-legcy" not in runtimes and "nvidia-legacy" in runtimes
    assert checks_of(report, "missing-handler") == ["missing_handler"]
    item = only(report, "missing-handler", "missing_handler")
    assert item["severity"] == "error"
    assert item["subject"] == "nvidia-legcy"
    assert item["evidence"]["runtimeclass"] == "nvidia-legacy"
    # nvidia is also loaded, but a RuntimeClass asks for it itself: only nvidia-legacy is suggested
    assert item["evidence"]["suggestion"] == "nvidia-legacy"
    assert item["evidence"]["loaded_runtimes"] == ["nvidia", "nvidia-legacy", "runc"]
    assert "did you mean 'nvidia-legacy'?" in item["message"]
    assert report["nodes"]["missing-handler"]["missing"] == ["MISSING=nvidia-legcy"]
    assert "MISSING=nvidia-legcy" in run.out
    # the selector matches this node only
    for name, entry in report["nodes"].items():
        if name != "missing-handler":
            assert "MISSING=nvidia-legcy" not in entry["missing"], name


def test_default_runtime_not_loaded_is_config_refused(lab, report):
    # measured with real daemons: the CRI plugin does not load ("no corresponding runtime configured")
    _rc, runtimes, doc, _err = dumped(lab.nodes["default-not-loaded"])
    assert cri_value(doc, "default_runtime_name") == "crun" and "crun" not in runtimes
    assert checks_of(report, "default-not-loaded") == ["config_refused", "default_runtime_blast_radius"]
    item = only(report, "default-not-loaded", "config_refused")
    assert (item["severity"], item["subject"]) == ("error", "crun")
    assert item["evidence"]["loaded_runtimes"] == ["nvidia", "runc"]
    assert "no corresponding runtime configured" in item["evidence"]["cause"]


def test_default_runtime_blast_radius(lab, report):
    _rc, runtimes, doc, _err = dumped(lab.nodes["blast-radius"])
    assert cri_value(doc, "default_runtime_name") == "nvidia" and "nvidia" in runtimes
    assert checks_of(report, "blast-radius") == ["default_runtime_blast_radius"]
    item = only(report, "blast-radius", "default_runtime_blast_radius")
    assert (item["severity"], item["subject"]) == ("warning", "nvidia")
    assert item["evidence"] == {"default_runtime_name": "nvidia"}
    entry = report["nodes"]["blast-radius"]
    assert entry["status"] == "FINDINGS" and entry["failing"] is False


def test_dead_imports_glob(lab, report):
    node = lab.nodes["dead-glob"]
    rc, _runtimes, doc, _err = dumped(node)
    pattern = node.path("etc/containerd/conf.d") + "/*.toml"
    # 2.x dumps the pattern, matched or not; 2.2 puts its default import before it (DEFAULT_IMPORTS)
    assert rc == 0 and doc["imports"] == DEFAULT_IMPORTS[lab.release] + [pattern]
    assert os.listdir(node.path("etc/containerd/conf.d")) == []
    assert checks_of(report, "dead-glob") == ["dead_imports_glob"]
    item = only(report, "dead-glob", "dead_imports_glob")
    # the dir exists and holds no config fragment: a slot waiting for a drop-in, not a warning
    assert (item["severity"], item["subject"]) == ("info", pattern)
    assert item["evidence"]["resolved"] == pattern and item["evidence"]["dir_exists"] is True
    assert item["evidence"]["declared_in"] == node.config_path
    assert item["evidence"]["files_in_dir"] == []


def test_orphan_dropins(lab, report):
    node = lab.nodes["orphan"]
    _rc, runtimes, _doc, _err = dumped(node)
    assert "nvidia-experimental" not in runtimes and sorted(runtimes) == ["nvidia", "runc"]
    assert checks_of(report, "orphan") == ["orphan_dropin"]
    items = dict((f["subject"], f) for f in findings(report, "orphan"))
    conf = node.path("etc/containerd/conf.d/30-nvidia-cdi.conf")
    ctk = node.path("etc/containerd/config.d/99-nvidia.toml")
    # 20-nvidia.conf says what the loaded config carries already: no orphan
    assert sorted(items) == sorted([conf, ctk])
    assert items[conf]["severity"] == "error"
    assert items[conf]["evidence"]["declares_runtimes"] == ["nvidia-cdi-conf"]
    assert items[conf]["evidence"]["not_loaded"] == ["nvidia-cdi-conf"]
    assert items[conf]["evidence"]["imports"] == [node.path("etc/containerd/conf.d") + "/*.toml"]
    assert items[conf]["evidence"]["glob"] == node.path("etc/containerd/conf.d") + "/*.conf"
    # the config.d file declares a runtime nothing else loads: an error
    assert items[ctk]["severity"] == "error"
    assert items[ctk]["evidence"]["not_loaded"] == ["nvidia-experimental"]
    assert "nvidia-experimental" in items[ctk]["message"]


def test_ignored_plugin_section_v3_with_old_plugin_name_on_21(lab, report):
    node = lab.nodes["ignored-v3-oldname"]
    rc, runtimes, _doc, err = dumped(node)
    assert rc == 0 and "nvidia" not in runtimes
    assert "Ignoring unknown key in TOML for plugin" in err
    assert checks_of(report, "ignored-v3-oldname") == ["ignored_plugin_section", "missing_handler"]
    item = only(report, "ignored-v3-oldname", "ignored_plugin_section")
    assert item["severity"] == "error"
    assert item["subject"] == "%s:%s" % (node.config_path, V2)
    assert item["evidence"]["file_version"] == 3
    assert item["evidence"]["plugin"] == V2
    assert item["evidence"]["not_loaded"] == ["nvidia"]
    assert any("Ignoring unknown key" in line for line in item["evidence"]["loader_warnings"])
    assert report["nodes"]["ignored-v3-oldname"]["missing"] == ["MISSING=nvidia"]


def test_ignored_plugin_section_v3_file_on_16(lab, report):
    node = lab.nodes["ignored-v3-on-16"]
    rc, runtimes, _doc, _err = dumped(node)
    assert rc == 0 and "nvidia" not in runtimes and "runc" in runtimes  # runc from 1.6's defaults
    assert checks_of(report, "ignored-v3-on-16") == ["ignored_plugin_section", "missing_handler"]
    items = dict((f["subject"], f) for f in findings(report, "ignored-v3-on-16") if f["check"] == "ignored_plugin_section")
    assert sorted(items) == sorted([node.config_path, "%s:%s" % (node.config_path, V3)])
    whole = items[node.config_path]
    assert whole["severity"] == "error" and whole["evidence"]["file_version"] == 3
    assert whole["evidence"]["containerd"].startswith("1.6")
    section = items["%s:%s" % (node.config_path, V3)]
    assert section["severity"] == "error"
    assert section["evidence"]["not_loaded"] == ["nvidia"]
    assert report["nodes"]["ignored-v3-on-16"]["missing"] == ["MISSING=nvidia"]


def test_ignored_plugin_section_v1_file_on_21(lab, report):
    node = lab.nodes["ignored-v1-on-21"]
    rc, runtimes, _doc, err = dumped(node)
    assert rc == 0 and "nvidia" not in runtimes
    assert "Ignoring unknown key in TOML for plugin" in err
    assert checks_of(report, "ignored-v1-on-21") == ["ignored_plugin_section", "missing_handler"]
    item = only(report, "ignored-v1-on-21", "ignored_plugin_section")
    assert item["severity"] == "error"
    assert item["subject"] == "%s:%s" % (node.config_path, V1)
    assert item["evidence"]["file_version"] == 1
    assert item["evidence"]["not_loaded"] == ["nvidia"]


def test_file_loaded_drift_on_17_dropins_replace_the_section(lab, report):
    node = lab.nodes["drift-17"]
    rc, runtimes, doc, _err = dumped(node)
    # measured: each imported file replaces the whole CRI section; only the last one survives
    assert rc == 0 and sorted(runtimes) == ["nvidia"]
    # 1.x dumps the merged files, but in no stable order (measured: it varies run to run)
    assert sorted(doc["imports"]) == sorted([node.config_path, node.path("etc/containerd/conf.d/10-extra.toml"),
                                             node.path("etc/containerd/conf.d/20-nvidia.toml")])
    assert checks_of(report, "drift-17") == ["config_refused", "file_loaded_drift"]
    items = dict((f["evidence"]["file"], f) for f in findings(report, "drift-17") if f["check"] == "file_loaded_drift")
    extra = node.path("etc/containerd/conf.d/10-extra.toml")
    assert sorted(items) == sorted([node.config_path, extra])
    assert items[node.config_path]["evidence"]["not_loaded"] == ["runc"]
    assert items[extra]["evidence"]["not_loaded"] == ["nvidia-extra"]
    for item in items.values():
        assert item["severity"] == "error"
        assert "containerd#5837" in item["message"]
        assert item["evidence"]["merged_files"] == [node.config_path, extra,
                                                    node.path("etc/containerd/conf.d/20-nvidia.toml")]
    refused = only(report, "drift-17", "config_refused")
    assert refused["subject"] == "runc"
    assert "containerd 1.x keeps no runc of its own" in refused["message"]


def test_runtime_binary_missing(lab, report):
    node = lab.nodes["runtime-binary"]
    _rc, runtimes, _doc, _err = dumped(node)
    binary = node.path("usr/bin/nvidia-container-runtime")
    assert runtimes["nvidia"]["options"]["BinaryName"] == binary and not os.path.exists(binary)
    assert checks_of(report, "runtime-binary") == ["runtime_binary"]
    item = only(report, "runtime-binary", "runtime_binary")
    assert (item["severity"], item["subject"]) == ("error", "nvidia")
    assert item["evidence"]["binary_name"] == binary
    assert item["evidence"]["facts"]["exists"] is False
    assert "does not exist" in item["message"]


def test_cgroup_driver_disagrees_with_kubelet(lab, report):
    _rc, runtimes, _doc, _err = dumped(lab.nodes["cgroup"])
    assert runtimes["nvidia"]["options"]["SystemdCgroup"] is False
    assert runtimes["runc"]["options"]["SystemdCgroup"] is True
    assert checks_of(report, "cgroup") == ["cgroup_driver"]
    item = only(report, "cgroup", "cgroup_driver")
    assert (item["severity"], item["subject"]) == ("error", "nvidia")
    assert item["evidence"]["systemd_cgroup"] is False
    assert item["evidence"]["kubelet_cgroup_driver"] == "systemd"
    assert item["evidence"]["kubelet_config"] == lab.nodes["cgroup"].kubelet_config_path


def test_cdi_disabled_on_17(lab, report):
    _rc, runtimes, doc, _err = dumped(lab.nodes["cdi-disabled"])
    assert "nvidia-cdi" in runtimes and cri_value(doc, "enable_cdi") is False
    assert checks_of(report, "cdi-disabled") == ["cdi_disabled"]
    item = only(report, "cdi-disabled", "cdi_disabled")
    assert (item["severity"], item["subject"]) == ("error", "nvidia-cdi")
    assert item["evidence"]["enable_cdi"] is False


def test_cdi_stale_spec(lab, report):
    node = lab.nodes["cdi-stale"]
    _rc, _runtimes, doc, _err = dumped(node)
    stale = node.path("usr/lib/libcuda.so.535.104.05")
    assert cri_value(doc, "enable_cdi") is True and not os.path.exists(stale)
    assert checks_of(report, "cdi-stale") == ["cdi_stale_spec"]
    item = only(report, "cdi-stale", "cdi_stale_spec")
    assert (item["severity"], item["subject"]) == ("error", node.path("etc/cdi/nvidia.yaml"))
    assert item["evidence"]["missing_host_paths"] == [stale]
    assert item["evidence"]["missing_count"] == 1


def test_overhead_unschedulable(lab, report):
    assert checks_of(report, "overhead") == ["overhead_unschedulable"]
    item = only(report, "overhead", "overhead_unschedulable")
    assert (item["severity"], item["subject"]) == ("error", "nvidia-overhead:cpu")
    assert item["evidence"]["arithmetic"] == "900m + 250m > 1000m"
    assert item["evidence"]["allocatable"] == "1"
    # no other node has allocatable or the label
    assert all("overhead_unschedulable" not in checks_of(report, n) for n in NODES if n != "overhead")


def test_node_drift_flags_the_node_lacking_nvidia(lab, report):
    _rc, runtimes_a, _doc, _err = dumped(lab.nodes["pool-a"])
    _rc, runtimes_b, _doc, _err = dumped(lab.nodes["pool-b"])
    assert "nvidia" in runtimes_a and "nvidia" not in runtimes_b
    assert report["nodes"]["pool-a"]["status"] == "OK"
    assert "node_drift" in report["nodes"]["pool-a"]["checks_run"]
    assert checks_of(report, "pool-b") == ["missing_handler", "node_drift"]
    item = only(report, "pool-b", "node_drift")
    assert (item["severity"], item["subject"]) == ("warning", "gpu_pool")
    assert item["evidence"]["lacks"] == ["nvidia"]
    assert item["evidence"]["loaded_by"] == {"nvidia": ["pool-a"]}
    # nodes outside a group are not compared
    assert "node_drift" not in report["nodes"]["healthy"]["checks_run"]


def test_config_unreadable_for_a_dropin_over_max_file_bytes(lab, report):
    node = lab.nodes["unreadable"]
    big = node.path("etc/containerd/conf.d/50-big.toml")
    rc, _runtimes, doc, _err = dumped(node)
    assert rc == 0 and os.path.getsize(big) > 1048576  # containerd loads it; the audit cannot read it
    assert checks_of(report, "unreadable") == ["config_unreadable"]
    item = only(report, "unreadable", "config_unreadable")
    assert (item["severity"], item["subject"]) == ("error", big)
    assert "bytes" in item["evidence"]["error"]


def test_commented_out_import_premise(lab, report):
    node = lab.nodes["commented-import"]
    rc, runtimes, doc, _err = dumped(node)
    assert rc == 0 and sorted(runtimes) == ["nvidia", "runc"]  # config.d is never loaded
    assert doc["imports"] == DEFAULT_IMPORTS[lab.release] + [node.path("etc/containerd/conf.d") + "/*.toml"]
    assert report["nodes"]["commented-import"]["status"] == "FINDINGS"


def test_commented_out_import_leaves_an_orphan(lab, report):
    node = lab.nodes["commented-import"]
    assert checks_of(report, "commented-import") == ["orphan_dropin"]
    item = only(report, "commented-import", "orphan_dropin")
    assert item["subject"] == node.path("etc/containerd/config.d/99-nvidia.toml")
    assert item["evidence"]["not_loaded"] == ["nvidia-experimental"]


def test_kata_shim_and_config_path_missing(lab, report):
    node = lab.nodes["kata-shim"]
    _rc, runtimes, _doc, _err = dumped(node)
    assert runtimes["kata"]["runtime_type"] == "io.containerd.kata.v2"
    assert checks_of(report, "kata-shim") == ["runtime_binary", "runtime_file"]
    binary = only(report, "kata-shim", "runtime_binary")
    assert binary["subject"] == "kata" and binary["evidence"]["binary_name"] == "containerd-shim-kata-v2"
    # a RuntimeClass asks for kata on this node: reachable, so an error
    assert binary["severity"] == "error" and only(report, "kata-shim", "runtime_file")["severity"] == "error"
    # the message says truthfully where the shim was looked up: the directories the node searched
    searched = binary["evidence"]["facts"]["searched"]
    assert searched and searched[-1] == os.path.dirname(node.binary)
    assert "(searched %s: containerd's PATH (" % ", ".join(searched) in binary["message"]
    assert "then gpurt_shim_dirs, then the containerd binary's dir)" in binary["message"]
    config_file = only(report, "kata-shim", "runtime_file")
    assert config_file["subject"] == "kata:options.ConfigPath"
    assert config_file["evidence"]["path"] == node.path("opt/kata/share/defaults/kata-containers/configuration.toml")


def test_kata_with_its_files_is_ok(report):
    assert report["nodes"]["kata-ok"]["status"] == "OK"
    assert {"runtime_binary", "runtime_file"} <= set(report["nodes"]["kata-ok"]["checks_run"])


def test_dropin_above_root_on_21_warns_of_the_23_upgrade(lab, report):
    node = lab.nodes["dropin-above-root"]
    rc, runtimes, _doc, _err = dumped(node)
    assert rc == 0 and "nvidia" in runtimes  # 2.1 loads it
    assert checks_of(report, "dropin-above-root") == ["dropin_version_above_root"]
    item = only(report, "dropin-above-root", "dropin_version_above_root")
    assert item["severity"] == "warning" and item["subject"] == node.path("etc/containerd/conf.d/99-nvidia.toml")
    assert item["evidence"] == {"file": item["subject"], "version": 3, "root_version": 2,
                                "containerd": report["nodes"]["dropin-above-root"]["containerd_version"]}


def test_missing_config_is_info_not_an_error(lab, report):
    entry = report["nodes"]["no-config"]
    # containerd runs on its defaults: runc only, so the nvidia RuntimeClass is missing, nothing else
    assert checks_of(report, "no-config") == ["config_defaults", "missing_handler"]
    assert only(report, "no-config", "config_defaults")["severity"] == "info"
    assert "config_unreadable" in entry["checks_run"]


def test_backup_files_next_to_the_dropin_are_not_orphans(lab, report):
    node = lab.nodes["backups"]
    _rc, runtimes, _doc, _err = dumped(node)
    assert sorted(runtimes) == ["nvidia", "runc"]
    assert report["nodes"]["backups"]["status"] == "OK", report["nodes"]["backups"]["findings"]


def test_cgroup_of_an_unreachable_runtime_is_info(report):
    assert checks_of(report, "cgroup-unreachable") == ["cgroup_driver"]
    item = only(report, "cgroup-unreachable", "cgroup_driver")
    assert (item["severity"], item["subject"], item["evidence"]["reachable"]) == ("info", "nvidia-experimental", False)
    assert report["nodes"]["cgroup-unreachable"]["failing"] is False


@pytest.mark.parametrize("name, why", [
    ("garbage-kubelet", "is not YAML"),
    ("fifo-kubelet", "is a FIFO, not a regular file"),
])
def test_unusable_kubelet_config_skips_cgroup_driver(lab, report, name, why):
    entry = report["nodes"][name]
    assert entry["status"] == "OK" and "cgroup_driver" not in entry["checks_run"]
    assert why in entry["checks_skipped"]["cgroup_driver"]
    suite = [s for s in ET.parse(str(lab.base / "report" / "audit.junit.xml")).getroot().iter("testsuite")
             if s.get("name") == name][0]
    case = [c for c in suite.findall("testcase") if c.get("name") == "cgroup_driver"][0]
    assert case.find("skipped") is not None and why in case.find("skipped").get("message")


def test_imports_dev_zero_is_refused_with_containerds_cause(report):
    item = only(report, "dev-zero-import", "config_refused")
    assert item["evidence"]["cause"].startswith("fatal error: ") and "out of memory" in item["evidence"]["cause"]
    assert "goroutine" not in item["message"]


def test_mixed_plugin_names_in_a_v2_file_on_21(lab, report):
    node = lab.nodes["mixed-v2"]
    rc, runtimes, _doc, _err = dumped(node)
    assert rc == 0 and "kata-old" not in runtimes and "nvidia" in runtimes  # measured premise
    assert checks_of(report, "mixed-v2") == ["ignored_plugin_section"]
    item = only(report, "mixed-v2", "ignored_plugin_section")
    assert (item["severity"], item["subject"]) == ("error", "%s:%s" % (node.config_path, V2))
    assert item["evidence"]["not_loaded"] == ["kata-old"]
    assert "replaces the runtimes migrated from" in item["message"]


def test_crun_missing_has_no_runc_suggestion(report):
    item = only(report, "crun-missing", "missing_handler")
    assert item["subject"] == "crun" and item["evidence"]["suggestion"] is None
    # from base/crun.yaml: the manifests were read recursively
    assert item["evidence"]["runtimeclass"] == "crun"


def test_nvidias_cdi_runtime_needs_no_enable_cdi(lab, report):
    _rc, runtimes, doc, _err = dumped(lab.nodes["nvidia-cdi-self"])
    assert "nvidia-cdi" in runtimes and cri_value(doc, "enable_cdi") is False
    assert report["nodes"]["nvidia-cdi-self"]["status"] == "OK"


def test_not_checked_node(lab, audit, report):
    run = audit[0]
    node = lab.nodes["no-binary"]
    assert not os.path.exists(node.path("usr/bin/containerd"))
    entry = report["nodes"]["no-binary"]
    assert entry["status"] == "NOT CHECKED"
    assert "containerd binary not found" in entry["reason"]
    assert entry["reason"].startswith("no-binary:")
    assert entry["failing"] is True and entry["findings"] == []
    assert run.recap["no-binary"]["failed"] == 1
    assert "no-binary: NOT CHECKED (" in run.out


def test_config_refused_by_17_carries_its_cause_line(lab, audit, report):
    # was NOT CHECKED: containerd itself refuses the config, so it will not start
    node = lab.nodes["refused-v3-17"]
    rc, _runtimes, _doc, err = dumped(node)
    assert rc == 1 and "version `3` is not supported" in err
    assert checks_of(report, "refused-v3-17") == ["config_refused"]
    # the line containerd exits with, not the first error it logged
    assert "unsupported config version `3`" in only(report, "refused-v3-17", "config_refused")["message"]
    item = only(report, "refused-v3-17", "config_refused")
    assert item["severity"] == "error" and item["subject"] == node.config_path
    assert item["message"].startswith("containerd will not start with this config: ")
    assert item["evidence"]["cause"].startswith("containerd: failed to load TOML from %s" % node.config_path)
    assert item["evidence"]["rc"] == 1
    entry = report["nodes"]["refused-v3-17"]
    assert entry["status"] == "FINDINGS" and entry["failing"] is True
    # what needs a loaded config could not run, and says why
    assert "refuses the config" in entry["checks_skipped"]["missing_handler"]
    assert audit[0].recap["refused-v3-17"]["failed"] == 1


def test_report_summary_and_gate_lines(audit):
    run, report = audit[0], audit[1]
    summary = report["summary"]
    assert summary["nodes"] == len(NODES)
    assert summary["not_checked"] == 1
    ok = 2 + len(OK_NODES)  # healthy, pool-a and the false alarms that are gone
    assert summary["ok"] == ok
    assert summary["checked"] == len(NODES) - 1
    assert summary["with_findings"] == len(NODES) - 1 - ok
    lines = run.gate_lines()
    assert "healthy: OK" in lines
    assert lines[-1].startswith("checked %d of %d node(s): %d OK" % (len(NODES) - 1, len(NODES), ok))


def test_junit_report_parses(lab, audit):
    report = audit[1]
    tree = ET.parse(str(lab.base / "report" / "audit.junit.xml"))
    suites = dict((s.get("name"), s) for s in tree.getroot().iter("testsuite"))
    # one suite per node, and one for the inventory against the cluster's Nodes
    assert suites.pop("coverage").findall("testcase")
    assert sorted(suites) == sorted(NODES)
    for name, suite in suites.items():
        entry = report["nodes"][name]
        cases = suite.findall("testcase")
        if entry["status"] == "NOT CHECKED":
            assert len(suite.findall("testcase/error")) == 1 and suite.findall("testcase/failure") == []
            continue
        # one testcase per finding (errors fail), one per clean check, one <skipped/> per skipped check
        failing = sorted("[error] %s: %s" % (f["check"], f["subject"]) for f in entry["findings"] if f["severity"] == "error")
        assert sorted(c.get("name") for c in cases if c.find("failure") is not None) == failing
        assert len(cases) == len(entry["findings"]) + len(
            set(entry["checks_run"]) - set(f["check"] for f in entry["findings"])) + len(entry["checks_skipped"])
        assert sorted(c.get("name") for c in cases if c.find("skipped") is not None) == sorted(entry["checks_skipped"])
        assert suite.get("skipped") == str(len(entry["checks_skipped"]))
    healthy = suites["healthy"]
    entry = report["nodes"]["healthy"]
    assert healthy.get("failures") == "0"
    assert int(healthy.get("tests")) == len(entry["checks_run"]) + len(entry["checks_skipped"])
    # no allocatable, no daemon, no group: these could not run on it and are never reported as passed
    assert sorted(entry["checks_skipped"]) == ["node_drift", "overhead_unschedulable", "restart_pending"]


@pytest.fixture(scope="module")
def skipped_run(lab, audit):
    before = snapshot(str(lab.base / "nodes"))
    run, report = lab.run(str(lab.base / "report-skip"), gpurt_skip_checks=SKIP, gpurt_fail_on="warning")
    assert snapshot(str(lab.base / "nodes")) == before
    return run, report


_LOG_TIME = re.compile(r'time="[^"]*" ')


_GO_OOM = re.compile(r"fatal error: [^\n]*out of memory[^\n]*")


def untimed(items):
    """Findings with containerd's log timestamps cut out of the loader warnings they quote, and
    the Go runtime's out-of-memory cause made one: where the allocation fails varies from run to
    run (measured: "fatal error: runtime: out of memory" or "... allocating heap arena metadata")."""
    items = json.loads(json.dumps(items))
    for item in items:
        if "loader_warnings" in item["evidence"]:
            item["evidence"]["loader_warnings"] = [_LOG_TIME.sub("", l) for l in item["evidence"]["loader_warnings"]]
        if item["check"] == "config_refused":
            item["message"] = _GO_OOM.sub("fatal error: out of memory", item["message"])
            item["evidence"]["cause"] = _GO_OOM.sub("fatal error: out of memory", item["evidence"]["cause"])
    return items


def test_skip_checks_drop_exactly_those_findings(audit, skipped_run):
    first = audit[1]
    run, second = skipped_run
    assert run.rc == 2 and run.changed() == 0
    for name in NODES:
        kept = [f for f in first["nodes"][name]["findings"] if f["check"] not in SKIP]
        assert untimed(second["nodes"][name]["findings"]) == untimed(kept), name
        assert not set(SKIP) & set(second["nodes"][name]["checks_run"])
        if second["nodes"][name]["status"] != "NOT CHECKED":
            assert all(second["nodes"][name]["checks_skipped"][c] == "skip_checks" for c in SKIP), name
    assert second["nodes"]["cdi-stale"]["status"] == "OK"
    assert second["nodes"]["runtime-binary"]["status"] == "OK"
    # at fail_on=warning the warning-only nodes fail too
    assert second["fail_on"] == "warning"
    warning_only = []
    for name in NODES:
        entry = second["nodes"][name]
        if entry["status"] == "NOT CHECKED":
            continue
        severities = set(f["severity"] for f in entry["findings"])
        assert entry["failing"] is bool(severities & {"error", "warning"}), name
        assert run.recap[name]["failed"] == (1 if entry["failing"] else 0), name
        if severities & {"error", "warning"} == {"warning"}:
            warning_only.append(name)
    assert warning_only, "no node with warnings only: fail_on=warning is not exercised"
    # an empty drop-in directory is a slot (info), which fails at no level but info
    assert second["nodes"]["dead-glob"]["failing"] is False
    assert second["nodes"]["blast-radius"]["findings"] == []
    assert run.recap["blast-radius"]["failed"] == 0


def test_fail_on_none_passes_warnings_but_not_unchecked_nodes(lab, audit):
    run, report = lab.run(str(lab.base / "report-none"), gpurt_fail_on="none", limit="blast-radius,dead-glob,no-binary")
    assert sorted(report["nodes"]) == ["blast-radius", "dead-glob", "no-binary"]
    assert report["nodes"]["blast-radius"]["status"] == "FINDINGS"
    assert report["nodes"]["blast-radius"]["failing"] is False
    assert run.recap["blast-radius"]["failed"] == 0 and run.recap["dead-glob"]["failed"] == 0
    # a node that could not be checked fails at any threshold
    assert report["nodes"]["no-binary"]["status"] == "NOT CHECKED"
    assert run.recap["no-binary"]["failed"] == 1
    assert run.rc == 2


def test_unknown_skip_check_id_fails_the_play(lab):
    run = ansible_run.playbook(PLAYBOOK, lab.inventory, {
        "gpurt_runtimeclasses_src": lab.manifests, "gpurt_skip_checks": ["no_such_check"]},
        check=True, args=("--limit", "healthy"))
    assert run.rc != 0
    assert "unknown check id(s) in skip_checks: no_such_check" in run.text


def test_report_evidence_carries_no_timestamps(audit):
    report = audit[1]
    quoted = [line for entry in report["nodes"].values() for f in entry["findings"]
              for line in f["evidence"].get("loader_warnings", [])]
    assert [line for line in quoted if 'time="' in line] == []
