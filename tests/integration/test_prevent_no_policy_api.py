"""prevent.yml against a real kube-apiserver that does not serve the ValidatingAdmissionPolicy API
(turned off with --runtime-config, as on a control plane before 1.30): the run fails naming
gpurt_admission_mode=off, and nothing is written, not even the selectors its dry runs accepted."""
import os

import pytest
from kubernetes.client.rest import ApiException

from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.real_cluster import Cluster

pytestmark = pytest.mark.integration
OFF = ("--runtime-config=admissionregistration.k8s.io/v1/validatingadmissionpolicies=false,"
       "admissionregistration.k8s.io/v1/validatingadmissionpolicybindings=false")


@pytest.fixture(scope="module")
def old_cluster(tmp_path_factory):
    # the policy admission plugin waits for the API it watches: off with it
    cluster = Cluster(tmp_path_factory.mktemp("no-policy-api"), admission_plugins="RuntimeClass,ServiceAccount",
                      apiserver_args=[OFF, "--disable-admission-plugins=ValidatingAdmissionPolicy"])
    cluster.up()
    try:
        yield cluster
    finally:
        cluster.down()


def test_no_policy_api_fails_before_any_write(old_cluster):
    api = Api(old_cluster.kubeconfig)
    try:
        api.namespace("gpurt-runtime-gate")
        api.runtimeclass("nvidia", "nvidia")
        api.node("old-gpu-1", handlers=["runc", "nvidia"])
        api.core.patch_node("old-gpu-1", {"metadata": {"labels": {"runtime-gate.gpurt.io/nvidia": "true"}}})
        result = ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", "prevent.yml"), "localhost,",
                                      {"gpurt_kubeconfig": old_cluster.kubeconfig})
        assert result.rc == 2, result
        text = " ".join(result.text.split())
        assert "does not serve validatingadmissionpolicies, validatingadmissionpolicybindings" in text, result
        assert "set gpurt_admission_mode=off" in text and "Traceback" not in text
        assert api.node_k8s.read_runtime_class("nvidia").scheduling is None  # the selector was only dry-run
        with pytest.raises(ApiException) as info:
            api.core.read_namespaced_config_map("runtime-gate-verified-handlers", "gpurt-runtime-gate")
        assert info.value.status == 404
        # off: the selector gate alone works on such a control plane
        off = ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", "prevent.yml"), "localhost,",
                                   {"gpurt_kubeconfig": old_cluster.kubeconfig, "gpurt_admission_mode": "off"})
        assert off.rc == 0, off
        assert api.node_k8s.read_runtime_class("nvidia").scheduling.node_selector == {
            "runtime-gate.gpurt.io/nvidia": "true"}
    finally:
        api.close()
