"""Issue 34: an action plugin's worker, forked from ansible-playbook's main process, leaves the heap it inherited out
of garbage collection (a full collection there walked the main process's every object: 45 ms in the gather's
zip build); a process nobody forked freezes nothing."""
import gc
import importlib
import multiprocessing

import pytest
from ansible.plugins.action import ActionBase

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _worker_action as worker_action
from tests.lib import module_docs


def _freeze_in_child(conn, inherited):
    frozen = worker_action.freeze_inherited_heap()
    conn.send((frozen, gc.get_freeze_count(), any(obj is inherited for obj in gc.get_objects())))
    conn.close()


@pytest.fixture
def no_frozen_objects():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_a_forked_worker_freezes_what_it_inherited(no_frozen_objects):
    inherited = {"from": ["the", "main", "process"]}  # a tracked object the child inherits
    parent, child = multiprocessing.get_context("fork").Pipe()
    process = multiprocessing.get_context("fork").Process(target=_freeze_in_child, args=(child, inherited))
    process.start()
    frozen, freeze_count, still_collected = parent.recv()
    process.join(10)
    assert frozen is True
    assert freeze_count > 0
    # gc.get_objects() lists what the collector walks: frozen objects are not among them
    assert not still_collected
    assert gc.get_freeze_count() == 0  # the parent is untouched


def test_a_process_nobody_forked_freezes_nothing(no_frozen_objects):
    assert worker_action.freeze_inherited_heap() is False
    assert gc.get_freeze_count() == 0


class _ReachedActionBase(Exception):
    pass


@pytest.mark.parametrize("name", module_docs.action_names())
def test_every_action_plugin_freezes_its_workers_heap_first(name, monkeypatch):
    action = importlib.import_module("ansible_collections.gpurt.runtime_gate.plugins.action." + name).ActionModule
    assert issubclass(action, worker_action.WorkerAction)
    calls = []
    monkeypatch.setattr(worker_action, "freeze_inherited_heap", lambda: calls.append("freeze"))

    def action_base_run(self, tmp=None, task_vars=None):
        calls.append("ActionBase.run")
        raise _ReachedActionBase()
    monkeypatch.setattr(ActionBase, "run", action_base_run)
    # every plugin calls ActionBase.run before anything else: the freeze must come before it
    with pytest.raises(_ReachedActionBase):
        action.__new__(action).run(None, {})
    assert calls == ["freeze", "ActionBase.run"]
