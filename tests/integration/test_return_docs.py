"""Every key a module returns is in its RETURN: one playbook runs each of the collection's modules
(and its action plugin) for real, through ansible-playbook, on a fake node loaded by the real
containerd 2.1 and against the shared real cluster (tests/lib/real_cluster.py), and every registered result is compared with
what ansible-doc renders (nested keys too, where RETURN says what a dict or list contains)."""
import json
import os

import pytest

from tests.lib import ansible_run
from tests.lib import module_docs
from tests.lib.cluster_objects import Api
from tests.lib.nodes import Node

pytestmark = pytest.mark.integration
POLICY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "playbooks", "files", "runtime-gate-policy.yaml")

# This module's objects on the shared real cluster: its hosts are rdocs-node-a and rdocs-node-b, and
# its RuntimeClasses select the label gpurt.test/rdocs, which only its Node carries.
LABEL = {"gpurt.test/rdocs": "gpu"}

MAIN = 'version = 3\nimports = ["{root}/etc/containerd/conf.d/*.toml"]\n'
DROPIN = """version = 3
[plugins."io.containerd.cri.v1.runtime"]
  enable_cdi = true
  cdi_spec_dirs = ["{root}/etc/cdi"]
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  base_runtime_spec = "{root}/etc/containerd/base.json"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia.options]
  BinaryName = "{root}/usr/bin/nvidia-container-runtime"
  SystemdCgroup = true
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kata]
  runtime_type = "io.containerd.kata.v2"
"""
CDI_SPEC = '{"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu", "devices": [{"name": "0", "containerEdits": ' \
           '{"deviceNodes": [{"path": "{root}/dev/nvidia0"}]}}]}'

PLAYBOOK = """
- name: The cluster and controller modules
  hosts: localhost
  gather_facts: false
  module_defaults:
    gpurt.runtime_gate.runtimeclass_info: {kubeconfig: "%(kubeconfig)s"}
    gpurt.runtime_gate.node_info: {kubeconfig: "%(kubeconfig)s"}
    gpurt.runtime_gate.runtimeclass: {kubeconfig: "%(kubeconfig)s"}
    gpurt.runtime_gate.node_labels: {kubeconfig: "%(kubeconfig)s"}
    gpurt.runtime_gate.node_fence: {kubeconfig: "%(kubeconfig)s"}
    gpurt.runtime_gate.admission_policy: {kubeconfig: "%(kubeconfig)s"}
    gpurt.runtime_gate.runtimeclass_admission_info: {kubeconfig: "%(kubeconfig)s"}
  tasks:
    - gpurt.runtime_gate.controller_check:
      register: r_controller_check
    - gpurt.runtime_gate.runtimeclass_info:
        list_nodes: true
      register: r_runtimeclass_info
    - gpurt.runtime_gate.node_info:
        names: [node-a, node-b]
      register: r_node_info
    - gpurt.runtime_gate.runtimeclass:
        name: rdocs-nvidia-cdi
        handler: nvidia-cdi
        overhead: {cpu: 100m}
        node_selector: {"gpurt.test/rdocs": gpu}
      register: r_runtimeclass
    # a real write on this module's Node; the second entry names no Node (action "no node")
    - gpurt.runtime_gate.node_labels:
        nodes:
          - {name: node-a, labels: {"runtime-gate.gpurt.io/nvidia": "true"}}
          - {name: rdocs-node-gone, labels: {}}
      register: r_node_labels
    # check mode: the shared cluster's Node keeps its labels
    - gpurt.runtime_gate.node_fence:
        nodes: [rdocs-node-a, rdocs-node-gone]
        hosts: [rdocs-node-a]
      check_mode: true
      register: r_node_fence
    # a dry run: the policy and its binding are cluster-wide, and the cluster is shared
    - gpurt.runtime_gate.admission_policy:
        mode: warn
        policy: "{{ gate_manifests[0] }}"
        binding: "{{ gate_manifests[1] }}"
        params_data: {"handler.nvidia": "kubernetes.io/hostname=node-a,runtime-gate.gpurt.io/nvidia=true",
                      loaded: nvidia}
        namespace: rdocs-gate
      vars:
        gate_manifests: "{{ (lookup('ansible.builtin.file', '%(policy)s') | ansible.builtin.from_yaml)['items'] }}"
      check_mode: true
      register: r_admission_policy
    - gpurt.runtime_gate.runtimeclass_admission_info:
      register: r_runtimeclass_admission_info
    - gpurt.runtime_gate.bootstrap_sandbox:
        root: "%(sandbox)s"
        files:
          - {path: /etc/containerd/config.toml, content: "version = 3\\n"}
        containerd_version: "2.1"
        containerd_bins: {"2": "%(containerd)s"}
      register: r_bootstrap_sandbox

- name: The node modules
  hosts: node-a
  gather_facts: false
  tasks:
    - gpurt.runtime_gate.containerd_config_info:
        containerd_bin: "{{ gpurt_containerd_bin }}"
        config_path: "{{ gpurt_containerd_config_path }}"
        kubelet_config_path: "{{ gpurt_kubelet_config_path }}"
        shim_dirs: ["{{ gpurt_root }}/opt/kata/bin"]
        keep_texts: true
      register: gpurt_loaded
    - gpurt.runtime_gate.containerd_config_info:
        containerd_bin: "{{ gpurt_containerd_bin }}"
        config_path: "{{ gpurt_containerd_config_path }}"
        packed: true
      register: r_containerd_config_info_packed
    - gpurt.runtime_gate.register_runtimes_node:
        step: gather
        containerd_bin: "{{ gpurt_containerd_bin }}"
        config_path: "{{ gpurt_containerd_config_path }}"
        dropin_dir: "{{ gpurt_root }}/etc/containerd/conf.d"
        kubelet_config_path: "{{ gpurt_kubelet_config_path }}"
        extra_paths: ["{{ gpurt_root }}/usr/bin/nvidia-container-runtime"]
      register: r_register_runtimes_node
    - gpurt.runtime_gate.runtime_check:
        gathered: "{{ gpurt_loaded }}"
        runtimeclasses: "{{ hostvars.localhost.r_runtimeclass_info.runtimeclasses }}"
        nodes: "{{ hostvars.localhost.r_runtimeclass_info.nodes }}"
        report_only: true
      register: r_runtime_check
    - gpurt.runtime_gate.audit_report:
        runtimeclasses: "{{ hostvars.localhost.r_runtimeclass_info.runtimeclasses }}"
        nodes: "{{ hostvars.localhost.r_runtimeclass_info.nodes }}"
        json_path: "%(reports)s/audit.json"
        junit_path: "%(reports)s/audit.junit.xml"
        metrics_path: "%(reports)s/audit.prom"
      register: r_audit_report
      run_once: true
      # findings fail the run; the result is what counts here
      ignore_errors: true
    # writes a drop-in on the second node: gather, stage, prove, write, verify
    - gpurt.runtime_gate.register_runtimes:
        containerd_bin: "{{ gpurt_containerd_bin }}"
        config_path: "{{ hostvars['node-b'].gpurt_containerd_config_path }}"
        kubelet_config_path: "{{ hostvars['node-b'].gpurt_kubelet_config_path }}"
        backup_dir: "{{ hostvars['node-b'].gpurt_root }}/var/backups"
        runtimes:
          - name: nvidia
            binary_name: "{{ hostvars['node-b'].gpurt_root }}/usr/bin/nvidia-container-runtime"
      register: r_containerd_runtime
    # and refuses a runtime whose binary is missing
    - gpurt.runtime_gate.register_runtimes:
        containerd_bin: "{{ gpurt_containerd_bin }}"
        config_path: "{{ hostvars['node-b'].gpurt_containerd_config_path }}"
        kubelet_config_path: "{{ hostvars['node-b'].gpurt_kubelet_config_path }}"
        backup_dir: "{{ hostvars['node-b'].gpurt_root }}/var/backups"
        runtimes:
          - name: kata
            runtime_type: io.containerd.kata.v2
            binary_name: /nonexistent/kata-runtime
      register: r_containerd_runtime_refused
      ignore_errors: true
    # remediate.yml's rollout steps, on node-a's write of node-b's config
    - gpurt.runtime_gate.rollout:
        step: start
      run_once: true
      delegate_to: localhost
      delegate_facts: true
      register: r_rollout_start
    - gpurt.runtime_gate.rollout:
        step: batch
        result_var: r_containerd_runtime
        runtimeclasses: "{{ hostvars.localhost.r_runtimeclass_info.runtimeclasses }}"
        nodes: "{{ hostvars.localhost.r_runtimeclass_info.nodes }}"
      run_once: true
      delegate_to: localhost
      delegate_facts: true
      register: r_rollout_batch
    - gpurt.runtime_gate.rollout:
        step: collect
        batch_var: r_rollout_batch
        nodes: "{{ hostvars.localhost.r_runtimeclass_info.nodes }}"
      run_once: true
      delegate_to: localhost
      register: r_rollout_collect
    - gpurt.runtime_gate.rollout:
        step: report
        collected_var: r_rollout_collect
        runtimeclasses: "{{ hostvars.localhost.r_runtimeclass_info.runtimeclasses }}"
        nodes: "{{ hostvars.localhost.r_runtimeclass_info.nodes }}"
        json_path: "%(reports)s/remediate.json"
        junit_path: "%(reports)s/remediate.junit.xml"
      run_once: true
      delegate_to: localhost
      delegate_facts: true
      register: r_rollout_report

- name: Save every result
  hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.copy:
        dest: "%(results)s"
        mode: "0644"
        content: >-
          {{ {'controller_check': [r_controller_check], 'runtimeclass_info': [r_runtimeclass_info],
              'node_info': [r_node_info], 'runtimeclass': [r_runtimeclass],
              'node_labels': [r_node_labels], 'node_fence': [r_node_fence], 'admission_policy': [r_admission_policy],
              'runtimeclass_admission_info': [r_runtimeclass_admission_info],
              'bootstrap_sandbox': [r_bootstrap_sandbox],
              'containerd_config_info': [hostvars['node-a'].gpurt_loaded,
                                         hostvars['node-a'].r_containerd_config_info_packed],
              'register_runtimes_node': [hostvars['node-a'].r_register_runtimes_node],
              'runtime_check': [hostvars['node-a'].r_runtime_check],
              'audit_report': [hostvars['node-a'].r_audit_report],
              'register_runtimes': [hostvars['node-a'].r_containerd_runtime,
                                    hostvars['node-a'].r_containerd_runtime_refused],
              'rollout': [hostvars['node-a'].r_rollout_start, hostvars['node-a'].r_rollout_batch,
                          hostvars['node-a'].r_rollout_collect, hostvars['node-a'].r_rollout_report]} | to_json }}
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory, containerd, real_cluster):
    api = Api(real_cluster.kubeconfig)
    try:
        api.runtimeclass("rdocs-nvidia", "nvidia", overhead={"cpu": "100m"}, selector=LABEL)
        api.node("rdocs-node-a", labels=LABEL, cpu="8", handlers=["nvidia"])
        api.core.patch_node("rdocs-node-a", {"spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]}})
        api.namespace("rdocs-gate")  # the admission policy's parameter ConfigMap goes there (dry run)
    finally:
        api.close()
    tmp = tmp_path_factory.mktemp("return-docs")
    hosts = {}
    for name in ("rdocs-node-a", "rdocs-node-b"):
        node = Node(tmp / "nodes", name, "2.1")
        node.write("etc/containerd/config.toml", MAIN)
        node.runtime_binary()
        node.write("var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\ncgroupDriver: systemd\n")
        if name == "rdocs-node-a":
            node.write("etc/containerd/conf.d/99-nvidia.toml", DROPIN)
            node.write("etc/containerd/config.d/stray.toml", "version = 3\n")  # an orphan
            node.write("etc/cdi/nvidia.json", CDI_SPEC)
        else:
            os.makedirs(node.path("etc/containerd/conf.d"))
        hosts[name] = node.host_vars(gpurt_root=node.root)
    inventory = ansible_run.write_inventory(str(tmp / "inventory.json"), hosts)
    playbook = tmp / "all-modules.yml"
    text = PLAYBOOK % dict(kubeconfig=real_cluster.kubeconfig, policy=POLICY, sandbox=tmp / "sandbox", containerd=containerd["2.1"],
                           reports=tmp / "reports", results=tmp / "results.json")
    playbook.write_text(text.replace("node-a", "rdocs-node-a").replace("node-b", "rdocs-node-b"))
    run = ansible_run.playbook(str(playbook), inventory, extra_env={"HOME": str(tmp)})
    assert run.rc == 0, run
    with open(str(tmp / "results.json")) as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def docs():
    return module_docs.load_docs()


def test_every_module_ran(results):
    assert sorted(results) == module_docs.module_names()
    refused = results["register_runtimes"][1]
    assert refused["failed"] is True and refused["refused"] is True and refused["step"] == "plan", refused
    written = results["register_runtimes"][0]
    assert written["changed"] is True and "nvidia" in written["loaded_after"]["runtime_names"], written
    labels = results["node_labels"][0]
    # "unchanged" when a cluster kept from an earlier run (GPURT_DEV_CLUSTER) has the label already
    assert [(n["node"], n["action"]) for n in labels["nodes"]] in (
        [("rdocs-node-a", "labeled"), ("rdocs-node-gone", "no node")],
        [("rdocs-node-a", "unchanged"), ("rdocs-node-gone", "no node")]), labels
    proof = results["runtimeclass_admission_info"][0]
    assert proof["enforced"] is True and "RuntimeClass" in proof["plugins"], proof
    gate = results["admission_policy"][0]
    assert gate["changed"] is True and sorted(o["kind"] for o in gate["objects"]) == [
        "ConfigMap", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"], gate


def test_node_labels_wrote_the_real_node_and_admission_policy_stored_nothing(results, real_cluster):
    api = Api(real_cluster.kubeconfig)
    try:
        node = api.core.read_node("rdocs-node-a")
        assert node.metadata.labels.get("runtime-gate.gpurt.io/nvidia") == "true", node.metadata.labels
        assert "runtime-gate.gpurt.io/checked-at" in node.metadata.annotations
        configmaps = api.core.list_namespaced_config_map("rdocs-gate").items
        assert [c.metadata.name for c in configmaps if c.metadata.name != "kube-root-ca.crt"] == []
    finally:
        api.close()


@pytest.mark.parametrize("name", module_docs.module_names())
def test_every_returned_key_is_documented(results, docs, name):
    documented = docs[name]["return"]
    for result in results[name]:
        assert result.get("failed") is not True or result.get("refused"), result.get("msg")
        assert module_docs.undocumented_keys(result, documented) == [], module_docs.undocumented_keys(result, documented)
        if "packed" in result:  # containerd_config_info's packed facts: the keys it documents, in one text
            facts = json.loads(result["packed"])
            assert "loaded" in facts and module_docs.undocumented_keys(facts, documented) == []
