"""Picking the containerd binary a node group's bootstrap is loaded with."""
import os

import pytest

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _bootstrap as bootstrap


def fake_containerd(directory, version_line, name="containerd"):
    """A stand-in binary that prints a real containerd's --version line."""
    os.makedirs(str(directory), exist_ok=True)
    path = os.path.join(str(directory), name)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\necho '%s'\n" % version_line)
    os.chmod(path, 0o755)
    return path


V17 = "containerd github.com/containerd/containerd 1.7.24~ds1 1.7.24~ds1-6+deb13u1"
V21 = "containerd github.com/containerd/containerd/v2 2.1.9+unknown"
V23 = "containerd github.com/containerd/containerd/v2 v2.3.4 2e0b2a3a0b2c3b3b5c4d7d8e8f9a0b1c2d3e4f5a"


@pytest.mark.parametrize("value, release", [
    (2, (2, None)), ("1", (1, None)), ("2.3", (2, 3)), ("v2.3.4", (2, 3)), ("1.7", (1, 7)), (" 2 ", (2, None)),
])
def test_parse_release(value, release):
    assert bootstrap.parse_release(value) == release


@pytest.mark.parametrize("value", ["3", "two", "", "2.x", "0.9"])
def test_parse_release_refuses_what_is_not_a_containerd_release(value):
    with pytest.raises(bootstrap.SandboxError) as excinfo:
        bootstrap.parse_release(value)
    assert "must be 1 or 2" in str(excinfo.value)


def test_minor_entry_wins_then_major_entry(tmp_path):
    bins = {"1": fake_containerd(tmp_path / "17", V17), "2": fake_containerd(tmp_path / "21", V21),
            "2.3": fake_containerd(tmp_path / "23", V23)}
    picked = bootstrap.pick_containerd((2, 3), bins)
    assert (picked["path"], picked["version"], picked["source"]) == (bins["2.3"], "2.3.4",
                                                                     "gpurt_bootstrap_containerd_bins['2.3']")
    assert bootstrap.pick_containerd((2, None), bins)["version"] == "2.1.9+unknown"
    assert bootstrap.pick_containerd((2, 1), bins)["path"] == bins["2"]
    assert bootstrap.pick_containerd((1, None), {1: bins["1"]})["version"] == "1.7.24~ds1"


def test_path_is_the_fallback(tmp_path, monkeypatch):
    path = fake_containerd(tmp_path / "bin", V21)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    picked = bootstrap.pick_containerd((2, None), {"1": "/nonexistent/containerd"})
    assert (picked["path"], picked["source"]) == (path, "PATH")


def test_no_binary_names_the_variable_and_not_a_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(bootstrap.SandboxError) as excinfo:
        bootstrap.pick_containerd((1, None), {})
    message = str(excinfo.value)
    assert message.startswith("no containerd 1 binary to load the bootstrap with (PATH: containerd binary "
                              "'containerd' not found in PATH")
    assert "set gpurt_bootstrap_containerd_bins" in message and "make" not in message


def test_a_missing_entry_path_is_a_clear_error(tmp_path):
    with pytest.raises(bootstrap.SandboxError) as excinfo:
        bootstrap.pick_containerd((2, None), {"2": str(tmp_path / "nope")})
    assert "gpurt_bootstrap_containerd_bins['2']: containerd binary not found" in str(excinfo.value)


@pytest.mark.parametrize("release, bins, message", [
    ((2, None), {"2": V17}, "the node group runs containerd 2, but gpurt_bootstrap_containerd_bins['2'] is containerd 1.7.24"),
    ((2, 3), {"2": V21}, "the node group runs containerd 2.3, but gpurt_bootstrap_containerd_bins['2'] is containerd 2.1.9"),
    ((1, 6), {"1": V17}, "set gpurt_bootstrap_containerd_bins['1.6'] to a containerd 1.6 binary"),
])
def test_a_binary_of_another_release_is_refused(tmp_path, release, bins, message):
    paths = dict((key, fake_containerd(tmp_path / key, line)) for key, line in bins.items())
    with pytest.raises(bootstrap.SandboxError) as excinfo:
        bootstrap.pick_containerd(release, paths)
    assert message in str(excinfo.value)


def test_a_binary_that_is_not_containerd(tmp_path):
    path = fake_containerd(tmp_path, "runc version 1.1.12")
    with pytest.raises(bootstrap.SandboxError) as excinfo:
        bootstrap.pick_containerd((2, None), {"2": path})
    assert "is not containerd: its --version says 'runc version 1.1.12'" in str(excinfo.value)


def test_bad_keys_are_refused(tmp_path):
    with pytest.raises(bootstrap.SandboxError):
        bootstrap.pick_containerd((2, None), {"latest": "/usr/bin/containerd"})


def test_sandbox_keeps_bytes_that_are_not_utf8(tmp_path):
    content = b"# caf\xe9\nversion = 2\n".decode("utf-8", "surrogateescape")
    bootstrap.write_sandbox([{"path": "/etc/containerd/config.toml", "content": content}], str(tmp_path))
    with open(str(tmp_path / "etc" / "containerd" / "config.toml"), "rb") as handle:
        assert handle.read() == b"# caf\xe9\nversion = 2\n"
