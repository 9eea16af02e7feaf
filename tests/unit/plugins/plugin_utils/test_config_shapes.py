"""_config_shapes.py: the runtimes of a parsed config of every version (real dumps summarized), and which
plugin each containerd release reads."""
import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _config_shapes as shapes
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _parse_gathered as parse_gathered
from tests.lib.dumps import dump_text


@pytest.mark.parametrize("name", ["containerd-1.6-v2-nvidia.toml", "containerd-1.7-v2-nvidia.toml"])
def test_v2_dump_of_1x(name):
    loaded = parse_gathered.summarize_dump(dump_text(name))
    assert loaded["version"] == 2
    assert loaded["cri_plugins"] == [shapes.CRI_PLUGIN_V2]
    assert loaded["runtime_names"] == ["nvidia", "runc"]
    nvidia = loaded["runtimes"]["nvidia"]
    assert nvidia["runtime_type"] == "io.containerd.runc.v2"
    assert nvidia["binary_name"] == "/usr/bin/nvidia-container-runtime"
    assert nvidia["systemd_cgroup"] is True
    assert nvidia["plugin"] == shapes.CRI_PLUGIN_V2
    assert loaded["default_runtime_name"] == "runc"
    # 1.x dumps imports as the files it merged, the main file first.
    assert loaded["imports"] == ["fx/config.toml"]


def test_v3_dump_of_2x():
    loaded = parse_gathered.summarize_dump(dump_text("containerd-2.1-v3-nvidia.toml"))
    assert loaded["version"] == 3
    assert loaded["cri_plugins"] == [shapes.CRI_PLUGIN_V3]
    assert loaded["runtime_names"] == ["nvidia", "nvidia-cdi", "runc"]
    assert loaded["runtimes"]["nvidia-cdi"]["binary_name"] == "/usr/bin/nvidia-container-runtime.cdi"
    # 2.x dumps a user runtime with only the options written; unset means false to containerd.
    assert loaded["runtimes"]["nvidia-cdi"]["systemd_cgroup"] is None
    assert loaded["runtimes"]["runc"]["binary_name"] == ""
    assert loaded["enable_cdi"] is True
    assert loaded["cdi_spec_dirs"] == ["/etc/cdi", "/var/run/cdi"]
    # 2.x dumps the patterns as written.
    assert loaded["imports"] == ["/etc/containerd/conf.d/*.toml"]


def test_2x_migrates_a_v2_file():
    loaded = parse_gathered.summarize_dump(dump_text("containerd-2.1-from-v2-nvidia.toml"))
    assert loaded["version"] == 3
    assert loaded["runtime_names"] == ["nvidia", "runc"]
    assert loaded["runtimes"]["runc"]["systemd_cgroup"] is True


def test_v3_with_old_plugin_name_loses_the_runtime():
    loaded = parse_gathered.summarize_dump(dump_text("containerd-2.1-v3-oldname.toml"))
    assert loaded["runtime_names"] == ["runc"]


def test_partial_dump_without_cri_plugin():
    loaded = parse_gathered.summarize_dump('version = 2\nroot = "/var/lib/containerd"\n')
    assert loaded["runtime_names"] == []
    assert loaded["default_runtime_name"] == ""
    assert loaded["cri_plugins"] == []


def test_partial_dump_with_runtime_only():
    text = '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
    loaded = parse_gathered.summarize_dump("version = 3\n" + text)
    assert loaded["runtime_names"] == ["nvidia"]
    assert loaded["runtimes"]["nvidia"]["runtime_type"] == ""
    assert loaded["runtimes"]["nvidia"]["systemd_cgroup"] is None


def test_v3_name_wins_over_v2_name_for_the_same_runtime():
    doc = {"version": 3, "plugins": {
        shapes.CRI_PLUGIN_V2: {"containerd": {"runtimes": {"nvidia": {"runtime_type": "old"}}}},
        shapes.CRI_PLUGIN_V3: {"containerd": {"runtimes": {"nvidia": {"runtime_type": "new"}}}},
    }}
    assert shapes.summarize(doc)["runtimes"]["nvidia"]["runtime_type"] == "new"


@pytest.mark.parametrize("major, version, plugin, ignored", [
    (2, 3, shapes.CRI_PLUGIN_V2, True),
    (2, 3, shapes.CRI_PLUGIN_V3, False),
    (2, 2, shapes.CRI_PLUGIN_V2, False),
    (2, 1, shapes.CRI_PLUGIN_V1, True),
    (1, 2, shapes.CRI_PLUGIN_V2, False),
    (1, 2, shapes.CRI_PLUGIN_V3, True),
    (1, 3, shapes.CRI_PLUGIN_V3, True),
    (1, 3, shapes.CRI_PLUGIN_V2, False),
    (1, 1, shapes.CRI_PLUGIN_V1, False),
    (2, 4, shapes.CRI_PLUGIN_V3, False),
    (2, 9, shapes.CRI_PLUGIN_V3, False),
])
def test_which_plugin_name_each_version_reads(major, version, plugin, ignored):
    assert (shapes.ignored_plugin_reason(major, version, plugin) is not None) is ignored


V1, V2, V3 = shapes.CRI_PLUGIN_V1, shapes.CRI_PLUGIN_V2, shapes.CRI_PLUGIN_V3


# Measured with the real binaries, one runtime per plugin name in a file of each version
# (tests/integration/test_audit_checks_23.py loads these with 2.1.9 and 2.3.4).
@pytest.mark.parametrize("release, version, read", [
    ((2, 1), 1, {V3}),
    ((2, 1), 2, {V1, V2, V3}),
    ((2, 1), 3, {V1, V3}),  # plugins.cri of a version 3 file loads on 2.1
    ((2, 3), 1, {V1, V2, V3}),  # 2.3 migrates a version 1 file; 2.1 drops its runtimes
    ((2, 3), 2, {V1, V2, V3}),
    ((2, 3), 3, {V1, V2, V3}),  # 2.3 migrates a version 3 file with the old name too
    ((2, 3), 4, {V1, V3}),  # ... but not a version 4 one
    ((2, 4), 4, {V1, V3}),
    ((1, 7), 2, {V2}),
])
def test_plugins_read_by_release(release, version, read):
    assert set(shapes.plugins_read(release[0], version, release[1])) == read
    for plugin in {V1, V2, V3} - read:
        assert shapes.ignored_plugin_reason(release[0], version, plugin, release[1]) is not None
    for plugin in read:
        assert shapes.ignored_plugin_reason(release[0], version, plugin, release[1]) is None


def test_migration_replacement_by_release():
    assert shapes.replaced_by(2, 2, 1) == {V2: (V3,)}
    assert shapes.replaced_by(2, 3, 1) == {}
    assert shapes.replaced_by(2, 3, 3) == {V2: (V3,)}
    assert shapes.replaced_by(2, 1, 3) == {V1: (V2, V3), V2: (V3,)}
    assert shapes.replaced_by(2, 4, 3) == {}
    assert shapes.replaced_by(1, 2, 7) == {}
    assert "2.3+" in shapes.ignored_plugin_reason(2, 4, V2, 3)


# --- which plugin names disable CRI (cri_plugin_disabled reads it) ------------------------------

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
