# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Restart detection: why containerd must restart although no file changes (a restart that did not
happen after an earlier write), judged on the running view."""

import os

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _restart_marker as restart_marker
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._remediation.ownership import is_own


def restart_pending(gathered, specs, opts):
    """Why containerd must restart although no file changes (a restart that did not happen: a
    failed handler, a run killed after writing), or None. The role's restart marker first: it is
    there from the write until the proof after the restart. Else judged on the running view: `crictl
    info` lacks a wanted runtime the loaded config has; else the daemon started before the role's
    own drop-ins were last written. Never for other tools' pending edits, which nobody proved."""
    marker = gathered.get("restart_marker")
    seen = _by_running_view(gathered, specs, opts)
    if marker:
        return "; ".join([restart_marker.line(marker)] + ([seen] if seen else []))
    return seen


def _by_running_view(gathered, specs, opts):
    running = gathered.get("running") or {}
    if running.get("source") == "crictl":
        names = set(running.get("runtimes") or [])
        details = running.get("runtime_details") or {}
        stale = []
        for spec in specs:
            binary = (spec["table"].get("options") or {}).get("BinaryName")
            if spec["name"] not in names:
                stale.append("%s is not running" % spec["name"])
            elif binary and (details.get(spec["name"]) or {}).get("binary_name") not in (None, "", binary):
                stale.append("%s runs %s, not %s" % (spec["name"], details[spec["name"]]["binary_name"], binary))
        if stale:
            return "the running containerd (crictl info) differs from its loaded config: %s" % "; ".join(stale)
        return None
    started = running.get("daemon_started")
    if running.get("source") == "process" and started:
        dropin_dir = opts["dropin_dir"].rstrip("/")
        own = [f["path"] for f in gathered.get("files") or []
               if os.path.dirname(f["path"]) == dropin_dir and is_own(f.get("content"))]
        newest = max([(gathered.get("file_states") or {}).get(p, {}).get("mtime") or 0 for p in own] or [0])
        if newest > started:
            return ("containerd started before the role's drop-ins were last written (%d s earlier): the restart "
                    "after that write did not happen" % int(newest - started))
    return None
