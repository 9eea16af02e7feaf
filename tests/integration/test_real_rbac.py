"""RBAC of rbac/runtime-gate-audit.yaml proven by the real authorizer (kube-apiserver with
--authorization-mode=Node,RBAC, tests/lib/real_cluster.py): the audit identity, a ServiceAccount
whose token comes from the real TokenRequest API, lists what cluster_audit.yml needs; a write as that
identity is refused by the apiserver, and the run says so; a token-file user with no grant is refused
the listing. remediate.yml as the audit identity is refused its RuntimeClass write, as the remediate
identity (rbac/runtime-gate-remediate.yaml) it writes, and audit.yml as the audit identity then passes.
Objects are named for this module, and the audit selects its own Node by label, so the
shared cluster's other objects do not matter."""
import json
import os

import pytest
from kubernetes import utils
from kubernetes.client.rest import ApiException

from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.real_cluster import write_kubeconfig

pytestmark = pytest.mark.integration
REPO = ansible_run.REPO
CLUSTER_AUDIT = os.path.join(REPO, "playbooks", "cluster_audit.yml")
LABEL = {"gpurt.test/rbac": "audit"}


@pytest.fixture(scope="module")
def audit_identity(real_cluster, tmp_path_factory):
    api = Api(real_cluster.kubeconfig)
    # server-side apply: the same on every xdist worker that runs this module's tests
    utils.create_from_yaml(api.api_client, os.path.join(REPO, "rbac", "runtime-gate-audit.yaml"), apply=True,
                           namespace="gpurt-runtime-gate")
    api.runtimeclass("rbac-nvidia", "nvidia", selector=LABEL)
    api.node("rbac-gpu-1", labels=LABEL, handlers=["runc", "nvidia"], cpu="4")
    token = api.core.create_namespaced_service_account_token(
        "runtime-gate-audit", "gpurt-runtime-gate", {"spec": {"expirationSeconds": 3600}}).status.token
    base = tmp_path_factory.mktemp("rbac")
    kubeconfig = write_kubeconfig(str(base / "audit-kubeconfig"), real_cluster.server, real_cluster.ca,
                                  "runtime-gate-audit", token=token)
    yield {"api": api, "kubeconfig": kubeconfig, "token": token, "base": base, "cluster": real_cluster}
    api.close()


def test_audit_identity_runs_cluster_audit(audit_identity):
    reports = audit_identity["base"] / "reports"
    result = ansible_run.playbook(CLUSTER_AUDIT, "localhost,", {
        "gpurt_kubeconfig": audit_identity["kubeconfig"], "gpurt_report_dir": str(reports),
        "gpurt_node_label_selector": "gpurt.test/rbac=audit"})
    assert result.rc == 0, result
    assert result.gate_lines()[0] == "rbac-gpu-1: OK"
    with open(str(reports / "cluster-audit.json")) as handle:
        report = json.load(handle)
    assert sorted(report["nodes"]) == ["rbac-gpu-1"]
    assert audit_identity["token"] not in result.text


def test_a_write_as_the_audit_identity_is_refused_by_the_apiserver(audit_identity):
    playbook = audit_identity["base"] / "write.yml"
    playbook.write_text(
        "- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n"
        "    - gpurt.runtime_gate.runtimeclass:\n"
        "        kubeconfig: %s\n        name: rbac-written\n        handler: nvidia\n" % audit_identity["kubeconfig"])
    result = ansible_run.playbook(str(playbook), "localhost,",
                                  {"ansible_python_interpreter": "{{ ansible_playbook_python }}"})
    assert result.rc == 2, result
    assert "403 Forbidden" in result.text and "applying runtimeclass rbac-written" in result.text, result
    assert "the identity may not patch runtimeclasses.node.k8s.io" in result.text
    # the real authorizer's own words name the ServiceAccount
    assert 'User "system:serviceaccount:gpurt-runtime-gate:runtime-gate-audit"' in result.text
    assert "Traceback" not in result.text
    names = [rc.metadata.name for rc in audit_identity["api"].node_k8s.list_runtime_class().items]
    assert "rbac-written" not in names


def test_a_user_without_a_grant_cannot_list(audit_identity, tmp_path):
    cluster = audit_identity["cluster"]
    result = ansible_run.playbook(CLUSTER_AUDIT, "localhost,", {
        "gpurt_kubeconfig": cluster.kubeconfig_for("gpurt-nobody", str(tmp_path / "kubeconfig")),
        "gpurt_report_dir": str(tmp_path / "reports")})
    assert result.rc == 2, result
    assert "403 Forbidden" in result.text and "listing runtimeclasses" in result.text, result
    assert 'User "gpurt-nobody" cannot list resource "runtimeclasses"' in result.text
    assert "apply rbac/runtime-gate-audit.yaml" in result.text
    assert "Traceback" not in result.text


# ----- remediate.yml and audit.yml as the rbac/ identities ----------------------------------

REMEDIATE = os.path.join(REPO, "playbooks", "remediate.yml")
AUDIT = os.path.join(REPO, "playbooks", "audit.yml")
REMEDIATE_LABEL = {"gpurt.test/rbac-remediate": "gpu"}
NODE = "rbac-rem-gpu-1"


def sa_kubeconfig(api, cluster, name, path):
    token = api.core.create_namespaced_service_account_token(
        name, "gpurt-runtime-gate", {"spec": {"expirationSeconds": 3600}}).status.token
    return write_kubeconfig(path, cluster.server, cluster.ca, name, token=token), token


def remediate(tmp_path, kubeconfig, host):
    desired = [{"name": "rbac-remediated", "handler": "nvidia", "node_selector": REMEDIATE_LABEL}]
    inventory = ansible_run.write_inventory(str(tmp_path / "hosts.json"), {NODE: host}, group_vars={
        "gpurt_kubeconfig": kubeconfig, "gpurt_manage_runtimeclasses": True, "gpurt_runtimeclasses_desired": desired,
        "gpurt_report_dir": str(tmp_path / "reports")})
    return ansible_run.playbook(REMEDIATE, inventory, timeout=300, extra_env={"HOME": str(tmp_path)},
                                extra_vars={"gpurt_serial": "100%", "gpurt_max_fail_percentage": 100})


def test_remediate_writes_as_the_remediate_identity_and_not_as_the_audit_identity(audit_identity, tmp_path):
    """rbac/runtime-gate-remediate.yaml applied too. The RuntimeClass selects a label only this test's
    Node carries, so the gate judges that Node alone (by re-audit: it is in the run)."""
    from tests.lib.nodes import Node
    api, cluster = audit_identity["api"], audit_identity["cluster"]
    utils.create_from_yaml(api.api_client, os.path.join(REPO, "rbac", "runtime-gate-remediate.yaml"), apply=True,
                           namespace="gpurt-runtime-gate")
    api.node(NODE, labels=REMEDIATE_LABEL, cpu="4")
    try:  # written by an earlier run on a cluster that tools/dev-cluster keeps (GPURT_DEV_CLUSTER)
        api.node_k8s.delete_runtime_class("rbac-remediated")
    except ApiException as exc:
        if exc.status != 404:
            raise
    node = Node(tmp_path / "nodes", NODE, "2.1")
    host = node.host_vars(
        gpurt_node_labels=REMEDIATE_LABEL,
        containerd_runtime_containerd_bin=node.binary, containerd_runtime_config_path=node.config_path,
        containerd_runtime_kubelet_config_path=node.kubelet_config_path,
        containerd_runtime_restart_command=["/bin/true"], containerd_runtime_restart_proof="config",
        containerd_runtime_runtimes=[{"name": "nvidia", "binary_name": node.runtime_binary()}])
    remediate_kubeconfig, remediate_token = sa_kubeconfig(api, cluster, "runtime-gate-remediate",
                                                          str(tmp_path / "remediate-kubeconfig"))

    refused = remediate(tmp_path, audit_identity["kubeconfig"], host)
    assert refused.rc == 2, refused
    assert "403 Forbidden" in refused.text and "rbac-remediated" in refused.text, refused
    assert "the read-only audit identity may not write" in refused.text, refused
    assert 'User "system:serviceaccount:gpurt-runtime-gate:runtime-gate-audit"' in refused.text
    assert "Traceback" not in refused.text and audit_identity["token"] not in refused.text
    assert "rbac-remediated" not in [rc.metadata.name for rc in api.node_k8s.list_runtime_class().items]

    written = remediate(tmp_path, remediate_kubeconfig, host)
    assert written.rc == 0, written
    stored = api.node_k8s.read_runtime_class("rbac-remediated")
    assert stored.handler == "nvidia" and stored.scheduling.node_selector == REMEDIATE_LABEL
    assert remediate_token not in written.text

    # the read-only identity audits what was remediated
    inventory = ansible_run.write_inventory(str(tmp_path / "audit-hosts.json"), {NODE: host}, group_vars={
        "gpurt_kubeconfig": audit_identity["kubeconfig"], "gpurt_report_dir": str(tmp_path / "audit-reports")})
    audited = ansible_run.playbook(AUDIT, inventory, check=True, extra_env={"HOME": str(tmp_path)})
    assert audited.rc == 0, audited
    assert "%s: OK" % NODE in audited.gate_lines(), audited
