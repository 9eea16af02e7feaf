"""A task run in a loop that fails: Ansible sums it up as "One or more items failed", the cause only in
the item lines above. Every looped task of our playbooks that calls one of our modules sits in a block
whose rescue (plays/loop_failed.yml) fails again with each failed item and its own message; run here
with the real ansible-playbook."""
import os

import pytest
import yaml

from tests.lib import ansible_run

pytestmark = pytest.mark.integration

PLAYBOOKS = os.path.join(ansible_run.REPO, "playbooks")
RESCUE = os.path.join(PLAYBOOKS, "plays", "loop_failed.yml")


def test_the_failure_names_each_failed_item_and_its_cause(tmp_path):
    play = tmp_path / "loop.yml"
    play.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - block:\n"
        "        - ansible.builtin.fail:\n            msg: \"apiserver said 422 for {{ item.name }}\"\n"
        "          when: item.name != 'nvidia'\n"
        "          loop: [{name: nvidia}, {name: nvidia-cdi}, {name: kata}]\n"
        "          loop_control: {label: \"{{ item.name }}\"}\n"
        "      rescue:\n"
        "        - ansible.builtin.include_tasks: %s\n"
        "          vars: {_gpurt_loop_what: Writing the RuntimeClasses}\n" % RESCUE)
    inventory = ansible_run.write_inventory(str(tmp_path / "hosts.json"), {})
    run = ansible_run.playbook(str(play), inventory, timeout=120)
    assert run.rc == 2, run
    assert ("Writing the RuntimeClasses failed: nvidia-cdi: apiserver said 422 for nvidia-cdi; kata: apiserver said "
            "422 for kata") in run.text
    assert "nvidia: apiserver" not in run.text.split("Writing the RuntimeClasses failed:")[-1]


def _looped_module_tasks(tasks, rescued):
    """[(task name, rescued by loop_failed.yml)] for each looped task that calls a gpurt module."""
    out = []
    tasks = tasks or []
    for index, task in enumerate(tasks):
        if "block" in task:
            includes = [t.get("ansible.builtin.include_tasks") for t in task.get("rescue") or []]
            out += _looped_module_tasks(task["block"], rescued or "plays/loop_failed.yml" in includes
                                        or any("ansible.builtin.fail" in t for t in task.get("rescue") or []))
            continue
        modules = [k for k in task if k.startswith("gpurt.runtime_gate.")]
        if modules and "loop" in task:
            # or its items' failures are said by the task after it (prevent.yml: plays/refuse.yml, the reason once)
            said = task.get("failed_when") is False and "plays/refuse.yml" in str(
                (tasks[index + 1:index + 2] or [{}])[0].get("ansible.builtin.include_tasks"))
            out.append((task.get("name"), rescued or said))
    return out


def test_every_looped_module_task_says_its_cause():
    found = []
    for name in sorted(os.listdir(PLAYBOOKS)):
        if not name.endswith(".yml"):
            continue
        with open(os.path.join(PLAYBOOKS, name)) as handle:
            plays = yaml.safe_load(handle) or []
        for play in plays:
            found += [(name, task, ok) for task, ok in _looped_module_tasks(play.get("tasks"), False)]
    assert found, "no looped module task found: the walk is broken"
    assert [(n, t) for n, t, ok in found if not ok] == []
