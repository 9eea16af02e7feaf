"""prevent.yml against real kube-apiservers that do not enforce a ValidatingAdmissionPolicy:

- one that does not serve the API (turned off with --runtime-config, as on a control plane before 1.30): the
  run fails naming gpurt_admission_mode=off, and nothing is written, not even the selectors its dry runs accepted;
- one that serves admissionregistration.k8s.io/v1 but runs without the ValidatingAdmissionPolicy admission plugin
  (left out of --enable-admission-plugins and named in --disable-admission-plugins): the policy's objects are
  stored but nothing enforces them. The run proves enforcement after writing them, so it fails naming the
  admission plugin, and writes no selector."""
import os
import time

import pytest
from kubernetes.client.rest import ApiException

from tests.lib import ansible_run
from tests.lib.cluster_objects import Api
from tests.lib.real_cluster import Cluster

pytestmark = pytest.mark.integration
OFF = ("--runtime-config=admissionregistration.k8s.io/v1/validatingadmissionpolicies=false,"
       "admissionregistration.k8s.io/v1/validatingadmissionpolicybindings=false")


def without_policy_plugin(tmp_path_factory, name, *apiserver_args):
    """A control plane without the ValidatingAdmissionPolicy admission plugin, and APISERVER_ARGS."""
    cluster = Cluster(tmp_path_factory.mktemp(name), admission_plugins="RuntimeClass,ServiceAccount",
                      apiserver_args=list(apiserver_args) + ["--disable-admission-plugins=ValidatingAdmissionPolicy"])
    cluster.up()
    return cluster


@pytest.fixture(scope="module")
def old_cluster(tmp_path_factory):
    # the policy admission plugin waits for the API it watches: off with it
    cluster = without_policy_plugin(tmp_path_factory, "no-policy-api", OFF)
    yield cluster
    cluster.down()


@pytest.fixture(scope="module")
def unenforced(tmp_path_factory):
    cluster = without_policy_plugin(tmp_path_factory, "no-policy-plugin")
    yield cluster
    cluster.down()


def verified_nvidia_node(api, name):
    """A namespace for the parameters, the class nvidia, and a Node whose labels a labeling run just proved."""
    api.namespace("gpurt-runtime-gate")
    api.runtimeclass("nvidia", "nvidia")
    api.node(name, handlers=["runc", "nvidia"])
    api.core.patch_node(name, {"metadata": {
        "labels": {"runtime-gate.gpurt.io/nvidia": "true"},
        "annotations": {"runtime-gate.gpurt.io/checked-at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}})


def prevent(cluster, **extra):
    return ansible_run.playbook(os.path.join(ansible_run.REPO, "playbooks", "prevent.yml"), "localhost,",
                                dict({"gpurt_kubeconfig": cluster.kubeconfig}, **extra))


def test_no_policy_api_fails_before_any_write(old_cluster):
    api = Api(old_cluster.kubeconfig)
    try:
        verified_nvidia_node(api, "old-gpu-1")
        result = prevent(old_cluster)
        assert result.rc == 2, result
        text = " ".join(result.text.split())
        assert "does not serve validatingadmissionpolicies, validatingadmissionpolicybindings" in text, result
        assert "set gpurt_admission_mode=off" in text and "Traceback" not in text
        assert api.node_k8s.read_runtime_class("nvidia").scheduling is None  # the selector was only dry-run
        with pytest.raises(ApiException) as info:
            api.core.read_namespaced_config_map("runtime-gate-verified-handlers", "gpurt-runtime-gate")
        assert info.value.status == 404
        # off: the selector gate alone works on such a control plane
        off = prevent(old_cluster, gpurt_admission_mode="off")
        assert off.rc == 0, off
        assert api.node_k8s.read_runtime_class("nvidia").scheduling.node_selector == {
            "runtime-gate.gpurt.io/nvidia": "true"}
    finally:
        api.close()


def test_an_unenforced_policy_fails_the_run_naming_the_plugin(unenforced):
    api = Api(unenforced.kubeconfig)
    try:
        verified_nvidia_node(api, "unenforced-gpu-1")
        started = time.time()
        # a short wait (the default is 30 s): the message names the wait the run was given
        result = prevent(unenforced, gpurt_admission_mode="deny", gpurt_admission_enforcement_timeout=4)
        assert result.rc == 2, result
        text = " ".join(result.text.split())
        assert ("the policy runtime-gate.gpurt.io is written but not enforced: a dry-run create of a RuntimeClass "
                "with handler 'gpurt-enforcement-probe', which no Node loads, was admitted without a warning for 4 s, "
                "not refused") in text, result
        assert "ValidatingAdmissionPolicy admission plugin is off" in text and "gpurt_admission_mode=off" in text
        assert "Traceback" not in text
        assert time.time() - started < 120
        # the probe was a dry run; the selector waits for an enforced policy
        assert [rc.metadata.name for rc in api.node_k8s.list_runtime_class().items] == ["nvidia"]
        assert api.node_k8s.read_runtime_class("nvidia").scheduling is None
        # warn: no warning comes back either
        warn = prevent(unenforced, gpurt_admission_mode="warn", gpurt_admission_enforcement_timeout=0)
        assert warn.rc == 2 and "not admitted with a warning" in " ".join(warn.text.split()), warn
        # a negative wait is refused by name, before the module's first request
        bad = prevent(unenforced, gpurt_admission_mode="deny", gpurt_admission_enforcement_timeout=-1)
        assert bad.rc == 2 and "gpurt_admission_enforcement_timeout) must be a number of seconds, 0 or more (got -1.0)" \
            in " ".join(bad.text.split()), bad
        assert "Traceback" not in bad.text
    finally:
        api.close()
