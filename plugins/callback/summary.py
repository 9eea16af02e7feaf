# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

DOCUMENTATION = r"""
---
name: summary
type: aggregate
short_description: Print the runtime gate verdict as plain lines at the end of the run
description:
  - Collects the summary lines that M(gpurt.runtime_gate.audit_report) and
    M(gpurt.runtime_gate.runtime_check) return and prints them, one per line and unindented,
    after the play recap, so that scripts and CI logs can grep for lines such as
    C(MISSING=<handler>) and C(OK). A playbook without such a module (C(prevent.yml)) sets them as the fact
    C(gpurt_summary_lines).
  - The lines are built by the collection's one formatter of findings; any control character in
    them (a handler with a newline, an ANSI escape) is printed escaped, so no value can print a
    line of its own, such as a bare C(OK).
  - A run of one of the collection's playbooks that failed before judging (bad input, no access to the
    cluster, a controller that cannot run the collection) prints C(NOT JUDGED) lines instead, with the
    failed task and its message, so that the last lines of every run say what happened, then the warnings
    of the collection's tasks before it (an unknown variable and the name it likely meant), last. A playbook
    that stops before judging may set the fact C(gpurt_not_judged) (C(task), C(msg)) instead of failing that
    task; the task failing after it, with a fixed message, is then not repeated here.
  - Enable it with C(callbacks_enabled = gpurt.runtime_gate.summary) in C(ansible.cfg) or
    E(ANSIBLE_CALLBACKS_ENABLED).
version_added: 0.1.0
author:
  - gpurt.runtime_gate developers (@gpurt-runtime-gate)
requirements:
  - enabled in callbacks_enabled
"""

import os

from ansible.plugins.callback import CallbackBase

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.model import one_line
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._collection import COLLECTION_ROOT

try:  # ansible-core 2.19+: callbacks read task results through a copy made native in full on first read
    from ansible.utils.vars import transform_to_native_types as _native
except ImportError:  # before 2.19 a callback's result is a plain dict already
    _native = None

RESULT_KEY = "gpurt_summary_lines"
# A playbook's set_fact of why it stopped before judging (plays/not_judged.yml): the task and its message, printed
# here once; the task that then fails with a fixed message is not repeated.
NOT_JUDGED_KEY = "gpurt_not_judged"
_REAL_ROOT = os.path.realpath(COLLECTION_ROOT)
# Failures shown when nothing was judged; the rest are counted.
SHOWN_FAILURES = 5
SHOWN_MESSAGE_LINES = 10


def _items(result, *keys):
    """The keys (those present) of a task's result, as a callback reads them. Only these are made native: the
    whole result (result._result on ansible-core 2.19+) would be walked for each host's result, gather results
    included, in the controller's one main process, to read a few small keys."""
    raw = getattr(result, "_return_data", None)
    if _native is None or not isinstance(raw, dict):
        raw = result._result
        return dict((key, raw[key]) for key in keys if key in raw)
    return _native(dict((key, raw[key]) for key in keys if key in raw))


def _ours(task):
    """Whether a task belongs to this collection: its action, or a playbook or role of it."""
    action = getattr(task, "action", "") or ""
    if action.startswith("gpurt.runtime_gate."):
        return True
    path = task.get_path() if hasattr(task, "get_path") else None
    path = os.path.realpath(path.rsplit(":", 1)[0]) if path else ""
    return path.startswith(_REAL_ROOT + os.sep)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpurt.runtime_gate.summary"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self._blocks = []
        self._failures = []
        self._warnings = []
        self._stopped = False

    def _collect(self, result, items):
        # a module's result, or a playbook's set_fact of it (prevent.yml)
        lines = items.get(RESULT_KEY) or (items.get("ansible_facts") or {}).get(RESULT_KEY)
        if isinstance(lines, list) and lines and lines not in self._blocks:
            self._blocks.append(lines)

    def _not_judged(self, result, items):
        said = (items.get("ansible_facts") or {}).get(NOT_JUDGED_KEY)
        if isinstance(said, dict) and not self._stopped:
            self._failure(result, "failed", said.get("task"), said.get("msg"))
            self._stopped = True

    def _failure(self, result, what, task=None, msg=None):
        if not _ours(result._task) or self._stopped:
            return
        task = task or result._task.get_name()
        msg = msg or _items(result, "msg").get("msg") or what
        msg = "\n".join(str(m) for m in msg) if isinstance(msg, list) else str(msg)
        key = (task, msg)
        hosts = [f for f in self._failures if f[0] == key]
        if hosts:
            hosts[0][1].append(result._host.get_name())
        else:
            self._failures.append((key, [result._host.get_name()]))

    def _warned(self, result, items):
        """The warnings of the collection's tasks (an unknown variable and the name it likely meant): a run
        that stops before judging repeats them last, where CI shows it."""
        if not _ours(result._task):
            return
        for warning in items.get("warnings") or []:
            text = one_line(warning if isinstance(warning, str) else getattr(warning, "msg", warning))
            if text not in self._warnings:
                self._warnings.append(text)

    def v2_runner_on_ok(self, result):
        items = _items(result, "warnings", RESULT_KEY, "ansible_facts")
        self._warned(result, items)
        self._collect(result, items)
        self._not_judged(result, items)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        items = _items(result, "warnings", RESULT_KEY, "ansible_facts")
        self._warned(result, items)
        self._collect(result, items)
        if not ignore_errors:
            self._failure(result, "failed")

    def v2_runner_on_unreachable(self, result):
        if not result._task.ignore_unreachable:
            self._failure(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        if not self._blocks and not self._failures:
            return
        self._display.display("RUNTIME GATE " + "*" * 66)
        for lines in self._blocks:
            for line in lines:
                self._display.display(one_line(line))
        if self._blocks:
            return
        # Nothing was judged: say which task of the collection stopped the run, and why.
        for (task, msg), hosts in self._failures[:SHOWN_FAILURES]:
            text = [one_line(line) for line in msg.splitlines() if line.strip()] or ["failed"]
            self._display.display("NOT JUDGED: %s (%s): %s" % (one_line(task), one_line(", ".join(hosts)), text[0]))
            for line in text[1:SHOWN_MESSAGE_LINES]:
                self._display.display("  " + line)
        if len(self._failures) > SHOWN_FAILURES:
            self._display.display("NOT JUDGED: %d more failed task(s), see above" % (len(self._failures) - SHOWN_FAILURES))
        for warning in self._warnings:
            self._display.display("NOT JUDGED, and warned before: %s" % warning)
