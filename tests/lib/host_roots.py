"""Host roots and node paths for the property tests of "the host root is applied exactly once" (issue 37):
hypothesis strategies, and the machine path a node path should become under a root (test_host_paths.py,
test_ownership.py, test_restart_marker.py, test_remediation_ownership_gate.py)."""
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths

FILES = settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=8).filter(
    lambda s: s not in (".", ".."))


# Host roots as they come: '/', a test node's directory, a trailing slash, a doubled slash.
ROOTS = st.one_of(
    st.just("/"),
    st.lists(NAME, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts)),
    st.lists(NAME, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts) + "/"),
    st.lists(NAME, min_size=1, max_size=2).map(lambda parts: "//" + "//".join(parts)),
)


NODE_PATHS = st.lists(NAME, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))


def norm_root(root):
    return host_paths.host_root(root)


def machine(root, node):
    root = norm_root(root)
    return node if root == "/" else (root + node).rstrip("/") or "/"


def under(root, path):
    """Whether a node path already reads as one under root (then it is taken as prefixed: the one ambiguity)."""
    root = norm_root(root)
    return root != "/" and (path == root or path.startswith(root + "/"))


def spelled(root, node_path, form):
    """node_path as a unit on the node may spell it: "prefixed" (under the root) or "node" (as it is)."""
    return machine(root, node_path) if form == "prefixed" else node_path
