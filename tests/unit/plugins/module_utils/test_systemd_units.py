"""module_utils/_systemd_units: the environment a unit gives its service, and the PATH it runs with
(systemd.exec(5): EnvironmentFile= overrides Environment=; without a PATH of the unit's, systemd's fixed
default, with /sbin:/bin appended on an unmerged /usr)."""
import os

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _systemd_units as units

UNIT = ("[Service]\nEnvironment=PATH=/from/unit\nEnvironmentFile=-/etc/default/containerd\n"
        "ExecStart=/usr/bin/containerd\n")


def test_an_environment_file_overrides_environment_and_says_where_it_set_a_name():
    merged = units.merge(units.parse_unit(UNIT, "/usr/lib/systemd/system/containerd.service"))
    origins = {}
    env = units.environment(merged, {"/etc/default/containerd": "PATH=/from/file:/usr/bin\n"}.get, origins)
    assert env["PATH"] == "/from/file:/usr/bin"
    assert origins["PATH"] == "EnvironmentFile=/etc/default/containerd in /usr/lib/systemd/system/containerd.service"
    # a missing '-' file: Environment='s value stays
    origins = {}
    env = units.environment(merged, {}.get, origins)
    assert env["PATH"] == "/from/unit"
    assert origins["PATH"] == "Environment= in /usr/lib/systemd/system/containerd.service"


def test_service_path():
    assert units.service_path({"PATH": "/a:/b"}, {"PATH": "Environment= in /x.conf"}, True) == (
        ["/a", "/b"], "PATH from Environment= in /x.conf")
    assert units.service_path({}, {}, False) == (
        ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin"], "systemd's default PATH for services")
    assert units.service_path({}, {}, True)[0] == [
        "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]


def test_read_unit_under_root_names_sources_as_the_node_does(tmp_path):
    root = str(tmp_path)
    os.makedirs(os.path.join(root, "usr/lib/systemd/system/containerd.service.d"))
    with open(os.path.join(root, "usr/lib/systemd/system/containerd.service"), "w") as handle:
        handle.write(UNIT)
    with open(os.path.join(root, "usr/lib/systemd/system/containerd.service.d/x.conf"), "w") as handle:
        handle.write("[Service]\nEnvironment=A=1\n")

    def read(path):
        with open(path) as handle:
            return handle.read(), None

    entries, sources, errors = units.read_unit_under_root(root, "containerd.service", read)
    assert sources == ["/usr/lib/systemd/system/containerd.service",
                       "/usr/lib/systemd/system/containerd.service.d/x.conf"]
    assert errors == [] and ("Environment", "A=1", sources[1]) in entries
    assert units.read_unit_under_root(root, "absent.service", read) == ([], [], [])


def test_unmerged_usr_under_root(tmp_path):
    root = str(tmp_path)
    assert units.unmerged_usr_under_root(root) is False
    os.symlink("usr/bin", os.path.join(root, "bin"))
    assert units.unmerged_usr_under_root(root) is False
    os.unlink(os.path.join(root, "bin"))
    os.makedirs(os.path.join(root, "bin"))
    assert units.unmerged_usr_under_root(root) is True
