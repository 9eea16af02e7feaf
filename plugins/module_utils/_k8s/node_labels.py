# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verified handler labels on Nodes: every label under `runtime-gate.gpurt.io/` on a Node written equals
the given proof (`<handler>: "true"` per verified handler), whoever had set it, and the annotation
`runtime-gate.gpurt.io/checked-at` says when. One JSON merge patch per Node whose labels differ from
its proof (a null removes a label whatever manager owns it, which server-side apply cannot do),
carrying the uid of the object judged, so a Node re-created since is refused by the apiserver, never
labeled. The Nodes' state comes from the list the run already made (`current`); only an entry without
it is read first. A Node whose labels already match and whose check time is younger than a quarter of
max_age gets no request at all. A Node that cannot be written is a problem of that Node only: every
other Node is still written (the ones with labels to remove first), then the module fails naming it.
The plan (which handlers are verified) is made on the controller (plugin_utils/_node_labels)."""

import calendar
import re
import time

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _k8s as kube
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.module_session import module_session
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.objects import verified_label_managers

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._k8s.gate_names import (
    CHECKED_AT, LABEL_FIELD_MANAGER as FIELD_MANAGER, LABEL_PREFIX, TIME_FORMAT)

_AGE = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
# A check time is refreshed once it is older than this share of max_age (docs/prevention.md).
REFRESH_SHARE = 4
# A given checked_at later than now by more than this makes labels look fresher than their proof.
CLOCK_SKEW = 60
DEFAULT_MAX_AGE = "24h"


def argument_spec():
    spec = dict(kube.AUTH_ARG_SPEC)
    spec.update(kube.REQUEST_ARG_SPEC)
    spec.update(
        nodes=dict(type="list", elements="dict", required=True),
        field_manager=dict(type="str", default=FIELD_MANAGER),
        max_age=dict(type="str", default=DEFAULT_MAX_AGE),
        checked_at=dict(type="str"),
    )
    return spec


def age_seconds(value, variable="gpurt_label_max_age"):
    """'24h', '90m', '2d', '3600' or an int: seconds. ValueError naming the variable otherwise."""
    if isinstance(value, bool):
        raise ValueError("%s must be a duration such as 24h, 90m or 2d (got %r)" % (variable, value))
    match = _AGE.match(str(value))
    if not match or int(match.group(1)) <= 0:
        raise ValueError("%s must be a positive duration such as 24h, 90m or 2d (got %r)" % (variable, value))
    return int(match.group(1)) * _UNITS[match.group(2)]


def checked_time(value):
    """Seconds since the epoch of a check-time annotation (TIME_FORMAT, UTC), or None when unreadable."""
    if not isinstance(value, str):
        return None
    try:
        return calendar.timegm(time.strptime(value, TIME_FORMAT))
    except ValueError:
        return None


def given_checked_at(value, now):
    """The checked_at option, validated: None, or a TIME_FORMAT time no later than now."""
    if value is None:
        return None
    at = checked_time(value)
    if at is None:
        raise ValueError("checked_at must be a UTC time in the annotation's format %s, such as 2026-12-05T07:40:00Z "
                         "(got %r)" % (TIME_FORMAT, value))
    if at > now + CLOCK_SKEW:
        raise ValueError("checked_at %s is later than now (%s): the labels would look fresher than their proof"
                         % (value, time.strftime(TIME_FORMAT, time.gmtime(now))))
    return value


def ours(labels):
    return dict((k, v) for k, v in (labels or {}).items() if isinstance(k, str) and k.startswith(LABEL_PREFIX))


def _wanted(item):
    """(name, labels, uid, current) of one nodes[] entry; ValueError naming what is wrong. current is
    the Node as the run's list saw it ({labels, checked_at, set_by}), or None: then it is read."""
    return _entry(item)[:4]


def _entry(item):
    """_wanted's four, and the problems the entry brings (the plan's: why it is not labeled as proven)."""
    name = item.get("name") if isinstance(item, dict) else None
    if not isinstance(name, str) or not name:
        raise ValueError("nodes[]: every entry needs a name (the Node's)")
    labels = item.get("labels")
    if not isinstance(labels, dict) or any(not str(k).startswith(LABEL_PREFIX) or v != "true"
                                           for k, v in labels.items()):
        raise ValueError("nodes[%s].labels: only %s<handler>: \"true\" labels are written" % (name, LABEL_PREFIX))
    uid = item.get("uid")
    if uid is not None and (not isinstance(uid, str) or not uid):
        raise ValueError("nodes[%s].uid must be the Node's metadata.uid, a non-empty string (got %r)" % (name, uid))
    current = item.get("current")
    if current is not None:
        if not isinstance(current, dict) or not isinstance(current.get("labels", {}), dict):
            raise ValueError("nodes[%s].current must be {labels, checked_at, set_by}, the Node as listed" % name)
        if uid is None:
            raise ValueError("nodes[%s].current needs uid: the state listed is of one object" % name)
    problems = item.get("problems") or []
    if not isinstance(problems, list) or not all(isinstance(p, str) for p in problems):
        raise ValueError("nodes[%s].problems must be a list of strings" % name)
    return name, dict(labels), uid, current, problems


def _result(name, action, added=(), removed=(), set_by=None, problem=None):
    return dict(node=name, action=action, added=list(added), removed=list(removed), set_by=set_by or {},
                problem=problem)


def _others(managers, field_manager):
    """Who set a label, without this module's own manager."""
    return [who for who in managers or [] if not who.startswith(field_manager + " (")]


def _uid_refused(exc):
    return exc.status == 422 and any(cause.get("field") == "metadata.uid" for cause in exc.causes)


def label_node(session, item, checked_at, field_manager, refresh_after, now, check_mode):
    """One Node's result: {node, action, added, removed, set_by, problem}. action: 'labeled' (labels
    changed), 'refreshed' (only the check time was written), 'unchanged' (nothing sent), 'no node' (it
    does not exist: never created), 'recreated' (not the object judged: not written), 'failed'.
    KubeError only for what stops every Node alike (403, 401, the deadline, the apiserver unreachable)."""
    name, wanted, uid, current = item
    if current is None:
        node = session.get("nodes", name)
        if node is None:
            return _result(name, "no node")
        metadata = node.get("metadata") or {}
        if uid is not None and metadata.get("uid") != uid:
            return _result(name, "recreated", problem="re-created since it was judged (uid %s, now %s): not labeled"
                           % (uid, metadata.get("uid")))
        uid = metadata.get("uid")
        current = dict(labels=metadata.get("labels"), checked_at=(metadata.get("annotations") or {}).get(CHECKED_AT),
                       set_by=verified_label_managers(metadata))
    before = ours(current.get("labels"))
    added = sorted(k for k, v in wanted.items() if before.get(k) != v)
    removed = sorted(k for k in before if k not in wanted)
    at = checked_time(current.get("checked_at"))
    if not added and not removed and at is not None and 0 <= now - at < refresh_after:
        return _result(name, "unchanged")
    set_by = dict((k, _others((current.get("set_by") or {}).get(k), field_manager)) for k in removed)
    set_by = dict((k, v) for k, v in set_by.items() if v)
    metadata = {"uid": uid, "annotations": {CHECKED_AT: checked_at}}
    if added or removed:
        metadata["labels"] = dict([(k, wanted[k]) for k in added] + [(k, None) for k in removed])
    try:
        written = session.merge_patch("nodes", name, {"metadata": metadata}, field_manager, dry_run=check_mode)
    except kube.KubeError as exc:
        if _uid_refused(exc):
            return _result(name, "recreated", problem="re-created since it was judged (uid %s): not labeled" % uid)
        if exc.status in (400, 409, 422):
            return _result(name, "failed", problem="labels not written: %s" % exc)
        raise
    if written is None:
        return _result(name, "no node")
    return _result(name, "labeled" if added or removed else "refreshed", added, removed, set_by)


def _removes_first(items):
    """Nodes that may lose a label first: a removal is never left for last behind the other writes."""
    def losing(item):
        _name, wanted, _uid, current = item
        return current is None or any(k not in wanted for k in ours((current or {}).get("labels")))
    return [i for i in items if losing(i)] + [i for i in items if not losing(i)]


def run(module):
    params = module.params
    result = dict(changed=False, nodes=[], api_requests=0, written=0, checked_at=None, problems=[])
    now = time.time()
    try:
        entries = [_entry(item) for item in params["nodes"]]
        wanted = [entry[:4] for entry in entries]
        refresh_after = age_seconds(params["max_age"], "max_age") / float(REFRESH_SHARE)
        checked_at = given_checked_at(params["checked_at"], now) or time.strftime(TIME_FORMAT, time.gmtime(now))
    except ValueError as exc:
        module.fail_json(msg=str(exc), **result)
    names = [item[0] for item in wanted]
    twice = sorted(set(n for n in names if names.count(n) > 1))
    if twice:
        module.fail_json(msg="nodes[]: each Node once; given more than once: %s" % ", ".join(twice), **result)
    result["checked_at"] = checked_at
    done = {}
    stopped = None
    with module_session(module, result) as session:
        for item in _removes_first(wanted):
            try:
                done[item[0]] = label_node(session, item, checked_at, params["field_manager"], refresh_after, now,
                                           module.check_mode)
            except kube.KubeError as exc:
                stopped = "stopped after %d of %d Node(s): %s" % (len(done), len(wanted), exc)
                break
    result["nodes"] = [done[name] for name in names if name in done]
    result["written"] = sum(1 for item in result["nodes"] if item["action"] in ("labeled", "refreshed"))
    result["changed"] = any(item["action"] == "labeled" for item in result["nodes"])
    given = dict((entry[0], entry[4]) for entry in entries)
    failing = []
    for name in names:
        found = given[name] + ([done[name]["problem"]] if name in done and done[name]["problem"] else [])
        result["problems"].extend("%s: %s" % (name, problem) for problem in found)
        failing.extend([name] if found else [])
    if stopped:
        left = [name for name in names if name not in done]
        more = " and %d more" % (len(left) - 20) if len(left) > 20 else ""
        result["stopped"] = "%s; not written: %s%s" % (stopped, ", ".join(left[:20]), more)
    # Printed after the recap with the verdict, by the summary callback.
    lines = result["problems"] + ([result["stopped"]] if stopped else [])
    if lines:
        result["gpurt_summary_lines"] = ["labels: %d judged Node(s) not labeled as proven%s" % (
            len(failing), "; the run stopped" if stopped else " (every other judged Node carries its proof)")] + [
            "labels: " + line for line in lines]
    if stopped:
        module.fail_json(msg=result["stopped"], **result)
    if result["problems"]:
        module.fail_json(msg="%d Node(s) not labeled as proven (every other Node was written): %s"
                         % (len(failing), "; ".join(result["problems"])), **result)
    module.exit_json(**result)
