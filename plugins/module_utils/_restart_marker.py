# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restart marker: a small JSON file on the node, in a directory the role owns (state_dir, under
the node's root), written by the role's write step before a file changes and removed only once the
proof after the restart succeeded. While it is there a restart is pending, whatever the running view
can tell (no crictl, no systemd, a run killed between the write and the restart, a restart that
failed). One marker per main config: restart-pending.json for /etc/containerd/config.toml.

Runs on target hosts: Python 3.8+, standard library only. The controller imports path() and line() only."""

import hashlib
import json
import os
import tempfile
import time

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths

NAME = "restart-pending.json"
_MAX_BYTES = 65536


def line(marker):
    """What a restart marker (read()'s result) says, in one line."""
    if marker.get("error"):
        return "the role's restart marker %s says a restart is pending (%s)" % (marker["path"], marker["error"])
    return "the role wrote %s at %s and the restart after that write was not proved (restart marker %s)" % (
        ", ".join(marker.get("files") or []) or "files", marker.get("time") or "an unknown time", marker["path"])


def path(host_root, state_dir, config_path):
    """The marker's path on this machine for the main config config_path (as this machine names it)."""
    node_config = host_paths.on_node(host_root or "/", config_path)
    name = NAME
    if node_config != containerd_facts.CONFIG_PATH:
        name = "restart-pending-%s.json" % hashlib.sha256(node_config.encode("utf-8")).hexdigest()[:12]
    return host_paths.on_machine(host_root or "/", os.path.join(state_dir or containerd_facts.STATE_DIR, name))


def _path_of(params, config_path):
    return path(params.get("host_root"), params.get("state_dir"), config_path)


def read(params, config_path):
    """None when no restart is pending for config_path; else {path, written_at, time, files, error}. A
    marker that cannot be read or parsed still says a restart is pending (error says why it is unread)."""
    where = _path_of(params, config_path)
    if not os.path.lexists(where):
        return None
    out = {"path": where, "written_at": None, "time": None, "files": [], "error": None}
    text, error = host_paths.read_text(where, _MAX_BYTES, timeout=5)
    if error is not None:
        out["error"] = error
        return out
    try:
        doc = json.loads(text)
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
        out.update(written_at=float(doc["written_at"]), time=str(doc.get("time") or ""),
                   files=[str(p) for p in doc.get("files") or []])
    except (ValueError, KeyError, TypeError) as exc:
        out["error"] = "not a restart marker of this role (%s)" % exc
    return out


def write(params, config_path, files, now=None):
    """Write (atomically) the marker for config_path naming files (machine paths), with those of a marker
    already there (an earlier write whose restart is still pending); returns its path."""
    where = _path_of(params, config_path)
    earlier = read(params, config_path) or {}
    merged = list(earlier.get("files") or [])
    merged += [p for p in files if p not in merged]
    now = time.time() if now is None else now
    doc = {"written_at": now, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
           "config_path": config_path, "files": merged,
           "why": "gpurt.runtime_gate containerd_runtime wrote these files; containerd must restart and the run "
                  "must prove the restarted daemon before this file goes"}
    directory = os.path.dirname(where)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=directory, prefix=".gpurt-", suffix=".tmp")
    try:
        with os.fdopen(handle, "w") as out:
            json.dump(doc, out, indent=1, sort_keys=True)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, where)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return where


def remove(params, config_path):
    """Remove the marker of config_path (no error when it is not there); returns its path."""
    where = _path_of(params, config_path)
    if os.path.lexists(where):
        os.remove(where)
    return where
