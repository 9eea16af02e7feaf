"""playbooks/cluster_audit.yml against the loopback stand-in apiserver: Nodes that do and do
not report status.runtimeHandlers."""
import json
import os

import pytest

from tests.lib import ansible_run
from tests.lib.connect_proxy import ConnectProxy
from tests.lib.fake_apiserver import FakeApiServer, write_kubeconfig

pytestmark = pytest.mark.integration
PLAYBOOK = os.path.join(ansible_run.REPO, "playbooks", "cluster_audit.yml")
TOKEN = "cluster-audit-token-9f8e"


def runtimeclass(name, handler, selector=None, overhead=None):
    obj = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": handler}
    if selector:
        obj["scheduling"] = {"nodeSelector": selector}
    if overhead:
        obj["overhead"] = {"podFixed": overhead}
    return obj


def node(name, labels, handlers=None, cpu="8"):
    status = {"allocatable": {"cpu": cpu, "memory": "32Gi"},
              "nodeInfo": {"kubeletVersion": "v1.33.1", "containerRuntimeVersion": "containerd://2.1.9"}}
    if handlers is not None:
        status["runtimeHandlers"] = [{"name": h, "features": {"recursiveReadOnlyMounts": True}} for h in [""] + handlers]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "status": status}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    runtimeclasses = [
        runtimeclass("nvidia", "nvidia", {"pool": "gpu"}),
        runtimeclass("nvidia-cdi", "nvidia-cdi", {"pool": "gpu"}),
        runtimeclass("nvidia-legacy", "nvida", {"pool": "legacy"}),
        runtimeclass("kata", "kata", {"pool": "small"}, overhead={"cpu": "250m"}),
    ]
    nodes = [
        node("gpu-a", {"pool": "gpu"}, ["nvidia", "nvidia-cdi", "runc"]),
        node("gpu-b", {"pool": "gpu"}, ["nvidia", "runc"]),
        node("gpu-old", {"pool": "gpu"}, None),
        node("legacy-a", {"pool": "legacy"}, ["nvidia", "runc"]),
        node("small-a", {"pool": "small"}, ["kata", "runc"], cpu="1"),
        node("cpu-a", {"pool": "cpu"}, ["runc"]),
    ]
    with FakeApiServer(runtimeclasses=runtimeclasses, nodes=nodes, token=TOKEN) as fake:
        base = tmp_path_factory.mktemp("cluster")
        kubeconfig = write_kubeconfig(str(base / "kubeconfig"), fake.url, token=TOKEN)
        result = ansible_run.playbook(PLAYBOOK, "localhost,", {
            "gpurt_kubeconfig": kubeconfig, "gpurt_report_dir": str(base / "reports"),
            "gpurt_pod_requests": {"cpu": "900m"}})
        with open(str(base / "reports" / "cluster-audit.json")) as handle:
            report = json.load(handle)
        yield {"result": result, "report": report, "fake": fake}


def findings(report, name):
    return [(f["check"], f["severity"], f["subject"]) for f in report["nodes"][name]["findings"]]


def test_play_fails_and_lists_once(cluster):
    assert cluster["result"].rc == 2, cluster["result"]
    assert len(cluster["fake"].list_requests("runtimeclasses")) == 1
    assert len(cluster["fake"].list_requests("nodes")) == 1
    assert TOKEN not in cluster["result"].text


def test_complete_node_is_ok(cluster):
    assert cluster["report"]["nodes"]["gpu-a"]["status"] == "OK"
    assert cluster["report"]["nodes"]["cpu-a"]["status"] == "OK"


def test_node_lacking_a_reported_handler(cluster):
    assert findings(cluster["report"], "gpu-b") == [("missing_handler", "error", "nvidia-cdi")]


def test_node_without_runtime_handlers_is_not_checked(cluster):
    entry = cluster["report"]["nodes"]["gpu-old"]
    assert entry["status"] == "NOT CHECKED"
    assert entry["failing"] is True
    assert findings(cluster["report"], "gpu-old") == [("handlers_not_reported", "warning", "gpu-old")]
    assert "gpu-old: NOT CHECKED" in "\n".join(cluster["result"].gate_lines())


def test_typo_with_suggestion(cluster):
    items = cluster["report"]["nodes"]["legacy-a"]["findings"]
    assert [(f["check"], f["subject"]) for f in items] == [("missing_handler", "nvida")]
    # nvidia is named by no RuntimeClass that can land on the legacy pool: a typo's likely target
    assert items[0]["evidence"]["suggestion"] == "nvidia"


def test_nvidia_cdi_missing_gets_no_false_suggestion(cluster):
    items = cluster["report"]["nodes"]["gpu-b"]["findings"]
    assert [(f["check"], f["subject"], f["evidence"]["suggestion"]) for f in items] == [
        ("missing_handler", "nvidia-cdi", None)]


def test_overhead_against_reported_allocatable(cluster):
    items = cluster["report"]["nodes"]["small-a"]["findings"]
    assert [(f["check"], f["subject"]) for f in items] == [("overhead_unschedulable", "kata:cpu")]
    assert items[0]["evidence"]["arithmetic"] == "900m + 250m > 1000m"


def test_summary_counts(cluster):
    summary = cluster["report"]["summary"]
    assert (summary["nodes"], summary["checked"], summary["ok"], summary["not_checked"]) == (6, 5, 2, 1)


def test_zero_nodes_matched_fails_the_run(tmp_path):
    with FakeApiServer(runtimeclasses=[runtimeclass("nvidia", "nvidia")], nodes=[node("gpu-a", {"pool": "gpu"}, ["nvidia"])],
                       token=TOKEN) as fake:
        kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), fake.url, token=TOKEN)
        result = ansible_run.playbook(PLAYBOOK, "localhost,", {
            "gpurt_kubeconfig": kubeconfig, "gpurt_report_dir": str(tmp_path / "reports"),
            "gpurt_node_label_selector": "pool=gpu-typo"})
    assert result.rc == 2, result
    assert "no Node to judge: the cluster listed none matching label selector 'pool=gpu-typo'" in result.text
    assert "FAILED: no Node to judge" in "\n".join(result.gate_lines())
    with open(str(tmp_path / "reports" / "cluster-audit.json")) as handle:
        report = json.load(handle)
    assert report["summary"]["passed"] is False and report["summary"]["nodes"] == 0


def test_zero_runtimeclasses_fails_unless_allowed(tmp_path):
    with FakeApiServer(runtimeclasses=[], nodes=[node("gpu-a", {"pool": "gpu"}, ["nvidia", "runc"])], token=TOKEN) as fake:
        kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), fake.url, token=TOKEN)
        refused = ansible_run.playbook(PLAYBOOK, "localhost,", {"gpurt_kubeconfig": kubeconfig})
        allowed = ansible_run.playbook(PLAYBOOK, "localhost,", {"gpurt_kubeconfig": kubeconfig,
                                                                "gpurt_allow_no_runtimeclasses": True})
    assert refused.rc == 2, refused
    assert "no RuntimeClass was read, so no handler was cross-checked" in refused.text
    assert allowed.rc == 0, allowed
    assert allowed.gate_lines()[0] == "gpu-a: OK"


@pytest.mark.parametrize("no_proxy", [None, "127.0.0.1"])
def test_connection_variables_reach_every_cluster_module(tmp_path, no_proxy):
    """The gpurt_k8s_* variables go to runtimeclass_info and node_info through module_defaults of
    the action group gpurt.runtime_gate.k8s: the proxy, no_proxy and impersonation too."""
    with FakeApiServer(runtimeclasses=[runtimeclass("nvidia", "nvidia")],
                       nodes=[node("gpu-a", {}, ["nvidia", "runc"])], token=TOKEN, tls=True) as fake, \
            ConnectProxy() as proxy:
        kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), fake.url, token=TOKEN,
                                      certificate_authority=fake.ca_file)
        extra = {"gpurt_kubeconfig": kubeconfig, "gpurt_k8s_proxy": proxy.url,
                 "gpurt_k8s_impersonate_user": "gpu-auditor",
                 "gpurt_k8s_impersonate_groups": ["gpu-admins", "system:authenticated"]}
        if no_proxy:
            extra["gpurt_k8s_no_proxy"] = no_proxy
        result = ansible_run.playbook(PLAYBOOK, "localhost,", extra)
    assert result.rc == 0, result
    lists = fake.list_requests("runtimeclasses") + fake.list_requests("nodes")
    assert len(lists) == 2
    assert [(r["impersonate_user"], r["impersonate_groups"]) for r in lists] == \
        [("gpu-auditor", ["gpu-admins", "system:authenticated"])] * 2
    # One CONNECT tunnel per module run (each lists with its own session).
    assert [r["method"] for r in proxy.requests] == ([] if no_proxy else ["CONNECT", "CONNECT"]), proxy.requests
