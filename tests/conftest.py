"""Shared test setup: make the collection importable as ansible_collections.gpurt.runtime_gate."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(REPO, ".collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "gpurt", "runtime_gate")

if not os.path.exists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink(os.path.relpath(REPO, os.path.dirname(LINK)), LINK)
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)
if REPO not in sys.path:
    sys.path.insert(0, REPO)

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def containerd():
    """{version: path} of the real containerd binaries (1.6, 1.7, 2.1)."""
    from tests.lib import containerd_bins
    return containerd_bins.ensure_binaries()


@pytest.fixture
def make_node(tmp_path, containerd):
    """make_node(name, version) -> tests.lib.nodes.Node rooted under tmp_path/nodes."""
    from tests.lib.nodes import Node

    def factory(name, version="2.1"):
        return Node(tmp_path / "nodes", name, version)
    return factory


@pytest.fixture(scope="session")
def containerd_23():
    """The real containerd 2.3.4 (config version 4) from ../shared; skips, saying why, without it."""
    from tests.lib import containerd_bins
    path = containerd_bins.shared_binary("2.3")
    if path is None:
        pytest.skip(containerd_bins.SKIP_SHARED)
    return path


@pytest.fixture(scope="session")
def crictl():
    """The real crictl 1.36.0 from ../shared; skips, saying why, without it."""
    from tests.lib import containerd_bins
    path = containerd_bins.crictl_binary()
    if path is None:
        pytest.skip(containerd_bins.SKIP_CRICTL)
    return path
