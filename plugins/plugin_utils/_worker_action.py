# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The base of every action plugin of the collection.

ansible-playbook runs an action plugin in a worker process it forks for one task on one host, and the worker
inherits the main process's whole heap: the inventory, the plays, every host's variables and results so far. A full
garbage collection in the worker walks all of it, and writing each object's collector header copies its memory page
from the parent (copy on write). Measured (issue 34, N = 10 and 200): the first gather worker of an audit, building
the module's zip while every other worker waits on its lock, spent 45 of its 150 ms of CPU in one such collection.
So the worker freezes what it inherited (gc.freeze) before anything else, and the collector leaves those objects
alone. The worker exits after its task, so nothing frozen outlives it; outside a forked worker (a test calling a
plugin in its own process) nothing is frozen."""

import gc
import multiprocessing

from ansible.plugins.action import ActionBase


def freeze_inherited_heap():
    """In a process forked by multiprocessing, leave every object it has so far out of garbage collection.
    True when frozen; in a process nobody forked, nothing is done (False)."""
    if multiprocessing.parent_process() is None:
        return False
    gc.freeze()
    return True


class WorkerAction(ActionBase):
    """An action plugin that freezes the heap its worker inherited first (every plugin calls ActionBase.run first)."""

    def run(self, tmp=None, task_vars=None):
        freeze_inherited_heap()
        return super(WorkerAction, self).run(tmp, task_vars)
