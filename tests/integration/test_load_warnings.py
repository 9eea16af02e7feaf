"""Issue 37: containerd 2.x ignores some settings of older configs with only a log line. Measured with the
real 2.1.9, 2.2.9, 2.3.7 and 2.4.2: a version 2 file's `registry.configs."<host>".tls` (removed in 2.0) gives
`level=warning msg="Ignoring unknown key in TOML for plugin" key="registry configs <host> tls"
plugin=io.containerd.cri.v1.images`, exit 0, and the dump has no tls setting. 1.6 and 1.7 load it and say
nothing. config_load_warning turns the line into a warning naming the key and the file that sets it.

The node side (node_gather.gather) runs in-process, as the module runs it on a node; the real ansible-playbook
audit of the same shape on 2.3 is test_audit_checks_23.py::test_keys_2x_ignores_are_warnings_naming_key_and_file."""

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_gather as node_gather
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _audit as audit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from tests.lib import containerd_bins
from tests.lib.nodes import node_binary

pytestmark = pytest.mark.integration

V2 = "io.containerd.grpc.v1.cri"
CONFIG = '''version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example.com".tls]
  insecure_skip_verify = true
'''
KEY = 'plugins."%s".registry.configs."registry.example.com".tls' % V2


def judged(tmp_path, version):
    config = tmp_path / "config.toml"
    config.write_text(CONFIG)
    params = dict(containerd_bin=node_binary(version), config_path=str(config), dropin_dirs=[],
                  kubelet_config_path=str(tmp_path / "kubelet.yaml"), cdi_spec_dirs=[], timeout=60,
                  max_file_bytes=1048576, max_dump_bytes=64 << 20, max_memory_mb=1024, on_refused="report",
                  gather_running=False, crictl_bin=None, cri_endpoint=None)
    gathered = parse_gathered.parse_gathered(node_gather.gather(params))
    entry = audit.audit_host("node", gathered, [], labels={})
    return str(config), gathered, [f for f in entry["findings"] if f["check"] == "config_load_warning"]


@pytest.mark.parametrize("version", [v for v in containerd_bins.ALL_VERSIONS if v.startswith("2.")])
def test_an_ignored_tls_setting_is_a_warning_naming_key_and_file(tmp_path, version):
    config, gathered, found = judged(tmp_path, version)
    assert any('key="registry configs registry.example.com tls"' in line
               for line in gathered["dump_warnings"]), gathered["dump_warnings"]
    assert [(f["severity"], f["subject"]) for f in found] == [("warning", "%s:%s" % (config, KEY))], found
    assert KEY in found[0]["message"] and config in found[0]["message"], found[0]["message"]


@pytest.mark.parametrize("version", [v for v in containerd_bins.ALL_VERSIONS if v.startswith("1.")])
def test_1x_loads_the_same_file_without_a_line(tmp_path, version):
    _config, gathered, found = judged(tmp_path, version)
    assert not any("registry configs" in line for line in gathered.get("dump_warnings") or [])
    assert found == []
