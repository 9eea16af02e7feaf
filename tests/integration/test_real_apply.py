"""The runtimeclass module's server-side apply against the real kube-apiserver (shared real cluster):
a second field manager owns scheduling.nodeSelector and overhead; our apply of other values is a real
conflict naming that manager, --check (dryRun=All) predicts it and stores nothing, force takes the
fields over (real managedFields), and a second run changes nothing."""
import json

import pytest

from tests.integration import test_cluster_modules
from tests.lib.cluster_objects import Api

pytestmark = pytest.mark.integration
adhoc = test_cluster_modules.adhoc
ansible_env = test_cluster_modules.ansible_env  # the fixture, shared with test_cluster_modules.py
NAME = "apply-nvidia"
SITE = "site-tooling"


@pytest.fixture(scope="module")
def owned(real_cluster):
    api = Api(real_cluster.kubeconfig)
    body = {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": NAME}, "handler": "nvidia",
            "scheduling": {"nodeSelector": {"pool": "gpu"}}, "overhead": {"podFixed": {"cpu": "100m"}}}
    # the other manager's own server-side apply
    api.node_k8s.patch_runtime_class(NAME, body, field_manager=SITE, _content_type="application/apply-patch+yaml")
    yield {"api": api, "kubeconfig": real_cluster.kubeconfig}
    api.close()


def managers(api):
    fields = api.node_k8s.read_runtime_class(NAME).metadata.managed_fields
    return dict((entry.manager, entry.fields_v1) for entry in fields)


def args(owned, **extra):
    items = ["kubeconfig=%s" % owned["kubeconfig"], "name=%s" % NAME, "handler=nvidia"]
    items += ["%s=%s" % (k, v) for k, v in extra.items()]
    return " ".join(items)


def test_real_conflict_check_mode_and_force(owned, ansible_env):
    api = owned["api"]
    selector = "node_selector='{\"pool\": \"gpu-a100\"}'"
    rc, result, output = adhoc(ansible_env, "runtimeclass", args(owned) + " " + selector, "--check")
    assert rc != 0, output[-3000:]
    assert "conflict" in result["msg"].lower() and SITE in result["msg"], result["msg"]
    assert api.node_k8s.read_runtime_class(NAME).scheduling.node_selector == {"pool": "gpu"}  # dryRun stored nothing

    rc, result, output = adhoc(ansible_env, "runtimeclass", args(owned) + " " + selector)
    assert rc != 0 and SITE in result["msg"], output[-3000:]
    assert api.node_k8s.read_runtime_class(NAME).scheduling.node_selector == {"pool": "gpu"}

    rc, result, output = adhoc(ansible_env, "runtimeclass", args(owned, force="true") + " " + selector)
    assert rc == 0 and result["changed"] is True, output[-3000:]
    live = api.node_k8s.read_runtime_class(NAME)
    assert live.scheduling.node_selector == {"pool": "gpu-a100"}
    owners = managers(api)
    assert "f:nodeSelector" in json.dumps(owners["gpurt"]) and "f:nodeSelector" not in json.dumps(owners[SITE])
    assert "f:overhead" in json.dumps(owners[SITE])  # not given: still the other manager's

    rc, result, output = adhoc(ansible_env, "runtimeclass", args(owned, force="true") + " " + selector)
    assert rc == 0 and result["changed"] is False, output[-3000:]
