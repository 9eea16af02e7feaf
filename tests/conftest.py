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
def containerd_go():
    """{version: path} of the containerd releases built from the Go module proxy (2.2, 2.3, 2.4)."""
    from tests.lib import containerd_bins
    return dict((v, containerd_bins.binary(v)) for v in containerd_bins.GO_VERSIONS)


@pytest.fixture(scope="session")
def containerd_23(containerd_go):
    """The real containerd 2.3 (config version 4)."""
    return containerd_go["2.3"]


@pytest.fixture(scope="session")
def crictl():
    """The real crictl built by tools/build-go-binaries."""
    from tests.lib import containerd_bins
    return containerd_bins.crictl_binary()


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory):
    """The real control plane (tests/lib/real_cluster.py), one for all xdist workers of the run.
    GPURT_DEV_CLUSTER=DIR uses a cluster that `tools/dev-cluster up DIR` started instead (left running)."""
    from tests.lib import real_cluster
    existing = os.environ.get("GPURT_DEV_CLUSTER")
    if existing:
        cluster = real_cluster.Cluster(existing)
        if not cluster.running():
            pytest.fail("GPURT_DEV_CLUSTER=%s: no cluster runs there (tools/dev-cluster up %s)" % (existing, existing))
        yield cluster
        return
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # shared by the workers of this run
    with real_cluster.shared(str(root / "real-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def _private_control_plane(tmp_path_factory):
    """The control plane private_cluster lends, started once per xdist worker, and what it held when it was
    new (its baseline)."""
    from tests.lib import real_cluster
    cluster = real_cluster.Cluster(tmp_path_factory.mktemp("private-cluster"))
    cluster.up()
    try:
        yield cluster, cluster.objects()
    finally:
        cluster.down()


@pytest.fixture(scope="module")
def private_cluster(_private_control_plane):
    """A real control plane for one test module alone: for tests that judge every RuntimeClass and
    Node of the cluster, which the shared one (real_cluster) cannot promise. One per worker, emptied before
    each module: every object the module before made (Nodes, RuntimeClasses, namespaces, RBAC, policies...)
    is deleted, so the module sees the cluster as it was new (kube-apiserver restarted when it served a policy's
    parameters: Cluster.reset)."""
    cluster, baseline = _private_control_plane
    cluster.reset(baseline)
    yield cluster
