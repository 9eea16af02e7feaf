"""playbooks/cluster_audit.yml against the shared real control plane (tests/lib/real_cluster.py):
Nodes that do and do not report status.runtimeHandlers (written through the status subresource, as
a kubelet does). The module's objects are named caudit-* and select, and carry, the label
gpurt.test/caudit-pool, and every run selects its own Nodes by that label, so the shared cluster's
other objects do not matter."""
import json
import os

import pytest
from kubernetes import utils

from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.connect_proxy import ConnectProxy

pytestmark = pytest.mark.integration
PLAYBOOK = os.path.join(ansible_run.REPO, "playbooks", "cluster_audit.yml")
POOL = "gpurt.test/caudit-pool"


def pool(name):
    return {POOL: name}


@pytest.fixture(scope="module")
def api(real_cluster):
    api = Api(real_cluster.kubeconfig)
    api.runtimeclass("caudit-nvidia", "nvidia", selector=pool("gpu"))
    api.runtimeclass("caudit-nvidia-cdi", "nvidia-cdi", selector=pool("gpu"))
    api.runtimeclass("caudit-nvidia-legacy", "nvida", selector=pool("legacy"))
    api.runtimeclass("caudit-kata", "kata", selector=pool("small"), overhead={"cpu": "250m"})
    api.runtimeclass("caudit-conn", "nvidia", selector=pool("conn"))
    api.node("caudit-gpu-a", pool("gpu"), cpu="8", handlers=["nvidia", "nvidia-cdi", "runc"])
    api.node("caudit-gpu-b", pool("gpu"), cpu="8", handlers=["nvidia", "runc"])
    api.node("caudit-gpu-old", pool("gpu"), cpu="8")
    api.node("caudit-legacy-a", pool("legacy"), cpu="8", handlers=["nvidia", "runc"])
    api.node("caudit-small-a", pool("small"), cpu="1", handlers=["kata", "runc"])
    api.node("caudit-cpu-a", pool("cpu"), cpu="8", handlers=["runc"])
    api.node("caudit-conn-a", pool("conn"), cpu="8", handlers=["nvidia", "runc"])
    yield api
    api.close()


@pytest.fixture(scope="module")
def cluster(api, real_cluster, tmp_path_factory):
    base = tmp_path_factory.mktemp("cluster")
    result = ansible_run.playbook(PLAYBOOK, "localhost,", {
        "gpurt_kubeconfig": real_cluster.kubeconfig, "gpurt_report_dir": str(base / "reports"),
        "gpurt_node_label_selector": "%s in (gpu,legacy,small,cpu)" % POOL,
        "gpurt_pod_requests": {"cpu": "900m"}})
    with open(str(base / "reports" / "cluster-audit.json")) as handle:
        report = json.load(handle)
    yield {"result": result, "report": report}


def findings(report, name):
    return [(f["check"], f["severity"], f["subject"]) for f in report["nodes"][name]["findings"]]


def test_play_fails_and_lists_once(cluster, real_cluster):
    assert cluster["result"].rc == 2, cluster["result"]
    text = cluster["result"].text
    assert text.count("TASK [List the RuntimeClasses]") == 1 and text.count("TASK [List the Nodes]") == 1
    assert real_cluster.token("gpurt-admin") not in text


def test_complete_node_is_ok(cluster):
    assert cluster["report"]["nodes"]["caudit-gpu-a"]["status"] == "OK"
    assert cluster["report"]["nodes"]["caudit-cpu-a"]["status"] == "OK"


def test_node_lacking_a_reported_handler(cluster):
    assert findings(cluster["report"], "caudit-gpu-b") == [("missing_handler", "error", "nvidia-cdi")]


def test_node_without_runtime_handlers_is_not_checked(cluster):
    entry = cluster["report"]["nodes"]["caudit-gpu-old"]
    assert entry["status"] == "NOT CHECKED"
    assert entry["failing"] is True
    assert findings(cluster["report"], "caudit-gpu-old") == [("handlers_not_reported", "warning", "caudit-gpu-old")]
    assert "caudit-gpu-old: NOT CHECKED" in "\n".join(cluster["result"].gate_lines())


def test_typo_with_suggestion(cluster):
    items = cluster["report"]["nodes"]["caudit-legacy-a"]["findings"]
    assert [(f["check"], f["subject"]) for f in items] == [("missing_handler", "nvida")]
    # nvidia is named by no RuntimeClass that can land on the legacy pool: a typo's likely target
    assert items[0]["evidence"]["suggestion"] == "nvidia"


def test_nvidia_cdi_missing_gets_no_false_suggestion(cluster):
    items = cluster["report"]["nodes"]["caudit-gpu-b"]["findings"]
    assert [(f["check"], f["subject"], f["evidence"]["suggestion"]) for f in items] == [
        ("missing_handler", "nvidia-cdi", None)]


def test_overhead_against_reported_allocatable(cluster):
    items = cluster["report"]["nodes"]["caudit-small-a"]["findings"]
    assert [(f["check"], f["subject"]) for f in items] == [("overhead_unschedulable", "caudit-kata:cpu")]
    assert items[0]["evidence"]["arithmetic"] == "900m + 250m > 1000m"


def test_summary_counts(cluster):
    summary = cluster["report"]["summary"]
    assert (summary["nodes"], summary["checked"], summary["ok"], summary["not_checked"]) == (6, 5, 2, 1)


def test_zero_nodes_matched_fails_the_run(api, real_cluster, tmp_path):
    result = ansible_run.playbook(PLAYBOOK, "localhost,", {
        "gpurt_kubeconfig": real_cluster.kubeconfig, "gpurt_report_dir": str(tmp_path / "reports"),
        "gpurt_node_label_selector": "%s=gpu-typo" % POOL})
    assert result.rc == 2, result
    assert "no Node to judge: the cluster listed none matching label selector '%s=gpu-typo'" % POOL in result.text
    assert "FAILED: no Node to judge" in "\n".join(result.gate_lines())
    with open(str(tmp_path / "reports" / "cluster-audit.json")) as handle:
        report = json.load(handle)
    assert report["summary"]["passed"] is False and report["summary"]["nodes"] == 0


def test_zero_runtimeclasses_fails_unless_allowed(private_cluster):
    """A cluster with no RuntimeClass at all, which the shared one never is: a control plane of its own."""
    api = Api(private_cluster.kubeconfig)
    try:
        api.node("gpu-a", handlers=["nvidia", "runc"])
    finally:
        api.close()
    kubeconfig = private_cluster.kubeconfig
    refused = ansible_run.playbook(PLAYBOOK, "localhost,", {"gpurt_kubeconfig": kubeconfig})
    allowed = ansible_run.playbook(PLAYBOOK, "localhost,", {"gpurt_kubeconfig": kubeconfig,
                                                            "gpurt_allow_no_runtimeclasses": True})
    assert refused.rc == 2, refused
    assert "no RuntimeClass was read, so no handler was cross-checked" in refused.text
    assert allowed.rc == 0, allowed
    assert allowed.gate_lines()[0] == "gpu-a: OK"


@pytest.fixture(scope="module")
def auditors(api):
    """The group caudit-auditors may do what the audit identity may (rbac/runtime-gate-audit.yaml's
    ClusterRole); the user caudit-auditor alone may nothing."""
    utils.create_from_yaml(api.api_client, os.path.join(ansible_run.REPO, "rbac", "runtime-gate-audit.yaml"),
                           apply=True, namespace="gpurt-runtime-gate")
    utils.create_from_dict(api.api_client, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "caudit-auditors"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gpurt-runtime-gate-audit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "caudit-auditors"}]}, apply=True)
    return "caudit-auditor"


@pytest.mark.parametrize("no_proxy, group", [(None, "caudit-auditors"), ("127.0.0.1", "caudit-auditors"),
                                             ("127.0.0.1", None)])
def test_connection_variables_reach_every_cluster_module(real_cluster, auditors, tmp_path, no_proxy, group):
    """The gpurt_k8s_* variables go to runtimeclass_info and node_info through module_defaults of
    the action group gpurt.runtime_gate.k8s: the proxy, no_proxy and impersonation too. The real
    authorizer judges the impersonated identity: with its group the listing passes, without it 403."""
    with ConnectProxy() as proxy:
        extra = {"gpurt_kubeconfig": real_cluster.kubeconfig, "gpurt_k8s_proxy": proxy.url,
                 "gpurt_node_label_selector": "%s=conn" % POOL, "gpurt_report_dir": str(tmp_path / "reports"),
                 "gpurt_k8s_impersonate_user": auditors,
                 "gpurt_k8s_impersonate_groups": ([group] if group else []) + ["system:authenticated"]}
        if no_proxy:
            extra["gpurt_k8s_no_proxy"] = no_proxy
        result = ansible_run.playbook(PLAYBOOK, "localhost,", extra)
    # One CONNECT tunnel per module run (each lists with its own session).
    assert [r["method"] for r in proxy.requests] == ([] if no_proxy else ["CONNECT", "CONNECT"]), proxy.requests
    if group:
        assert result.rc == 0, result
        assert result.gate_lines()[0] == "caudit-conn-a: OK"
    else:
        assert result.rc == 2, result
        assert 'User "%s" cannot list resource "runtimeclasses"' % auditors in result.text, result
        assert "Traceback" not in result.text


LISTING_JUDGE = """
      gpurt.runtime_gate.audit_report:
        mode: cluster
        fail_run: false"""
LISTING_PLAY = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
  tasks:
    - gpurt.runtime_gate.runtimeclass_info:
        kubeconfig: "{{ kubeconfig }}"
        list_nodes: true
      register: listing
    - %(judge)s
        listing_var: listing
      register: by_name
    - %(judge)s
        runtimeclasses: "{{ listing.runtimeclasses }}"
        nodes: "{{ listing.nodes }}"
      register: by_value
    - %(judge)s
        listing_var: no_such_listing
      register: unset
      ignore_errors: true
    - ansible.builtin.set_fact:
        not_a_listing: {runtimeclasses: "caudit-nvidia"}
    - %(judge)s
        listing_var: not_a_listing
      register: wrong
      ignore_errors: true
    - ansible.builtin.copy:
        content: "{{ {'by_name': by_name, 'by_value': by_value, 'unset': unset.msg, 'wrong': wrong.msg} | to_json }}"
        dest: "{{ out }}"
"""


def test_the_judge_takes_a_registered_listing_by_its_name(api, real_cluster, tmp_path):
    """listing_var: the judge reads runtimeclass_info's result as registered (a task argument would be templated,
    walking every Node) and judges exactly as with the same lists given as arguments; a name that is unset or
    holds no listing is refused, naming it."""
    play = tmp_path / "listing.yml"
    play.write_text(LISTING_PLAY % {"judge": LISTING_JUDGE.strip()})
    out = tmp_path / "out.json"
    result = ansible_run.playbook(str(play), "localhost,", {"kubeconfig": real_cluster.kubeconfig, "out": str(out)})
    assert result.rc == 0, result.text
    got = json.loads(out.read_text())
    assert got["by_name"]["readable_lines"] == got["by_value"]["readable_lines"]
    assert got["by_name"]["report"]["nodes"] == got["by_value"]["report"]["nodes"]
    assert sorted(n for n in got["by_name"]["report"]["nodes"] if n.startswith("caudit-")) == [
        "caudit-conn-a", "caudit-cpu-a", "caudit-gpu-a", "caudit-gpu-b", "caudit-gpu-old", "caudit-legacy-a",
        "caudit-small-a"]
    assert got["unset"] == ("listing_var: no variable no_such_listing is set "
                            "(the register of gpurt.runtime_gate.runtimeclass_info)")
    assert got["wrong"] == "listing_var: not_a_listing.runtimeclasses is not a list of objects"
