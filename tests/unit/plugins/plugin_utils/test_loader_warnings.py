"""_loader_warnings.py: containerd's loader lines (a key a plugin ignores, strict mode) read back to the file
and key that set them, on the lines the real binaries printed (measured with 1.6.20, 1.7.24 and 2.1.9; the
same shapes run on the real binaries in tests/integration/test_load_warnings.py). The check that reports them,
config_load_warning: test_checks_files.py."""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _loader_warnings as loader_warnings
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from tests.lib.containerd_stderr import ignored

V2 = shapes.CRI_PLUGIN_V2

V2_OLD = '''version = 2
[plugins."io.containerd.grpc.v1.cri"]
  systemd_cgroup = true
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    runtime_engine = "/usr/bin/runc"
  [plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example.com".tls]
    insecure_skip_verify = true
'''


def test_fields_of_a_logrus_line():
    line = ignored("containerd runtimes runc runtime_engine", "io.containerd.cri.v1.runtime")
    found = loader_warnings.fields(line)
    assert found["msg"] == "Ignoring unknown key in TOML for plugin"
    assert (
        found["key"] == "containerd runtimes runc runtime_engine" and found["plugin"] == "io.containerd.cri.v1.runtime"
    )


def test_migrated_keys_are_found_under_the_old_plugin_name():
    lines = [
        ignored("systemd_cgroup", "io.containerd.cri.v1.runtime"),
        ignored("containerd runtimes runc runtime_engine", "io.containerd.cri.v1.runtime"),
        ignored("registry configs registry.example.com tls", "io.containerd.cri.v1.images"),
    ]
    items = loader_warnings.read(lines, [("/etc/containerd/config.toml", toml_codec.loads(V2_OLD, "x"))])
    assert [(i["kind"], i["key"]) for i in items] == [
        ("ignored_key", "systemd_cgroup"),
        ("ignored_key", "containerd.runtimes.runc.runtime_engine"),
        ("ignored_key", 'registry.configs."registry.example.com".tls'),
    ]
    assert items[2]["files"] == [
        {
            "file": "/etc/containerd/config.toml",
            "plugin": V2,
            "key": 'plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example.com".tls',
        }
    ]


def test_ignored_zero_values_lose_nothing():
    # what 1.6's `config default` writes (measured: 2.1-2.4 warn of each, and load the same config without them)
    doc = toml_codec.loads(
        'plugin_dir = ""\nversion = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  systemd_cgroup = false\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd]\n  no_pivot = false\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.untrusted_workload_runtime]\n'
        '  runtime_type = ""\n  privileged_without_host_devices = false\n'
        '  [plugins."io.containerd.grpc.v1.cri".containerd.untrusted_workload_runtime.options]\n',
        "x",
    )
    lines = [
        'level=warning msg="Ignoring unknown key in TOML" column=1 error="strict mode: fields in the document are '
        'missing in the target struct" file=/etc/containerd/config.toml key=plugin_dir row=1',
        ignored("systemd_cgroup", "io.containerd.cri.v1.runtime"),
        ignored("containerd no_pivot", "io.containerd.cri.v1.runtime"),
        ignored("containerd untrusted_workload_runtime", "io.containerd.cri.v1.runtime"),
        ignored("containerd untrusted_workload_runtime options", "io.containerd.cri.v1.runtime"),
    ]
    assert loader_warnings.read(lines, [("/etc/containerd/config.toml", doc)]) == []
    doc["plugin_dir"] = "/opt/containerd/plugins"
    (item,) = loader_warnings.read(lines, [("/etc/containerd/config.toml", doc)])
    assert item["plugin"] is None and item["files"] == [
        {"file": "/etc/containerd/config.toml", "plugin": None, "key": "plugin_dir"}
    ]


def test_24_ignores_enable_cdi_but_cdi_stays_on():
    line = ignored("enable_cdi", "io.containerd.cri.v1.runtime")
    for value, reported in ((True, []), (False, ["enable_cdi"])):
        doc = {"version": 3, "plugins": {"io.containerd.cri.v1.runtime": {"enable_cdi": value}}}
        assert [i["key"] for i in loader_warnings.read([line], [("/c.toml", doc)])] == reported


def test_only_the_outermost_unknown_table_is_kept():
    lines = [
        ignored(k, V2) for k in ("sandbox_image", "containerd", "containerd runtimes", "containerd runtimes nvidia")
    ]
    doc = toml_codec.loads(
        'version = 3\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "x"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "x"\n',
        "x",
    )
    assert [i["key"] for i in loader_warnings.read(lines, [("/c.toml", doc)])] == ["sandbox_image", "containerd"]


def test_24_ignores_a_cni_bin_dir_the_loaded_bin_dirs_hold():
    line = ignored("cni bin_dir", "io.containerd.cri.v1.runtime")
    doc = {"version": 3, "plugins": {"io.containerd.cri.v1.runtime": {"cni": {"bin_dir": "/opt/cni/bin"}}}}
    for bin_dirs, reported in ((["/opt/cni/bin"], []), (["/usr/lib/cni"], ["cni.bin_dir"])):
        loaded = {"plugins": {"io.containerd.cri.v1.runtime": {"cni": {"bin_dirs": bin_dirs}}}}
        assert [i["key"] for i in loader_warnings.read([line], [("/c.toml", doc)], loaded)] == reported
