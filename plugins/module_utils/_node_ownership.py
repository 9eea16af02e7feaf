# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node steps of register_runtimes around the write: the ownership evidence of the files a plan
touches (with the texts of the generator inputs beside them, which the controller may edit instead),
the proof after the restart (the running daemon's view and the load of the config the service
starts with), and putting the written files back from their backups.

Runs on target hosts: Python 3.8+, standard library only.
"""

import os

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _ownership as ownership
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_gather as node_gather
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._node_remediation import file_state, write_atomically


def evidence(params):
    """{ownership: the evidence of params['owned_paths'] (machine paths) under params['host_root'],
    inputs: {path: {text, error, state}} of the templates beside them and the inputs their headers name}."""
    root = params.get("host_root") or "/"
    paths = list(params.get("owned_paths") or [])
    found = ownership.gather(paths, root=root, service_names=params.get("service_names") or ("containerd",))
    inputs = {}
    for file_ev in found["files"].values():
        candidates = [p for p in file_ev.get("inputs_beside") or [] if not p.endswith(".part")]
        named = file_ev.get("header_names")
        if named and "/" not in named:
            candidates.append(os.path.join(os.path.dirname(file_ev["path"]), named))
        for path in candidates:
            if path in inputs:
                continue
            text, error = host_paths.read_text(path, params.get("max_file_bytes") or 1048576, timeout=5) \
                if os.path.isfile(path) else (None, None)
            inputs[path] = {"text": text, "error": error, "state": file_state(path)}
    return {"ownership": found, "inputs": inputs}


def after_restart(params):
    """The gather of the config the service starts with (params['config_path'] or the --config of
    the unit's ExecStart), with the running view: what the restarted daemon has."""
    return node_gather.gather(dict(params, gather_running=True))


def restore(params):
    """Put back params['files'] ({path, backup}): a backup is copied over its file, a file without one
    (new in the write) is removed. {restored: [paths], removed: [paths], problems: [lines]}."""
    restored, removed, problems = [], [], []
    for item in params.get("files") or []:
        path, backup = item["path"], item.get("backup")
        try:
            if backup:
                with open(backup) as handle:
                    write_atomically(path, handle.read(), file_state(path) if os.path.exists(path) else {})
                restored.append(path)
            elif item.get("existed"):
                problems.append("%s: no backup was kept (backup=false), so it stays as the run wrote it" % path)
            elif os.path.lexists(path):
                os.remove(path)
                removed.append(path)
        except (IOError, OSError) as exc:
            problems.append("%s: %s" % (path, exc.strerror or exc))
    return {"put_back": restored, "removed_new": removed, "problems": problems}
