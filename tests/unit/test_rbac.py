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


def test_watch_role_is_the_labeler_plus_watch_on_nodes():
    assert rules("runtime-gate-watch.yaml") == {
        (("node.k8s.io",), ("runtimeclasses",)): ["get", "list"],
        (("",), ("nodes",)): ["get", "list", "patch", "watch"],
    }


def test_bindings_point_at_the_service_accounts():
    for name, account in (("runtime-gate-audit.yaml", "runtime-gate-audit"),
                          ("runtime-gate-remediate.yaml", "runtime-gate-remediate"),
                          ("runtime-gate-labeler.yaml", "runtime-gate-labeler"),
                          ("runtime-gate-watch.yaml", "runtime-gate-watch")):
        items = objects(name)
        binding = [o for o in items if o["kind"] == "ClusterRoleBinding"][0]
        role = [o for o in items if o["kind"] == "ClusterRole"][0]
        assert binding["roleRef"]["name"] == role["metadata"]["name"]
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": "gpurt-runtime-gate"}]
        assert [o["metadata"]["name"] for o in items if o["kind"] == "ServiceAccount"] == [account]


def prevent_rules(kind):
    roles = [o for o in objects("runtime-gate-prevent.yaml") if o["kind"] == kind]
    assert len(roles) == 1
    return dict(((tuple(r.get("apiGroups") or ()), tuple(r.get("resources") or r["nonResourceURLs"]),
                  tuple(r.get("resourceNames") or ())), sorted(r["verbs"])) for r in roles[0]["rules"])


def test_prevent_role_writes_only_the_gates_objects():
    """prevent.yml's identity: its reads, the selector patch, the dry-run probes' create, kube-apiserver's metrics
    (the selectors' enforcement), and only the admission objects named runtime-gate.gpurt.io and the parameter
    ConfigMap in gpurt-runtime-gate."""
    assert prevent_rules("ClusterRole") == {
        (("node.k8s.io",), ("runtimeclasses",), ()): ["create", "get", "list", "patch"],
        (("",), ("nodes",), ()): ["list"],
        ((), ("/metrics",), ()): ["get"],
        (("",), ("configmaps",), ()): ["get"],  # the apiserver's condition for creating the policy
        (("admissionregistration.k8s.io",), ("validatingadmissionpolicies", "validatingadmissionpolicybindings"),
         ("runtime-gate.gpurt.io",)): ["create", "delete", "get", "patch"],
    }
    assert prevent_rules("Role") == {
        (("",), ("configmaps",), ("runtime-gate-verified-handlers",)): ["create", "get", "patch"],
    }
    items = objects("runtime-gate-prevent.yaml")
    subject = [{"kind": "ServiceAccount", "name": "runtime-gate-prevent", "namespace": "gpurt-runtime-gate"}]
    for kind, role in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = [o for o in items if o["kind"] == kind][0]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role,
                                      "name": "gpurt-runtime-gate-prevent"}
        assert binding["subjects"] == subject
    assert [o["metadata"]["namespace"] for o in items if o["kind"] in ("Role", "RoleBinding")] == [
        "gpurt-runtime-gate"] * 2


def test_a_403_names_the_file_that_grants_the_verb():
    """Every hint a refused request gets names an rbac/ file that grants that verb on that resource."""
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s import resources

    def granted(name, resource, verb):
        for role in (o for o in objects(name) if o["kind"] in ("ClusterRole", "Role")):
            for rule in role["rules"]:
                if resource in (rule.get("resources") or rule.get("nonResourceURLs")) and verb in rule["verbs"]:
                    return True
        return False

    uses = [("configmaps", "get"), ("configmaps", "patch"), ("configmaps", "create"),
            ("validatingadmissionpolicies", "get"), ("validatingadmissionpolicies", "patch"),
            ("validatingadmissionpolicies", "create"), ("validatingadmissionpolicies", "delete"),
            ("validatingadmissionpolicybindings", "patch"), ("validatingadmissionpolicybindings", "delete"),
            ("runtimeclasses", "patch"), ("runtimeclasses", "create"), ("nodes", "patch"), ("metrics", "get")]
    for resource, verb in uses:
        if verb in resources.READ_VERBS:
            hint = resources.READ_HINTS.get(resource, resources.RBAC_HINT[True])
        else:
            hint = resources.WRITE_HINTS.get(resource, resources.RBAC_HINT[False])
        files = [w for w in hint.replace("(", " ").split() if w.startswith("rbac/")]
        assert files, (resource, verb, hint)
        granted_as = resources.RESOURCES[resource][0] if resource == "metrics" else resource
        assert all(granted(f[len("rbac/"):], granted_as, verb) for f in files), (resource, verb, hint)
        assert verb in hint, (resource, verb, hint)
