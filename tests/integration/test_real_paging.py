"""Real paging: runtimeclass_info and node_info list more than 1,000 RuntimeClasses and Nodes from
the real kube-apiserver (etcd-backed `limit`/`continue`), on the shared real cluster. The objects of
this module select and carry the label gpurt.test/paging, and its Nodes are unschedulable, so no
other test's audit or pod meets them."""
import math
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.integration import test_cluster_modules
from tests.lib.cluster_objects import Api

pytestmark = pytest.mark.integration
adhoc = test_cluster_modules.adhoc
ansible_env = test_cluster_modules.ansible_env  # the fixture, shared with test_cluster_modules.py
COUNT = 1050
LABEL = {"gpurt.test/paging": "yes"}


@pytest.fixture(scope="module")
def many(real_cluster):
    api = Api(real_cluster.kubeconfig)

    def make(index):
        api.runtimeclass("paging-%04d" % index, "paging-%d" % index, selector=LABEL)
        try:
            api.core.create_node({"metadata": {"name": "paging-%04d" % index, "labels": LABEL},
                                  "spec": {"unschedulable": True}})
        except Exception as exc:  # exists: made by the other xdist worker
            if getattr(exc, "status", None) != 409:
                raise

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(make, range(COUNT)))
    totals = {"runtimeclasses": len(api.node_k8s.list_runtime_class().items),
              "nodes": len(api.core.list_node().items)}
    yield {"cluster": real_cluster, "totals": totals}
    api.close()


@pytest.mark.parametrize("page_size", [100, 500])
def test_runtimeclass_info_pages_through_the_real_list(many, ansible_env, page_size):
    rc, result, output = adhoc(ansible_env, "runtimeclass_info",
                               "kubeconfig=%s page_size=%d" % (many["cluster"].kubeconfig, page_size))
    assert rc == 0, output[-3000:]
    names = [item["name"] for item in result["runtimeclasses"]]
    assert len(names) == len(set(names)) >= many["totals"]["runtimeclasses"]
    assert [n for n in names if n.startswith("paging-")] == ["paging-%04d" % i for i in range(COUNT)]
    # every page but the last full: the real continue tokens walked the whole list once
    assert result["api_list_calls"] == 1
    assert result["api_requests"] == math.ceil(len(names) / float(page_size))
    assert result["source"] == "cluster" and result["server"] == many["cluster"].server


def test_node_info_pages_through_the_real_list_with_a_label_selector(many, ansible_env):
    rc, result, output = adhoc(ansible_env, "node_info", "kubeconfig=%s page_size=200 label_selector=gpurt.test/paging=yes"
                               % many["cluster"].kubeconfig)
    assert rc == 0, output[-3000:]
    assert [n["name"] for n in result["nodes"]] == ["paging-%04d" % i for i in range(COUNT)]
    assert result["api_requests"] == math.ceil(COUNT / 200.0)
