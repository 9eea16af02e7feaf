"""The pure parts of cri_plugin_disabled and config_load_warning, on the lines and dumps the real binaries
printed (measured with 1.6.20, 1.7.24 and 2.1.9; the same shapes run on the
real binaries in tests/integration/test_cri_disabled.py and test_load_warnings.py)."""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _checks as checks
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _loader_warnings as loader_warnings
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec

V2 = shapes.CRI_PLUGIN_V2
STRICT = (
    'level=warning msg="Ignoring unknown key in TOML for plugin" error="strict mode: fields in the document are '
    'missing in the target struct" key=%s plugin=%s'
)


def ignored(key, plugin):
    return STRICT % ('"%s"' % key if " " in key else key, plugin)


# --- cri_plugin_disabled ---------------------------------------------------------------------


def test_cri_disabling_names_by_major():
    everything = [
        "cri",
        V2,
        "io.containerd.cri.v1.runtime",
        "io.containerd.cri.v1.images",
        "io.containerd.internal.v1.tracing",
    ]
    assert shapes.cri_disabled_by(everything, (), 1)[0] == ["cri", V2]  # 1.x has no io.containerd.cri.v1.*
    assert shapes.cri_disabled_by(everything, (), 2)[0] == everything[:4]
    assert shapes.cri_disabled_by(everything, (), None)[0] == everything[:4]
    assert shapes.cri_disabled_by(["io.containerd.internal.v1.tracing"], (), 2) == ([], [])


def test_a_version_1_files_cri_is_the_uri_2x_dumps():
    # 2.1.9 dumps Docker's disabled_plugins = ["cri"] as ['io.containerd.grpc.v1.cri']
    names, files = shapes.cri_disabled_by(
        [V2],
        [
            ("/etc/containerd/config.toml", ["cri"]),
            ("/etc/containerd/conf.d/a.toml", ["io.containerd.internal.v1.tracing"]),
        ],
        2,
    )
    assert names == [V2] and files == [("/etc/containerd/config.toml", ["cri"])]


def gathered_with(files, dump, version=(2, 1), warnings=()):
    """A gather result as parse_gathered leaves it: files [(path, role, text)], dump as containerd printed it."""
    result = {
        "version": "%d.%d.9" % version,
        "version_major": version[0],
        "version_minor": version[1],
        "config_path": files[0][0],
        "config_exists": True,
        "dump": dump,
        "refused": None,
        "dump_warnings": list(warnings),
        "imports": [],
        "files": [{"path": p, "role": r, "content": t, "error": None} for p, r, t in files],
    }
    return parse_gathered.parse_gathered(result)


def findings_of(gathered, check):
    out, ran, _skipped = checks.check_node("n1", gathered, [], {})
    assert check in ran
    return [f for f in out if f["check"] == check]


DOCKER = '#   Copyright 2018-2022 Docker Inc.\n\ndisabled_plugins = ["cri"]\n\n#root = "/var/lib/containerd"\n'
DUMP_21 = (
    "version = 3\nroot = '/var/lib/containerd'\ndisabled_plugins = ['io.containerd.grpc.v1.cri']\n"
    "[plugins.'io.containerd.cri.v1.runtime'.containerd]\n  default_runtime_name = 'runc'\n"
    "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n  runtime_type = 'io.containerd.runc.v2'\n"
)


def test_dockers_file_on_21_is_an_error_naming_the_file_and_key():
    (item,) = findings_of(
        gathered_with([("/etc/containerd/config.toml", "main", DOCKER)], DUMP_21), "cri_plugin_disabled"
    )
    assert item["severity"] == "error" and item["subject"] == V2
    assert '/etc/containerd/config.toml sets disabled_plugins = ["cri"]' in item["message"]
    assert "the dump still lists runtimes (runc)" in item["message"]
    assert item["fix"].startswith('remove "cri" from disabled_plugins in /etc/containerd/config.toml')
    assert item["evidence"]["key"] == "disabled_plugins"
    assert item["evidence"]["files"] == [{"file": "/etc/containerd/config.toml", "names": ["cri"]}]


def test_a_bare_dump_still_names_the_key():
    out, _ran, _skipped = checks.check_node("n1", {"loaded": parse_gathered.summarize_dump(DUMP_21)}, [], {})
    (item,) = [f for f in out if f["check"] == "cri_plugin_disabled"]
    assert "the loaded config sets disabled_plugins = [\"io.containerd.grpc.v1.cri\"]" in item["message"]


def test_other_disabled_plugins_are_no_finding():
    dump = DUMP_21.replace("io.containerd.grpc.v1.cri']", "io.containerd.internal.v1.tracing']")
    text = 'version = 3\ndisabled_plugins = ["io.containerd.internal.v1.tracing"]\n'
    assert (
        findings_of(gathered_with([("/etc/containerd/config.toml", "main", text)], dump), "cri_plugin_disabled") == []
    )


# --- containerd's load warnings ----------------------------------------------------------------

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


def test_the_check_names_key_and_file_and_leaves_ignored_runtimes_to_ignored_plugin_section():
    v3_old = (
        'version = 3\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "x"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
    )
    lines = [
        ignored(k, V2) for k in ("sandbox_image", "containerd", "containerd runtimes", "containerd runtimes nvidia")
    ]
    dump = DUMP_21.replace("disabled_plugins = ['io.containerd.grpc.v1.cri']\n", "")
    gathered = gathered_with([("/etc/containerd/config.toml", "main", v3_old)], dump, warnings=lines)
    (item,) = findings_of(gathered, "config_load_warning")
    assert item["severity"] == "warning"
    assert item["subject"] == '/etc/containerd/config.toml:plugins."io.containerd.grpc.v1.cri".sandbox_image'
    assert "ignores sandbox_image of plugin io.containerd.grpc.v1.cri" in item["message"]
    assert [
        f["check"] for f in checks.check_node("n1", gathered, [], {})[0] if f["check"] == "ignored_plugin_section"
    ] == ["ignored_plugin_section"]


def test_deprecated_version_1_on_1x_names_the_file():
    line = (
        'level=warning msg="containerd config version `1` has been deprecated and will be removed in containerd '
        'v2.0, please switch to version `2`, see https://github.com/containerd/containerd/blob/main/docs/PLUGINS.md'
        '#version-header"'
    )
    dump = 'disabled_plugins = ["cri"]\nversion = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
    gathered = gathered_with([("/etc/containerd/config.toml", "main", DOCKER)], dump, version=(1, 6), warnings=[line])
    (item,) = findings_of(gathered, "config_load_warning")
    assert item["subject"] == "/etc/containerd/config.toml:version"
    assert "config version 1 is deprecated" in item["message"]


def test_a_refused_config_has_no_load_warnings():
    result = parse_gathered.parse_gathered(
        {"dump": None, "refused": {"cause": "x"}, "files": [], "dump_warnings": [ignored("x", V2)]}
    )
    assert result["load_warnings"] == []
