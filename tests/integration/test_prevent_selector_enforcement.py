"""prevent.yml proves that kube-apiserver puts the RuntimeClass selectors into pods (its RuntimeClass admission
plugin, on by default), on a real control plane of this module's own (tests/lib/real_cluster.py) started with
--disable-admission-plugins=RuntimeClass:

- there, a dry-run Pod of a class whose scheduling.nodeSelector is set comes back without it: the selector gate
  would do nothing, however the selectors are written;
- prevent.yml fails before any write, naming the plugin and the flag, in check mode as in a real run;
- gpurt_selector_enforcement=assume gates all the same, and the summary says the enforcement was assumed;
- an identity that may not get /metrics fails as not proven, naming the permission and the file that grants it.
The plugin on (the default), the run says what proved it: test_prevent.py and test_prevent_hardening.py (as
rbac/runtime-gate-prevent.yaml's identity)."""
import os

import pytest
import yaml
from kubernetes import utils
from kubernetes.client.rest import ApiException

from tests.integration.test_prevent_no_policy_api import verified_nvidia_node
from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.real_cluster import Cluster, write_kubeconfig

pytestmark = pytest.mark.integration
PREFIX = "runtime-gate.gpurt.io/"
NS = "gpurt-runtime-gate"
OFF_WORDS = ("does not run its RuntimeClass admission plugin (its admission metrics show creates handled by",
             "but never by the RuntimeClass plugin), so pods of a gated class are not given its nodeSelector",
             "remove RuntimeClass from --disable-admission-plugins")


@pytest.fixture(scope="module")
def no_plugin(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("no-runtimeclass-plugin"),
                      admission_plugins="ValidatingAdmissionPolicy,ServiceAccount",
                      apiserver_args=["--disable-admission-plugins=RuntimeClass"])
    cluster.up()
    api = Api(cluster.kubeconfig)
    verified_nvidia_node(api, "sel-gpu-1")
    yield {"cluster": cluster, "api": api, "base": tmp_path_factory.mktemp("selector-enforcement")}
    api.close()
    cluster.down()


def prevent(cluster, check=False, **extra):
    return ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", "prevent.yml"), "localhost,",
                                dict({"gpurt_kubeconfig": cluster.kubeconfig}, **extra), check=check)


def flat(result):
    return " ".join(result.text.split())


def test_a_pod_of_a_class_with_a_selector_does_not_get_it_there(no_plugin):
    api = no_plugin["api"]
    api.runtimeclass("selected", "nvidia", selector={PREFIX + "nvidia": "true"})
    api.namespace("sel-pods")
    pod = {"metadata": {"name": "probe"}, "spec": {
        "runtimeClassName": "selected", "automountServiceAccountToken": False,
        "containers": [{"name": "main", "image": "registry.invalid/pause:1"}]}}
    created = api.core.create_namespaced_pod("sel-pods", pod, dry_run="All")
    assert created.spec.runtime_class_name == "selected" and created.spec.node_selector is None


def test_the_run_fails_naming_the_plugin_and_writes_nothing(no_plugin):
    api = no_plugin["api"]
    checked = prevent(no_plugin["cluster"], check=True, gpurt_gate_runtimeclasses=["nvidia"])
    for result in (prevent(no_plugin["cluster"], gpurt_gate_runtimeclasses=["nvidia"]), checked):
        assert result.rc == 2, result
        text = flat(result)
        assert "FAILED: nothing was written: the RuntimeClass selectors are not enforced: kube-apiserver at " in text
        assert all(words in text for words in OFF_WORDS), result
        assert "Traceback" not in text
    assert api.node_k8s.read_runtime_class("nvidia").scheduling is None
    with pytest.raises(ApiException) as info:
        api.core.read_namespaced_config_map("runtime-gate-verified-handlers", NS)
    assert info.value.status == 404


def test_assume_gates_and_says_so(no_plugin):
    api = no_plugin["api"]
    result = prevent(no_plugin["cluster"], gpurt_gate_runtimeclasses=["nvidia"], gpurt_selector_enforcement="assume")
    assert result.rc == 0, result
    assert "RuntimeClass selectors: enforcement assumed, not proven (gpurt_selector_enforcement=assume)" \
        in flat(result), result
    assert api.node_k8s.read_runtime_class("nvidia").scheduling.node_selector == {PREFIX + "nvidia": "true"}
    # a value that is neither is refused before anything is read
    bad = prevent(no_plugin["cluster"], gpurt_selector_enforcement="maybe")
    assert bad.rc == 2 and "gpurt_selector_enforcement" in flat(bad) and "prove, assume" in flat(bad), bad
    assert "Traceback" not in bad.text


def test_an_identity_that_may_not_read_the_metrics_is_told_what_to_grant(no_plugin, tmp_path):
    api, cluster = no_plugin["api"], no_plugin["cluster"]
    with open(os.path.join(ansible_run.REPO, "rbac", "runtime-gate-prevent.yaml")) as handle:
        manifest = yaml.safe_load(handle)
    role = [item for item in manifest["items"] if item["kind"] == "ClusterRole"][0]
    role["rules"] = [rule for rule in role["rules"] if "nonResourceURLs" not in rule]
    path = tmp_path / "prevent-without-metrics.yaml"
    path.write_text(yaml.safe_dump(manifest))
    utils.create_from_yaml(api.api_client, str(path), apply=True, namespace=NS)
    token = api.core.create_namespaced_service_account_token(
        "runtime-gate-prevent", NS, {"spec": {"expirationSeconds": 3600}}).status.token
    kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), cluster.server, cluster.ca, "runtime-gate-prevent",
                                  token=token)
    result = prevent(cluster, gpurt_kubeconfig=kubeconfig, gpurt_gate_runtimeclasses=["nvidia"])
    assert result.rc == 2, result
    text = flat(result)
    assert "the RuntimeClass selectors' enforcement is not proven: 403 Forbidden from " in text, result
    assert ("the identity may not get the non-resource URL /metrics; rbac/runtime-gate-prevent.yaml (prevent.yml's "
            "identity) grants get on the non-resource URL /metrics") in text, result
    assert "set gpurt_selector_enforcement=assume" in text and token not in text and "Traceback" not in text
