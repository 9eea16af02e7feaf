import json
import os

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths
from tests.lib.host_roots import NAME, NODE_PATHS, ROOTS, machine, norm_root, under


def touch(path, text=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
    return path


@pytest.fixture
def tree(tmp_path):
    root = str(tmp_path)
    for rel in ("conf.d/b.toml", "conf.d/a.toml", "conf.d/.hidden.toml", "conf.d/c.conf", "conf.d/sub/d.toml",
                "conf.d/a?.toml-not", "other/x.toml", "other/y.toml", "lit[1].toml"):
        touch(os.path.join(root, rel))
    os.makedirs(os.path.join(root, "conf.d", "dir.toml"))
    return root


class TestGoGlob(object):
    def test_star_sorted_dotfiles_match(self, tree):
        got = host_paths.go_glob(os.path.join(tree, "conf.d", "*.toml"))
        # Go's filepath.Glob: sorted, dot-files match '*', directories match too
        assert got == [os.path.join(tree, "conf.d", n) for n in (".hidden.toml", "a.toml", "b.toml", "dir.toml")]

    def test_star_does_not_cross_slash(self, tree):
        got = host_paths.go_glob(os.path.join(tree, "*.toml"))
        assert got == [os.path.join(tree, "lit[1].toml")]
        assert os.path.join(tree, "conf.d", "sub", "d.toml") not in host_paths.go_glob(os.path.join(tree, "conf.d", "*"))

    def test_magic_in_directory(self, tree):
        got = host_paths.go_glob(os.path.join(tree, "*", "x.toml"))
        assert got == [os.path.join(tree, "other", "x.toml")]
        got = host_paths.go_glob(os.path.join(tree, "o*", "*.toml"))
        assert got == [os.path.join(tree, "other", "x.toml"), os.path.join(tree, "other", "y.toml")]

    def test_question_mark_and_classes(self, tree):
        assert host_paths.go_glob(os.path.join(tree, "other", "?.toml")) == [
            os.path.join(tree, "other", "x.toml"), os.path.join(tree, "other", "y.toml")]
        assert host_paths.go_glob(os.path.join(tree, "other", "[^x].toml")) == [os.path.join(tree, "other", "y.toml")]
        assert host_paths.go_glob(os.path.join(tree, "other", "[x].toml")) == [os.path.join(tree, "other", "x.toml")]

    def test_no_match_and_missing_dir(self, tree):
        assert host_paths.go_glob(os.path.join(tree, "conf.d", "*.yaml")) == []
        assert host_paths.go_glob(os.path.join(tree, "nope", "*.toml")) == []

    def test_literal_pattern(self, tree):
        path = os.path.join(tree, "other", "x.toml")
        assert host_paths.go_glob(path) == [path]
        assert host_paths.go_glob(os.path.join(tree, "other", "z.toml")) == []

    def test_relative_pattern(self, tree, monkeypatch):
        monkeypatch.chdir(os.path.join(tree, "other"))
        assert host_paths.go_glob("*.toml") == ["x.toml", "y.toml"]


class TestImportMatches(object):
    def test_star_entry_is_globbed_files_only(self, tree):
        config = os.path.join(tree, "config.toml")
        resolved, matches = host_paths.import_matches(os.path.join(tree, "conf.d", "*.toml"), config)
        assert resolved == os.path.join(tree, "conf.d", "*.toml")
        # the dir.toml directory is no file containerd could merge
        assert matches == [os.path.join(tree, "conf.d", n) for n in (".hidden.toml", "a.toml", "b.toml")]

    def test_entry_without_star_is_literal(self, tree):
        config = os.path.join(tree, "config.toml")
        # containerd globs only entries with '*': '?' and '[' are literal characters then
        resolved, matches = host_paths.import_matches(os.path.join(tree, "other", "?.toml"), config)
        assert (resolved, matches) == (os.path.join(tree, "other", "?.toml"), [])
        literal = os.path.join(tree, "lit[1].toml")
        assert host_paths.import_matches(literal, config) == (literal, [literal])
        missing = os.path.join(tree, "other", "z.toml")
        assert host_paths.import_matches(missing, config) == (missing, [])

    def test_literal_directory_is_no_match(self, tree):
        path = os.path.join(tree, "conf.d", "dir.toml")
        assert host_paths.import_matches(path, os.path.join(tree, "config.toml")) == (path, [])

    def test_relative_entry_resolves_against_declaring_file(self, tree):
        config = os.path.join(tree, "config.toml")
        resolved, matches = host_paths.import_matches("other/*.toml", config)
        assert resolved == os.path.join(tree, "other", "*.toml")
        assert matches == [os.path.join(tree, "other", "x.toml"), os.path.join(tree, "other", "y.toml")]
        # a drop-in's own relative imports resolve against the drop-in's dir
        resolved, matches = host_paths.import_matches("../other/x.toml", os.path.join(tree, "conf.d", "a.toml"))
        assert resolved == os.path.join(tree, "conf.d", "..", "other", "x.toml")
        assert matches == [resolved]

    def test_relative_entry_against_base_dir(self, tree):
        # containerd 1.6 resolves relative imports against its working directory (measured)
        config = os.path.join(tree, "conf.d", "a.toml")
        resolved, matches = host_paths.import_matches("other/*.toml", config, base_dir=tree)
        assert resolved == os.path.join(tree, "other", "*.toml")
        assert len(matches) == 2
        assert host_paths.resolve_import("etc/x.toml", "/etc/containerd/config.toml", "/") == "/etc/x.toml"

    def test_absolute_entry_ignores_base(self, tree):
        assert host_paths.resolve_import("/abs/*.toml", "/etc/containerd/config.toml", "/base") == "/abs/*.toml"
        assert host_paths.resolve_import("rel.toml", "config.toml") == os.path.join(".", "rel.toml")


class TestFiles(object):
    def test_read_text(self, tmp_path):
        path = touch(str(tmp_path / "a.toml"), "version = 3\n")
        assert host_paths.read_text(path, 100) == ("version = 3\n", None)
        text, error = host_paths.read_text(path, 4)
        assert text is None and "12 bytes, more than the 4 read" in error
        text, error = host_paths.read_text(str(tmp_path / "missing"), 100)
        assert text is None and error.startswith("cannot read:")
        with open(str(tmp_path / "bin"), "wb") as handle:
            handle.write(b"ok\xff")
        text, error = host_paths.read_text(str(tmp_path / "bin"), 100)
        assert text is None and "offset 2" in error

    def test_fifo_is_refused_without_blocking(self, tmp_path):
        # a kubelet config that is a FIFO used to hang the gather forever
        fifo = str(tmp_path / "config.yaml")
        os.mkfifo(fifo)
        assert host_paths.read_text(fifo, 100, timeout=5) == (
            None, "%s is a FIFO, not a regular file" % fifo)

    def test_dev_zero_is_refused_not_read(self, tmp_path):
        # /dev/zero reports size 0 and never ends: it used to raise MemoryError
        assert host_paths.read_bytes("/dev/zero", 100) == (
            None, "/dev/zero is a character device, not a regular file")
        link = str(tmp_path / "config.yaml")
        os.symlink("/dev/zero", link)
        assert host_paths.read_text(link, 100)[1] == "%s is a character device, not a regular file" % link

    def test_directory_and_missing(self, tmp_path):
        assert host_paths.read_bytes(str(tmp_path), 100)[1] == "%s is a directory, not a regular file" % tmp_path
        assert host_paths.read_bytes(str(tmp_path / "nope"), 100)[1] == "cannot read: No such file or directory"

    def test_read_is_bounded_even_when_the_size_lies(self, tmp_path, monkeypatch):
        path = touch(str(tmp_path / "grows.toml"), "x" * 1000)
        real_fstat = os.fstat

        class Small(object):  # a file that grows after fstat: the read still stops at max + 1
            def __init__(self, st):
                self.st_mode, self.st_size = st.st_mode, 10
        monkeypatch.setattr(host_paths.os, "fstat", lambda fd: Small(real_fstat(fd)))
        assert host_paths.read_bytes(path, 100) == (None, "file is more than the 100 bytes read")

    def test_deadline(self, tmp_path, monkeypatch):
        path = touch(str(tmp_path / "slow.toml"), "x" * 10)
        clock = iter([0.0, 100.0])
        monkeypatch.setattr(host_paths.time, "time", lambda: next(clock))
        assert host_paths.read_bytes(path, 100, timeout=5) == (None, "reading took longer than 5 s")

    def test_list_files(self, tree):
        assert host_paths.list_files(os.path.join(tree, "other")) == [
            os.path.join(tree, "other", "x.toml"), os.path.join(tree, "other", "y.toml")]
        got = host_paths.list_files(os.path.join(tree, "conf.d"))
        assert os.path.join(tree, "conf.d", "dir.toml") not in got and os.path.join(tree, "conf.d", "sub") not in got
        assert got == sorted(got)
        assert host_paths.list_files(os.path.join(tree, "nope")) == []

    def test_path_facts(self, tmp_path):
        exe = touch(str(tmp_path / "exe"), "#!/bin/sh\n")
        os.chmod(exe, 0o755)
        plain = touch(str(tmp_path / "plain"))
        os.chmod(plain, 0o644)
        assert host_paths.path_facts(exe)["executable"] is True
        facts = host_paths.path_facts(plain)
        assert (facts["exists"], facts["is_file"], facts["executable"]) == (True, True, False)
        facts = host_paths.path_facts(str(tmp_path))
        assert (facts["exists"], facts["is_file"], facts["executable"]) == (True, False, False)
        facts = host_paths.path_facts(str(tmp_path / "nope"))
        assert (facts["exists"], facts["executable"]) == (False, False)

    def test_path_facts_resolves_bare_names_in_path(self, tmp_path, monkeypatch):
        exe = touch(str(tmp_path / "my-runtime"), "#!/bin/sh\n")
        os.chmod(exe, 0o755)
        monkeypatch.setenv("PATH", str(tmp_path))
        facts = host_paths.path_facts("my-runtime")
        assert facts["resolved"] == exe and facts["executable"] is True
        assert host_paths.path_facts("not-there-runtime")["exists"] is False

    def test_path_facts_looks_next_to_containerd_after_path(self, tmp_path, monkeypatch):
        # containerd finds a shim in PATH or next to its own binary
        shim = touch(str(tmp_path / "bin" / "containerd-shim-kata-v2"), "#!/bin/sh\n")
        os.chmod(shim, 0o755)
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
        facts = host_paths.path_facts("containerd-shim-kata-v2", [str(tmp_path / "bin")])
        assert facts["resolved"] == shim and facts["executable"] is True
        assert facts["searched"] == [str(tmp_path / "empty"), str(tmp_path / "bin")]
        assert host_paths.path_facts("containerd-shim-kata-v2")["executable"] is False

    def test_path_facts_searches_the_given_path_not_the_modules(self, tmp_path, monkeypatch):
        # containerd's PATH, not the module's: a binary only in the module's PATH is not found
        mine = touch(str(tmp_path / "mine" / "nvidia-oci"), "#!/bin/sh\n")
        os.chmod(mine, 0o755)
        monkeypatch.setenv("PATH", str(tmp_path / "mine"))
        facts = host_paths.path_facts("nvidia-oci", search=[str(tmp_path / "usr/bin"), "", "rel/bin"])
        assert (facts["exists"], facts["is_file"], facts["executable"]) == (False, False, False)
        assert facts["resolved"] == "nvidia-oci"
        # empty and relative entries are never searched (Go's LookPath refuses what it finds there)
        assert facts["searched"] == [str(tmp_path / "usr/bin")]
        theirs = touch(str(tmp_path / "usr/bin" / "nvidia-oci"), "#!/bin/sh\n")
        os.chmod(theirs, 0o755)
        facts = host_paths.path_facts("nvidia-oci", search=[str(tmp_path / "usr/bin")])
        assert facts["resolved"] == theirs and facts["executable"] is True

    def test_path_facts_goes_past_a_plain_file_and_names_it_when_nothing_runs(self, tmp_path):
        first = touch(str(tmp_path / "a" / "rt"), "x")
        os.chmod(first, 0o644)
        facts = host_paths.path_facts("rt", search=[str(tmp_path / "a"), str(tmp_path / "b")])
        assert facts["resolved"] == first
        assert (facts["exists"], facts["is_file"], facts["executable"]) == (True, True, False)
        second = touch(str(tmp_path / "b" / "rt"), "#!/bin/sh\n")
        os.chmod(second, 0o755)
        facts = host_paths.path_facts("rt", search=[str(tmp_path / "a"), str(tmp_path / "b")])
        assert facts["resolved"] == second and facts["executable"] is True

    def test_a_bare_name_is_never_looked_up_in_the_working_directory(self, tmp_path, monkeypatch):
        touch(str(tmp_path / "here-only"), "x")
        monkeypatch.chdir(tmp_path)
        assert host_paths.path_facts("here-only", search=[str(tmp_path / "nowhere")])["exists"] is False


YAML_SPEC = """\
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
  - name: "0"
    containerEdits:
      deviceNodes:
        - path: /dev/nvidia0
        - path: /dev/nvidia-caps/nvidia-cap1
          hostPath: "/dev/nvidia-caps/nvidia-cap1"
containerEdits:
  env:
    - NVIDIA_VISIBLE_DEVICES=void
  deviceNodes:
    - path: /dev/nvidiactl
  hooks:
    - hookName: createContainer
      path: /usr/bin/nvidia-cdi-hook
      args: [nvidia-cdi-hook, update-ldcache]
  mounts:
    - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05  # the driver library
      containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05
      options: [ro, nosuid, nodev, bind]
    - hostPath: '/run/nvidia-persistenced/socket'
      containerPath: /run/nvidia-persistenced/socket
    - hostPath: relative/ignored
      containerPath: /x
"""


class TestCdiSpecs(object):
    EXPECTED = ["/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap1", "/dev/nvidiactl", "/usr/bin/nvidia-cdi-hook",
                "/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", "/run/nvidia-persistenced/socket"]

    def test_yaml_spec(self):
        assert host_paths.cdi_spec_host_paths(YAML_SPEC, "/etc/cdi/nvidia.yaml") == self.EXPECTED

    def test_json_spec(self):
        import yaml
        text = json.dumps(yaml.safe_load(YAML_SPEC))
        assert host_paths.cdi_spec_host_paths(text, "/etc/cdi/nvidia.json") == self.EXPECTED

    def test_container_paths_are_not_host_paths(self):
        got = host_paths.cdi_spec_host_paths(YAML_SPEC, "/etc/cdi/nvidia.yml")
        assert "/x" not in got and "relative/ignored" not in got

    def test_bad_json_raises_value_error(self):
        with pytest.raises(ValueError):
            host_paths.cdi_spec_host_paths("{not json", "/etc/cdi/x.json")

    def test_empty_spec(self):
        assert host_paths.cdi_spec_host_paths("cdiVersion: 0.5.0\n", "/etc/cdi/x.yaml") == []
        assert host_paths.cdi_spec_host_paths("{}", "/etc/cdi/x.json") == []


@pytest.mark.parametrize("pattern, path, matches", [
    ("/etc/containerd/conf.d/*.toml", "/etc/containerd/conf.d/zz-gpurt-nvidia.toml", True),
    ("/etc/containerd/conf.d/*.toml", "/etc/containerd/conf.d/sub/x.toml", False),  # '*' never crosses '/'
    ("/etc/containerd/conf.d/*", "/etc/containerd/conf.d/.hidden", True),  # Go matches dot-files
    ("/etc/containerd/*/*.toml", "/etc/containerd/conf.d/a.toml", True),
    ("/etc/containerd/conf.d/a?.toml", "/etc/containerd/conf.d/ab.toml", False),  # no '*': a literal path
    ("/etc/containerd/conf.d/a.toml", "/etc/containerd/conf.d/a.toml", True),
    ("/etc/containerd/conf.d/[^a]*.toml", "/etc/containerd/conf.d/b.toml", True),
    ("/etc/containerd/conf.d/[^a]*.toml", "/etc/containerd/conf.d/a.toml", False),
])
def test_glob_matches_path_reads_entries_as_containerd_does(pattern, path, matches):
    assert host_paths.glob_matches_path(pattern, path) is matches


# --- the host root is applied exactly once (issue 37): on_machine turns a path read from the node (its config,
# its imports, its units) into the path the module opens; properties over host roots and path forms (absolute,
# relative, already prefixed, globs). The code paths that read and write under the root: test_ownership.py,
# test_restart_marker.py, test_remediation_ownership_gate.py.

SMALL = settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

_GLOB = st.sampled_from(["*.toml", "*", "[0-9]*.toml", "?.conf", "zz-*.toml"])


@pytest.mark.parametrize("root", ["relative/root", "/srv/node*", "/srv/n[1]", "/srv/n?"])
def test_a_root_that_is_not_absolute_or_holds_glob_characters_is_refused_clearly(root):
    with pytest.raises(ValueError, match="host_root must be an absolute path without glob characters"):
        host_paths.on_machine(root, "/etc/containerd/config.toml")


@SMALL
@given(ROOTS, NODE_PATHS)
@example("/srv/node1", "/srv/node1/etc/containerd/config.toml")  # the path names the root already
@example("/srv/node1", "/srv/node10/etc")  # a sibling of the root is not under it
def test_an_absolute_node_path_is_prefixed_once_and_the_result_is_a_fixed_point(root, node):
    got = host_paths.on_machine(root, node)
    r = norm_root(root)
    if r != "/" and (node == r or node.startswith(r + "/")):
        assert got == node  # already prefixed: as it is
    else:
        assert got == machine(root, node)
    assert host_paths.on_machine(root, got) == got
    if not under(root, host_paths.on_node(root, got)):  # a node path that reads as under the root is the ambiguity
        assert host_paths.on_machine(root, host_paths.on_node(root, got)) == got
    if r != "/":
        assert got.startswith(r + "/") or got == r
        assert not got.startswith(r + r + "/") or node.startswith(r + r + "/")


@SMALL
@given(ROOTS, NODE_PATHS)
def test_an_already_prefixed_path_stays_as_it_is(root, node):
    assume(not under(root, node))
    prefixed = machine(root, node)
    assert host_paths.on_machine(root, prefixed) == prefixed
    assert host_paths.on_node(root, prefixed) == node


@SMALL
@given(ROOTS, NODE_PATHS, st.lists(NAME, min_size=1, max_size=3), st.sampled_from(["node", "machine", None]))
def test_a_relative_path_is_taken_against_its_base_then_prefixed_once(root, base, rel_parts, base_form):
    rel = "/".join(rel_parts)
    assume(base_form != "node" or not under(root, base))
    assume(under(root, base) or not under(root, os.path.normpath(os.path.join(base if base_form else "/", rel))))
    if base_form == "machine":
        got = host_paths.on_machine(root, rel, machine(root, base))
    else:
        got = host_paths.on_machine(root, rel, base if base_form == "node" else None)
    expected_node = os.path.normpath(os.path.join(base if base_form else "/", rel))
    assert got == host_paths.on_machine(root, expected_node)
    assert host_paths.on_machine(root, got) == got


@SMALL
@given(ROOTS, NODE_PATHS, _GLOB, st.booleans())
def test_a_glob_keeps_its_pattern_and_gets_the_root_once(root, directory, pattern, prefixed):
    assume(not under(root, directory))
    glob = (machine(root, directory) if prefixed else directory) + "/" + pattern
    got = host_paths.on_machine(root, glob)
    assert got == machine(root, directory) + "/" + pattern
    assert host_paths.on_machine(root, got) == got
    assert host_paths.on_node(root, got) == directory + "/" + pattern


@SMALL
@given(ROOTS, st.sampled_from(["/etc/../../etc/x", "/../etc/x", "/etc/./x", "//etc//x"]))
def test_dot_dot_never_leaves_the_root(root, node):
    got = host_paths.on_machine(root, node)
    assert got == machine(root, "/etc/x")


# --- the code paths that read: the ownership evidence under the root -----------------------------


# --- the code path that writes: where the drop-ins go on a generated main config ------------------


# --- the code path that writes the restart marker and the gather that reads it -----------------------
