"""Issue 34: the summary callback runs in ansible-playbook's one main process for every host's result. On
ansible-core 2.19+ reading result._result makes the whole result native (a walk of every value, the gather's
included) on first read; the callback reads its few keys only, and collects the same lines and warnings."""
import pytest

from ansible.executor.task_result import CallbackTaskResult
from ansible.inventory.host import Host
from ansible.playbook.task import Task

from ansible_collections.gpurt.runtime_gate.plugins.callback import summary


def callback_result(action, data):
    task = Task()
    task.action = action
    return CallbackTaskResult(Host("gpu-000"), task, data, {})


def big_gather_result():
    return {"changed": False, "warnings": ["unknown variable gpurt_runtimeclass_src; did you mean ..."],
            "files": [{"path": "/etc/containerd/conf.d/%d.toml" % i, "parsed": {"runtimes_by_plugin": {"p": ["a"]}}}
                      for i in range(50)]}


def test_a_gather_result_is_read_without_making_all_of_it_native():
    result = callback_result("gpurt.runtime_gate.containerd_config_info", big_gather_result())
    if not hasattr(result, "_return_data"):
        pytest.skip("ansible-core before 2.19: a callback's result is a plain dict")
    callback = summary.CallbackModule()
    callback.v2_runner_on_ok(result)
    # functools.cached_property keeps the native copy in the instance: not made
    assert "result" not in vars(result)
    assert callback._warnings == ["unknown variable gpurt_runtimeclass_src; did you mean ..."]


def test_it_collects_what_reading_the_whole_result_collected():
    lines = ["gpu-000: OK", "checked 1 of 1 node(s): 1 OK"]
    for data in ({"gpurt_summary_lines": lines}, {"ansible_facts": {"gpurt_summary_lines": lines}}):
        callback = summary.CallbackModule()
        callback.v2_runner_on_ok(callback_result("gpurt.runtime_gate.audit_report", dict(data, changed=False)))
        assert callback._blocks == [lines]
    # plays/not_judged.yml's fact (a task of the collection), then a failed task's message
    callback = summary.CallbackModule()
    said = {"task": "List the RuntimeClasses and the Nodes once", "msg": "no kubeconfig"}
    callback.v2_runner_on_ok(callback_result("gpurt.runtime_gate.x", {"ansible_facts": {"gpurt_not_judged": said}}))
    assert callback._failures == [((said["task"], said["msg"]), ["gpu-000"])]
    callback = summary.CallbackModule()
    failed = callback_result("gpurt.runtime_gate.controller_check", {"msg": "bad input", "warnings": ["typo?"]})
    callback.v2_runner_on_failed(failed)
    assert callback._failures == [((failed._task.get_name(), "bad input"), ["gpu-000"])]
    assert callback._warnings == ["typo?"]
