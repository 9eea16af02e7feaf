"""The modules renamed by issue 22 keep working under their old names (meta/runtime.yml plugin_routing),
with a deprecation warning: containerd_runtime runs the register_runtimes action plugin on the
controller, containerd_config_files the register_runtimes_node module on the node."""
import json

from tests.lib import ansible_run

PLAYBOOK = """
- hosts: node
  gather_facts: false
  tasks:
    - gpurt.runtime_gate.containerd_runtime:
        config_path: etc/containerd/config.toml
      register: old_action
      ignore_errors: true
    - gpurt.runtime_gate.containerd_config_files:
        step: stage
      register: old_module
      ignore_errors: true
    - ansible.builtin.copy:
        dest: "%(results)s"
        mode: "0644"
        content: "{{ {'action': old_action, 'module': old_module} | to_json }}"
"""


def test_the_old_module_names_redirect_with_a_deprecation(tmp_path):
    inventory = ansible_run.write_inventory(str(tmp_path / "inventory.json"), {"node": {}})
    playbook = tmp_path / "old-names.yml"
    playbook.write_text(PLAYBOOK % dict(results=tmp_path / "results.json"))
    run = ansible_run.playbook(str(playbook), inventory, extra_env={"ANSIBLE_DEPRECATION_WARNINGS": "1"})
    assert run.rc == 0, run
    with open(str(tmp_path / "results.json")) as handle:
        results = json.load(handle)
    # The action plugin ran (a module would not refuse at step "input" before touching the node).
    action = results["action"]
    assert action["refused"] is True and action["step"] == "input", action
    assert "config_path must be an absolute path" in action["msg"]
    # The node module ran and validated its own arguments.
    assert "staged_main" in results["module"]["msg"], results["module"]
    assert "gpurt.runtime_gate.containerd_runtime has been deprecated" in run.text
    assert "gpurt.runtime_gate.containerd_config_files has been deprecated" in run.text
