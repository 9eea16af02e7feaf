"""playbooks/validate_bootstrap.yml: render a node bootstrap offline, load it with a real
containerd of the node's major version, cross-check against RuntimeClasses."""
import os

import pytest

from tests.lib import ansible_run
from tests.lib.fake_apiserver import FakeApiServer, write_kubeconfig

pytestmark = pytest.mark.integration

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "bootstrap")
PLAYBOOK = os.path.join(ansible_run.REPO, "playbooks", "validate_bootstrap.yml")
RUNTIMECLASS = os.path.join(FIXTURES, "runtimeclass-nvidia.yaml")


def template_vars(**extra):
    base = {
        "bootstrap_template": os.path.join(FIXTURES, "config.toml.j2"),
        "bootstrap_files": [{"src": os.path.join(FIXTURES, "99-nvidia.toml.j2"),
                             "dest": "/etc/containerd/conf.d/99-nvidia.toml"}],
        "bootstrap_vars": os.path.join(FIXTURES, "vars.yml"),
        "runtimeclasses": RUNTIMECLASS,
    }
    base.update(extra)
    return base


def run(containerd, **extra_vars):
    extra_vars.setdefault("bootstrap_containerd_dir", os.path.dirname(os.path.dirname(containerd["2.1"])))
    return ansible_run.playbook(PLAYBOOK, "localhost,", extra_vars)


def test_good_template_on_2x_is_ok(containerd):
    result = run(containerd, **template_vars())
    assert result.rc == 0, result
    assert result.gate_lines() == ["bootstrap: OK"]


def test_good_template_on_1x(containerd):
    result = run(containerd, bootstrap_template=os.path.join(FIXTURES, "config-1x-inline.toml.j2"),
                 bootstrap_vars={"gpu_runtime_name": "nvidia"}, bootstrap_containerd_major=1,
                 runtimeclasses=RUNTIMECLASS)
    assert result.rc == 0, result
    assert result.gate_lines() == ["bootstrap: OK"]


def test_drop_in_per_runtime_on_1x_loses_runc(containerd):
    # Measured: containerd 1.x lets the drop-in replace the whole CRI section, runc included.
    vars_file = {"containerd_major": 1, "gpu_runtime_name": "nvidia"}
    result = run(containerd, **template_vars(bootstrap_vars=vars_file, bootstrap_containerd_major=1))
    assert result.rc == 2, result
    # measured with a real 1.7 daemon: containerd starts, its CRI plugin does not load (issue 10)
    assert result.gate_lines() == [
        "bootstrap: ERROR config_refused: containerd starts, but its CRI plugin will not load (failed to load "
        "plugin io.containerd.grpc.v1.cri: invalid plugin config: no corresponding runtime configured in "
        "`containerd.runtimes` for `containerd` `default_runtime_name = \"runc\"`): no pod runs on the node; "
        "containerd 1.x keeps no runc of its own once a config declares runtimes (fix: register runtime 'runc' "
        "next to the others, or set default_runtime_name to a loaded one)"]


def test_old_plugin_name_under_version_3_is_missing(containerd):
    result = run(containerd, **template_vars(cri_plugin="io.containerd.grpc.v1.cri"))
    assert result.rc == 2, result
    lines = result.gate_lines()
    assert lines[0] == "bootstrap: MISSING=nvidia"
    assert any("ignored_plugin_section" in l and "/etc/containerd/conf.d/99-nvidia.toml" in l for l in lines), lines
    assert "gpurt-bootstrap" not in "\n".join(lines), "sandbox paths must be shown as node paths"


def test_glob_that_matches_no_drop_in_is_missing(containerd):
    result = run(containerd, **template_vars(dropin_suffix="conf"))
    assert result.rc == 2, result
    lines = result.gate_lines()
    assert lines[0] == "bootstrap: MISSING=nvidia"
    assert any("orphan_dropin" in l for l in lines), lines


def test_v3_template_on_a_1x_node_is_refused(containerd):
    # A 2.x template shipped to a 1.x node group: containerd 1.7 refuses version 3.
    result = run(containerd, **template_vars(bootstrap_containerd_major=1))
    assert result.rc == 2, result
    assert "version `3` is not supported" in result.text
    assert "Traceback" not in result.text


def test_user_data_with_kubelet_systemd_and_default_cgroup(containerd):
    result = run(containerd, bootstrap_userdata=os.path.join(FIXTURES, "user-data-mime.txt"), runtimeclasses=RUNTIMECLASS)
    assert result.rc == 2, result
    lines = result.gate_lines()
    assert "bootstrap: MISSING=nvidia" not in lines
    assert sorted(l.split(":")[1].strip() for l in lines) == ["ERROR cgroup_driver", "ERROR cgroup_driver"], lines
    assert any("runtime 'nvidia' has SystemdCgroup = false" in l for l in lines)


def test_against_a_live_cluster(containerd, tmp_path):
    token = "bootstrap-token-123"
    runtimeclasses = [{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": n}, "handler": n}
                      for n in ("nvidia", "nvidia-cdi")]
    with FakeApiServer(runtimeclasses=runtimeclasses, token=token) as fake:
        kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), fake.url, token=token)
        extra = template_vars(kubeconfig=kubeconfig)
        del extra["runtimeclasses"]
        result = run(containerd, **extra)
        assert len(fake.list_requests("runtimeclasses")) == 1
    assert result.rc == 2, result
    assert "bootstrap: MISSING=nvidia-cdi" in result.gate_lines()
    assert token not in result.text


def test_no_source_is_a_clear_error(containerd):
    result = run(containerd, runtimeclasses=RUNTIMECLASS)
    assert result.rc == 2
    assert "pass -e bootstrap_template=FILE" in result.text
