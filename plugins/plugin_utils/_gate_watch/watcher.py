# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the gate does as Nodes change, decided without I/O (the event source does the I/O):

- a Node whose verified label names a handler its live list no longer has is fenced at once, once:
  while that fence stands, a flapping Node is not fenced again;
- a change that calls for proof (signals.change_reasons, a fence, a new Node) schedules a re-audit of
  the Node once it has been stable for `settle` seconds; a later change pushes it back;
- labels older than `max_age` (or with no readable check time) schedule a re-audit too;
- due re-audits leave in batches of at most `max_concurrent` Nodes, one event per batch: the rulebook
  runs its actions one at a time, so no more re-audits than that run at once. Nothing is dropped: a
  Node that is due waits for the next batch.
"""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._gate_watch.signals import (
    NodeView, change_reasons, checked_seconds)

NODE_CHANGED = "node_changed"
LABEL_STALE = "label_stale"
HANDLER_LOST = "handler_lost"
# A fence that did not take (an apiserver error) is tried again after this many seconds.
FENCE_RETRY = 5.0


class GateWatcher(object):
    def __init__(self, settle, max_concurrent, max_age):
        if settle < 0:
            raise ValueError("settle must be 0 or more seconds (got %r)" % settle)
        if max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1 (got %r)" % max_concurrent)
        if max_age <= 0:
            raise ValueError("max_age must be a positive number of seconds (got %r)" % max_age)
        self.settle = float(settle)
        self.max_concurrent = int(max_concurrent)
        self.max_age = float(max_age)
        self.nodes = {}          # name -> NodeView, the last version seen
        self.pending = {}        # name -> {"type", "reasons", "due"}
        self.fencing = {}        # name -> (handlers, uid, time of the last fence request, whether it failed)
        self.stale_reported = {}  # name -> the check time a label_stale was scheduled for
        self.silent = set()      # Nodes that list no handler at all (named once each)
        self.listed = False

    # ----- what the watch sees ---------------------------------------------------------------------
    def relisted(self, objects, now):
        """A full list (the first, or after 410 Gone). Nodes gone from it are forgotten; the others are
        observed as changes against what was known, so nothing that changed in a gap is missed."""
        first = not self.listed
        self.listed = True
        seen = set()
        fences = []
        for obj in objects:
            view = NodeView(obj)
            seen.add(view.name)
            fences.extend(self._observe(view, now, new_is_change=not first))
        for name in list(self.nodes):
            if name not in seen:
                self._forget(name)
        return fences

    def observe(self, kind, obj, now):
        """One watch event (ADDED, MODIFIED, DELETED); returns the fences to make at once."""
        view = NodeView(obj)
        if not view.name:
            return []
        if kind == "DELETED":
            self._forget(view.name)
            return []
        return self._observe(view, now, new_is_change=True)

    def _forget(self, name):
        for table in (self.nodes, self.pending, self.fencing, self.stale_reported):
            table.pop(name, None)
        self.silent.discard(name)

    def _observe(self, view, now, new_is_change):
        old = self.nodes.get(view.name)
        self.nodes[view.name] = view
        if old is not None and old.uid != view.uid:
            self.fencing.pop(view.name, None)
            self._schedule(view.name, NODE_CHANGED, "re-created (new uid)", now)
        elif old is None:
            if new_is_change:
                self._schedule(view.name, NODE_CHANGED, "new Node", now)
        else:
            reasons = change_reasons(old, view)
            for reason in reasons:
                self._schedule(view.name, NODE_CHANGED, reason, now)
            if old.live != view.live and view.name in self.pending and not reasons:
                # the handler list moved again (a flap): wait until it is stable
                self.pending[view.name]["due"] = now + self.settle
        if view.live is None:
            self.silent.add(view.name)
        else:
            self.silent.discard(view.name)
        return self._fences_for(view, now)

    def _fences_for(self, view, now):
        lost = view.lost
        if not lost:
            self.fencing.pop(view.name, None)
            return []
        asked = self.fencing.get(view.name)
        if asked and asked[0] >= lost and asked[1] == view.uid and now - asked[2] < FENCE_RETRY:
            return []  # asked already; the watch has not shown its result yet
        self.fencing[view.name] = (lost, view.uid, now, False)
        return [(view, sorted(lost))]

    def _schedule(self, name, kind, reason, now):
        entry = self.pending.get(name)
        if entry is None:
            entry = self.pending[name] = {"type": kind, "reasons": [], "due": now}
        if kind == NODE_CHANGED:
            entry["type"] = NODE_CHANGED
            entry["due"] = now + self.settle
        if reason not in entry["reasons"]:
            entry["reasons"].append(reason)

    # ----- after a fence, and as time passes -------------------------------------------------------
    def fenced(self, view, handlers, result, now):
        """The handler_lost event for a fence the source made (result: node_fence.fence()'s, or
        {"action": "failed", "detail": ...}); schedules the re-audit that may earn the labels back."""
        action = result.get("action")
        if action == "failed":
            # tried again by tick() after FENCE_RETRY
            self.fencing[view.name] = (frozenset(handlers), view.uid, now, True)
        self._schedule(view.name, NODE_CHANGED, "lost handler%s %s" % (
            "s" if len(handlers) > 1 else "", ", ".join(handlers)), now)
        return {"type": HANDLER_LOST, "node": view.name, "handlers": list(handlers),
                "live_handlers": sorted(view.live or []), "fence": action,
                "detail": result.get("detail") or ""}

    def tick(self, now):
        """(fences, events): fences to try again, and the re-audit batches that are due."""
        fences = []
        for name, (_handlers, _uid, asked, failed) in list(self.fencing.items()):
            view = self.nodes.get(name)
            if failed and view is not None and view.lost and now - asked >= FENCE_RETRY:
                self.fencing[name] = (view.lost, view.uid, now, False)
                fences.append((view, sorted(view.lost)))
        self._stale_scan(now)
        return fences, self._batches(now)

    def _stale_scan(self, wall_now):
        for name, view in self.nodes.items():
            if not view.claimed:
                continue
            checked = checked_seconds(view)
            if checked is not None and wall_now - checked <= self.max_age:
                continue
            if self.stale_reported.get(name, ()) == view.checked_at or name in self.pending:
                continue
            self.stale_reported[name] = view.checked_at
            self._schedule(name, LABEL_STALE, "verified labels checked at %s, older than the maximum age" % (
                view.checked_at) if checked is not None else "verified labels carry no readable check time",
                wall_now)

    def _batches(self, now):
        due = sorted((entry["due"], name) for name, entry in self.pending.items() if entry["due"] <= now)
        events = []
        by_type = {}
        for _due, name in due:
            entry = self.pending.pop(name)
            by_type.setdefault(entry["type"], []).append((name, entry["reasons"]))
        for kind in (NODE_CHANGED, LABEL_STALE):
            items = by_type.get(kind, [])
            for start in range(0, len(items), self.max_concurrent):
                chunk = items[start:start + self.max_concurrent]
                events.append({"type": kind, "nodes": [name for name, _r in chunk],
                               "reasons": dict((name, reasons) for name, reasons in chunk)})
        return events

    def take_silent(self, reported):
        """The silent Nodes not yet in reported (a set the caller keeps), each named once."""
        fresh = sorted(self.silent - reported)
        reported.intersection_update(self.silent)  # a Node that speaks again is named again if it falls silent
        reported.update(fresh)
        return fresh
