"""Issue 37: a host root applied exactly once. With gpurt_host_root set to a test node's root, the drop-in
directory a generated main config imports (RKE2's config-v3.toml.d, k0s' containerd.d, both named in the file
with the node's root) was prefixed with the root a second time: the role wrote its drop-in under the doubled
path and an imports line into the file the generator rewrites at every start. The real ansible-playbook runs
the role on shapes of the projects' published configs, loaded by the real containerd."""
import hashlib
import os

import pytest

from tests.lib import ansible_run
from tests.lib import containerd_bins
from tests.lib import shapes

pytestmark = pytest.mark.integration

ROLE = "- hosts: all\n  gather_facts: false\n  roles:\n    - gpurt.runtime_gate.containerd_runtime\n"
IMPORTED = {
    "rke2-v3": "var/lib/rancher/rke2/agent/etc/containerd/config-v3.toml.d",
    "k0s": "etc/k0s/containerd.d",
}


def sha(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def every_file(root):
    return sorted(os.path.join(d, n) for d, _dirs, names in os.walk(root) for n in names)


@pytest.fixture(scope="module")
def role_runs(tmp_path_factory, containerd):
    """One node per IMPORTED shape (the host is named after it), its main config's hash before, and the role's
    check run (-v), real run and second run over both."""
    base = tmp_path_factory.mktemp("host-root")
    out = {"nodes": {}, "before": {}}
    hosts = {}
    for shape in sorted(IMPORTED):
        node = out["nodes"][shape] = shapes.install(base / "nodes", shape, shape, "2.1")
        config = node.path(node.config_rel)
        out["before"][shape] = sha(config)
        hosts[shape] = node.host_vars(
            gpurt_containerd_config_path=config, gpurt_host_root=node.root,
            gpurt_kubelet_config_path=node.path(node.kubelet_rel),
            containerd_runtime_runtimes=[{"name": "gpu2", "binary_name": node.runtime_binary("usr/bin/gpu2")}],
            containerd_runtime_backup_dir=node.path("var/backups/gpurt"),
            containerd_runtime_restart_command=["sh", "-c", "echo restarted >> %s" % node.path("restarts.log")],
            # no daemon runs here: the restart is proved on the config it starts with
            containerd_runtime_restart_proof="config")
    inventory = ansible_run.write_inventory(str(base / "inv.json"), hosts)
    playbook = base / "role.yml"
    playbook.write_text(ROLE)
    out["check"] = ansible_run.playbook(str(playbook), inventory, check=True, args=["-v"])
    out["run"] = ansible_run.playbook(str(playbook), inventory)
    out["again"] = ansible_run.playbook(str(playbook), inventory)
    return out


@pytest.mark.parametrize("shape", sorted(IMPORTED))
def test_the_imported_dropin_dir_of_a_generated_config_gets_the_host_root_once(role_runs, shape):
    node = role_runs["nodes"][shape]
    config = node.path(node.config_rel)
    wanted = os.path.join(node.path(IMPORTED[shape]), "zz-gpurt-gpu2.toml")

    check = role_runs["check"]
    assert check.rc == 0, check
    assert "would write %s" % wanted in check.text, check
    assert node.root + node.root not in check.text, check

    run = role_runs["run"]
    assert run.rc == 0 and run.recap[shape]["failed"] == 0, run
    assert os.path.isfile(wanted), every_file(node.root)
    doubled = node.path(node.root)
    assert not os.path.exists(doubled), "written under the doubled root: %s" % every_file(doubled)
    assert sha(config) == role_runs["before"][shape], (
        "the generated main config was changed (its generator rewrites it at every start)")
    rc, out, err = containerd_bins.dump(node.binary, config)
    assert rc == 0 and "gpu2" in out, err

    again = role_runs["again"]  # every host of it must change nothing
    assert again.rc == 0 and again.changed() == 0, again
