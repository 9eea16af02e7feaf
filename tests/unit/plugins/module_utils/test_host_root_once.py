"""Issue 37: the host root is applied exactly once. One function (_host_paths.on_machine) turns a path read
from the node (its config, its imports, its units) into the path the module opens; property tests over host
roots and path forms (absolute, relative, already prefixed, globs) on it and on the code paths that read
(the ownership evidence: units, EnvironmentFile, os-release) and decide where the role writes (the drop-in
directory a generated main config imports)."""
import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _ownership as own
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation import ownership_gate

SMALL = settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
FILES = settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

_NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=8).filter(
    lambda s: s not in (".", ".."))
_GLOB = st.sampled_from(["*.toml", "*", "[0-9]*.toml", "?.conf", "zz-*.toml"])
# Host roots as they come: '/', a test node's directory, a trailing slash, a doubled slash.
ROOTS = st.one_of(
    st.just("/"),
    st.lists(_NAME, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts)),
    st.lists(_NAME, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts) + "/"),
    st.lists(_NAME, min_size=1, max_size=2).map(lambda parts: "//" + "//".join(parts)),
)
NODE_PATHS = st.lists(_NAME, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))


def norm_root(root):
    return host_paths.host_root(root)


def machine(root, node):
    root = norm_root(root)
    return node if root == "/" else (root + node).rstrip("/") or "/"


def under(root, path):
    """Whether a node path already reads as one under root (then it is taken as prefixed: the one ambiguity)."""
    root = norm_root(root)
    return root != "/" and (path == root or path.startswith(root + "/"))


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
@given(ROOTS, NODE_PATHS, st.lists(_NAME, min_size=1, max_size=3), st.sampled_from(["node", "machine", None]))
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

def _form(root, node_path, form):
    """node_path as a unit on the node may spell it."""
    return machine(root, node_path) if form == "prefixed" else node_path


@FILES
@given(st.lists(_NAME, min_size=1, max_size=2), st.sampled_from(["node", "prefixed"]),
       st.sampled_from(["node", "prefixed"]))
def test_units_their_environment_file_and_the_config_they_start_are_read_under_the_root_once(parts, env_form,
                                                                                             config_form):
    base = tempfile.mkdtemp(prefix="hr", dir="/tmp")
    try:
        root = os.path.join(base, *parts)
        config_node = "/etc/containerd/config.toml"
        files = {
            "/etc/os-release": 'ID=testos\nNAME="Test OS"\n',
            "/etc/default/containerd": "CONFIG=%s\n" % _form(root, config_node, config_form),
            config_node: "version = 3\n",
            "/etc/systemd/system/containerd.service": "[Service]\nEnvironmentFile=%s\n"
                                                      "ExecStart=/usr/bin/containerd --config ${CONFIG}\n"
                                                      % _form(root, "/etc/default/containerd", env_form),
        }
        for node_path, text in files.items():
            path = machine(root, node_path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                handle.write(text)
        config = machine(root, config_node)
        found = own.gather([config], root=root, mountinfo="")
        assert found["os_release"]["ID"] == "testos"
        [service] = found["services"]
        assert service["environment"].get("CONFIG") == _form(root, config_node, config_form), service
        [step] = service["commands"]
        assert step["config"] == config_node  # the node's path, whichever spelling the unit used
        assert found["files"][config]["node_path"] == config_node
    finally:
        shutil.rmtree(base, ignore_errors=True)


# --- the code path that writes: where the drop-ins go on a generated main config ------------------

@FILES
@given(st.lists(_NAME, min_size=1, max_size=2), st.sampled_from(["prefixed", "relative", "node"]))
def test_the_dropin_dir_a_generated_config_imports_is_prefixed_once(parts, form):
    base = tempfile.mkdtemp(prefix="hr", dir="/tmp")
    try:
        root = os.path.join(base, *parts)
        config_node, dir_node = "/var/lib/gen/etc/containerd/config.toml", "/var/lib/gen/etc/containerd/config.d"
        config = machine(root, config_node)
        os.makedirs(machine(root, dir_node))
        with open(config, "w") as handle:
            handle.write("# File generated by k3s. DO NOT EDIT.\nversion = 3\n")
        # The imports entry as the gather resolves it (a machine path: the file names the root, or a relative
        # entry against the file's dir), or as a node names it where the machine does not resolve it under root.
        resolved = {"prefixed": machine(root, dir_node), "relative": os.path.dirname(config) + "/config.d",
                    "node": dir_node}[form] + "/*.toml"
        gathered = {"config_path": config, "files": [{"path": config, "content": ""}],
                    "imports": [{"resolved": resolved, "declared_in": config}]}
        plan = {"writes": [{"path": config, "content": "x"}], "removes": []}
        found = {"ownership": own.gather(ownership_gate.evidence_paths(plan, gathered), root=root, mountinfo="")}
        verdict = ownership_gate.judge(plan, gathered, found, dropin_dir=os.path.dirname(config) + "/conf.d")
        assert verdict["refusals"] == [] and verdict["dropin_dir"] == machine(root, dir_node), verdict
        assert "the change goes to %s/ instead" % dir_node in verdict["notes"][0]
        # Once the drop-ins go there, a plan that still changes the generated file is refused.
        again = ownership_gate.judge(plan, gathered, found, dropin_dir=verdict["dropin_dir"])
        assert again["dropin_dir"] is None and "the change would be lost" in again["refusals"][0], again
    finally:
        shutil.rmtree(base, ignore_errors=True)


# --- the code path that writes the restart marker and the gather that reads it -----------------------

@FILES
@given(st.lists(_NAME, min_size=1, max_size=2), NODE_PATHS, st.sampled_from(["node", "prefixed"]))
def test_the_restart_marker_is_written_and_read_under_the_root_once(parts, state_dir, form):
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _restart_marker as restart_marker
    base = tempfile.mkdtemp(prefix="hr", dir="/tmp")
    try:
        root = os.path.join(base, *parts)
        assume(not under(root, state_dir))
        config = machine(root, "/etc/containerd/config.toml")
        params = {"host_root": root, "state_dir": _form(root, state_dir, form)}
        where = restart_marker.write(params, config, [machine(root, "/etc/containerd/conf.d/zz-gpurt-nvidia.toml")])
        assert where == machine(root, state_dir + "/restart-pending.json") and os.path.isfile(where)
        assert restart_marker.read(params, config)["path"] == where
        assert restart_marker.read({"host_root": root, "state_dir": state_dir}, config)["path"] == where
    finally:
        shutil.rmtree(base, ignore_errors=True)
