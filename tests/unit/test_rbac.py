"""The shipped RBAC manifests: the audit identity may only read; the remediation one may also
write RuntimeClasses, and nothing else."""
import os

import yaml

RBAC = os.path.join(os.path.dirname(__file__), "..", "..", "rbac")


def objects(name):
    with open(os.path.join(RBAC, name)) as handle:
        docs = [d for d in yaml.safe_load_all(handle) if d]
    assert len(docs) == 1 and docs[0]["kind"] == "List"
    return docs[0]["items"]


def rules(name):
    roles = [o for o in objects(name) if o["kind"] == "ClusterRole"]
    assert len(roles) == 1
    return dict(((tuple(r["apiGroups"]), tuple(r["resources"])), sorted(r["verbs"])) for r in roles[0]["rules"])


def test_audit_role_is_read_only():
    assert rules("runtime-gate-audit.yaml") == {
        (("node.k8s.io",), ("runtimeclasses",)): ["get", "list"],
        (("",), ("nodes",)): ["get", "list"],
    }


def test_remediate_role_writes_runtimeclasses_only():
    assert rules("runtime-gate-remediate.yaml") == {
        (("node.k8s.io",), ("runtimeclasses",)): ["create", "delete", "get", "list", "patch"],
        (("",), ("nodes",)): ["get", "list"],
    }


def test_labeler_role_adds_only_patch_on_nodes():
    assert rules("runtime-gate-labeler.yaml") == {
        (("node.k8s.io",), ("runtimeclasses",)): ["get", "list"],
        (("",), ("nodes",)): ["get", "list", "patch"],
    }


def test_bindings_point_at_the_service_accounts():
    for name, account in (("runtime-gate-audit.yaml", "runtime-gate-audit"),
                          ("runtime-gate-remediate.yaml", "runtime-gate-remediate"),
                          ("runtime-gate-labeler.yaml", "runtime-gate-labeler")):
        items = objects(name)
        binding = [o for o in items if o["kind"] == "ClusterRoleBinding"][0]
        role = [o for o in items if o["kind"] == "ClusterRole"][0]
        assert binding["roleRef"]["name"] == role["metadata"]["name"]
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": "gpurt-runtime-gate"}]
        assert [o["metadata"]["name"] for o in items if o["kind"] == "ServiceAccount"] == [account]
