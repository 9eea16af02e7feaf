"""Issue 27 closure, ignored_plugin_section: a main config the node's containerd ignores part of is converted to
what that containerd reads, by remediate.yml through the real ansible-playbook, proved by the real containerd
(the staged load keeps everything the node loaded) and loaded after: a version 1 file (gVisor's and older
kubeadm guides' `plugins.cri`) on 2.1, which ignores its CRI section, and on 1.7, which reads it but cannot
merge a version 2 drop-in into it; a version 3 file whose CRI keys sit under the old plugin name (a version 2
snippet pasted into a 2.x config), which 2.1 ignores. The version 3 file on 1.6 is in
test_remediation_converges."""
import json

import pytest

from tests.integration import test_remediation_converges as converges

pytestmark = pytest.mark.integration

OLD_NAME_V3 = """# containerd 2.x config.toml with a version 2 snippet pasted in
version = 3

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.9"

  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = true
"""


def _converged(tmp_path, node, shape):
    run, nodes = converges.remediate(tmp_path, {"n": converges.host_vars(node, shape)})
    entry = nodes["n"]
    runtimes, cri, doc = converges.loaded(node)
    notes = " ".join(entry["remediation"].get("notes") or []) + " ".join(entry["remediation"].get("warnings") or [])
    return run, entry, runtimes, doc, notes


@pytest.mark.parametrize("version", ["2.1", "1.7"])
def test_a_version_1_file_is_converted_to_what_the_node_reads(tmp_path, containerd, version):
    node = converges.install(tmp_path / "nodes", "version1-file", version)
    before, _cri, _doc = converges.loaded(node)
    run, entry, runtimes, doc, notes = _converged(tmp_path, node, "version1-file")
    assert converges.passed(entry), json.dumps(entry, indent=1)
    assert "converted to version 2" in notes, notes
    assert {"runc", "kata", "nvidia"} <= set(runtimes), sorted(runtimes)
    assert runtimes["runc"]["options"]["SystemdCgroup"] is True
    if version == "2.1":
        assert "kata" not in before  # 2.1 ignored plugins.cri: the conversion brings it back
        assert doc["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] == "k8s.gcr.io/pause:3.2"
    else:
        assert doc["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"] == "k8s.gcr.io/pause:3.2"
    assert [f for f in entry["findings"] if f["check"] == "ignored_plugin_section"] == []


def test_old_plugin_name_keys_in_a_version_3_file_move_where_21_reads_them(tmp_path, containerd):
    node = converges.install(tmp_path / "nodes", "kubeadm-documented-2.1", "2.1")
    with open(node.path(node.config_rel), "w") as handle:
        handle.write(OLD_NAME_V3)
    before, _cri, before_doc = converges.loaded(node)
    assert before_doc["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] != "registry.k8s.io/pause:3.9"
    run, entry, runtimes, doc, notes = _converged(tmp_path, node, "kubeadm-documented-2.1")
    assert converges.passed(entry), json.dumps(entry, indent=1)
    assert "old plugin name" in notes, notes
    assert runtimes["runc"]["options"]["SystemdCgroup"] is True and "nvidia" in runtimes
    assert doc["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] == "registry.k8s.io/pause:3.9"
