"""A bare BinaryName (Bottlerocket's nvidia-oci) is run by the runc shim with Go's exec.LookPath in the environment
containerd gives it, so runtime_binary looks it up in containerd's PATH - the PATH its containerd.service sets (a
drop-in's Environment=), else systemd's default PATH for services - then in gpurt_shim_dirs, all under
gpurt_host_root; never in the PATH of the audit's own module. A name found in none of them is still an error for a
runtime a pod can reach, and the finding lists the directories searched. A real ansible-playbook audit of local
nodes whose configs the real containerd 2.1 loads."""
import json
import os

import pytest

from tests.lib import ansible_run
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
AUDIT = os.path.join(ansible_run.REPO, "playbooks", "audit.yml")
V3 = "io.containerd.cri.v1.runtime"
CONFIG = ('version = 3\n[plugins."%s".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
          '[plugins."%s".containerd.runtimes.nvidia.options]\n  BinaryName = "{binary}"\n' % (V3, V3))
# a name only the audit module's own PATH holds (a directory this test puts first in it)
MODULE_ONLY = "gpurt-module-path-only"
RC = "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: nvidia}\nhandler: nvidia\n"
DEFAULT_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin"]


def _node(base, name, binary_at=None, binary="nvidia-oci"):
    node = Node(base, name, "2.1")
    node.write("etc/containerd/config.toml", CONFIG.replace("{binary}", binary))
    if binary_at:
        node.runtime_binary(binary_at)
    return node


@pytest.fixture(scope="module")
def audit(tmp_path_factory, containerd):
    base = tmp_path_factory.mktemp("bare-binary-name")
    nodes = {
        # containerd.service's drop-in gives it a PATH of its own: the binary is in it
        "unit-path": _node(base, "unit-path", "opt/gpu/bin/nvidia-oci"),
        # no unit: systemd's default PATH for services
        "default-path": _node(base, "default-path", "usr/local/bin/nvidia-oci"),
        # where the user says runtime binaries live
        "shim-dirs": _node(base, "shim-dirs", "opt/nvidia/bin/nvidia-oci"),
        # nowhere containerd looks: only in a directory of the module's own PATH
        "absent": _node(base, "absent", binary=MODULE_ONLY),
    }
    nodes["unit-path"].write("etc/systemd/system/containerd.service.d/10-path.conf",
                             "[Service]\nEnvironment=PATH=/opt/gpu/bin:/usr/bin\n")
    module_bin = base / "module-bin"
    module_bin.mkdir()
    (module_bin / MODULE_ONLY).write_text("#!/bin/sh\nexit 0\n")
    os.chmod(str(module_bin / MODULE_ONLY), 0o755)
    hosts = {}
    for name, node in nodes.items():
        hosts[name] = node.host_vars(gpurt_host_root=node.root)
    hosts["shim-dirs"]["gpurt_shim_dirs"] = ["/opt/nvidia/bin"]
    hosts["absent"]["gpurt_shim_dirs"] = ["/opt/nvidia/bin"]
    inventory = ansible_run.write_inventory(str(base / "hosts.json"), hosts)
    (base / "rc.yaml").write_text(RC)
    report_dir = str(base / "reports")
    run = ansible_run.playbook(AUDIT, inventory, {"gpurt_runtimeclasses_src": str(base / "rc.yaml"),
                                                  "gpurt_report_dir": report_dir}, check=True,
                               extra_env={"PATH": "%s:%s" % (module_bin, ansible_run.env()["PATH"])})
    with open(os.path.join(report_dir, "audit.json")) as handle:
        report = json.load(handle)
    return run, report, nodes


def binary_findings(report, name):
    return [f for f in report["nodes"][name]["findings"] if f["check"] == "runtime_binary"]


@pytest.mark.parametrize("name", ["unit-path", "default-path", "shim-dirs"])
def test_a_bare_binary_name_where_containerd_finds_it_is_healthy(audit, name):
    _run, report, _nodes = audit
    entry = report["nodes"][name]
    assert "runtime_binary" in entry["checks_run"]
    assert entry["status"] == "OK", json.dumps(entry["findings"], indent=1)


def test_a_bare_binary_name_found_nowhere_containerd_looks_is_an_error_that_says_where(audit):
    run, report, nodes = audit
    root = nodes["absent"].root
    assert run.rc == 2 and run.recap["absent"]["failed"] == 1, run
    found = binary_findings(report, "absent")
    assert [(f["severity"], f["subject"]) for f in found] == [("error", "nvidia")], report["nodes"]["absent"]
    searched = [root + d for d in DEFAULT_PATH] + [root + "/opt/nvidia/bin"]
    facts = found[0]["evidence"]["facts"]
    assert facts["searched"] == searched and facts["exists"] is False
    assert found[0]["message"] == (
        "runtime 'nvidia' uses BinaryName %s, which does not exist on the node (searched %s: containerd's "
        "PATH (systemd's default PATH for services), then gpurt_shim_dirs)" % (MODULE_ONLY, ", ".join(searched)))
    # the module's own PATH held one; containerd's does not, and neither do the shim dirs
    assert all(run.recap[name]["failed"] == 0 for name in ("unit-path", "default-path", "shim-dirs")), run
