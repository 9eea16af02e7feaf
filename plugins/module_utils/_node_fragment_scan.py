# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node side: find containerd config fragments beside the config tree that nothing imports, by
their content (a top-level `version` or a `plugins` table), not by the name of their directory.

Looked at: the config's directory and its subdirectories (two levels), the known tools' drop-in
directories and the directories the node's imports name. Bounded: entries listed per directory,
files read, bytes per file and in all; what a cap left out is reported, never hidden. Then at most
MAX_LOADS of the fragments found are loaded by the node's containerd (_node_fragment_load, imported
only by a gather that found one: most nodes have none, and a module compiles what it imports).

Runs on target hosts: Python 3.8+, standard library only."""

import os
import re

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths

MAX_DEPTH = 2  # the config dir, its subdirs (k0s' containerd.d, Talos' conf.d) and theirs
MAX_ENTRIES_PER_DIR = 512
MAX_FILES_READ = 128
MAX_BYTES_PER_FILE = 262144
MAX_BYTES_TOTAL = 4194304
MAX_LOADS = 8  # fragments loaded by containerd per gather (load_unreferenced)

# Never a containerd config: keys, certificates, specs, sockets. Not even opened.
_NOT_CONFIG_SUFFIXES = (".pem", ".key", ".crt", ".cert", ".csr", ".json", ".yaml", ".yml", ".sock", ".pid",
                        ".gz", ".xz", ".zst", ".tar", ".so", ".log")
# A top-level `version = N`, a [plugins...] table or a dotted `plugins.` key: what containerd reads.
_FRAGMENT_MARK = re.compile(r"""^[ \t]*(version[ \t]*=[ \t]*\d|\[[ \t]*plugins[ \t]*[.\]]|plugins[ \t]*[.=])""",
                            re.MULTILINE)


def looks_like_fragment(text):
    """Whether a text carries the marks of a containerd config (the controller parses it fully)."""
    return bool(_FRAGMENT_MARK.search(text or ""))


def _note(scan, line):
    if len(scan["truncated"]) < 20:
        scan["truncated"].append(line)


def _list_dir(directory, scan):
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return [], []
    if len(names) > MAX_ENTRIES_PER_DIR:
        _note(scan, "%s: %d entries, the first %d looked at" % (directory, len(names), MAX_ENTRIES_PER_DIR))
        names = names[:MAX_ENTRIES_PER_DIR]
    files, dirs = [], []
    for name in names:
        path = os.path.join(directory, name)
        if os.path.isdir(path):
            if not os.path.islink(path):  # a symlinked dir may loop or leave the tree
                dirs.append(path)
        elif os.path.isfile(path):
            files.append(path)
    return files, dirs


def scan_dirs(config_path, known_dirs, import_dirs):
    """[(directory, depth)] to look in, each once: the config tree, then the named dirs."""
    out = [(os.path.dirname(config_path), MAX_DEPTH)]
    for directory in list(known_dirs or []) + list(import_dirs or []):
        out.append((directory, 0))
    seen = set()
    ordered = []
    for directory, depth in out:
        key = os.path.normpath(directory)
        if key not in seen and directory:
            seen.add(key)
            ordered.append((key, depth))
    return ordered


def find_fragments(config_path, known_dirs, import_dirs, seen, skip, max_bytes, timeout=None):
    """([{path, role: unreferenced, content, error}] for every fragment-looking file not in seen
    nor skip, and a scan summary: dirs looked in, files read, what the caps left out)."""
    scan = {"dirs": [], "files_read": 0, "truncated": []}
    found = []
    per_file = min(max_bytes, MAX_BYTES_PER_FILE)
    budget = [MAX_BYTES_TOTAL]
    queue = scan_dirs(config_path, known_dirs, import_dirs)
    visited = set()
    while queue:
        directory, depth = queue.pop(0)
        if directory in visited:
            continue
        visited.add(directory)
        files, subdirs = _list_dir(directory, scan)
        if not files and not subdirs and not os.path.isdir(directory):
            continue
        scan["dirs"].append(directory)
        if depth > 0:
            queue.extend((d, depth - 1) for d in subdirs)
        for path in files:
            if path in seen or path in skip or path.endswith(_NOT_CONFIG_SUFFIXES):
                continue
            if scan["files_read"] >= MAX_FILES_READ or budget[0] <= 0:
                _note(scan, "%s: not read, the scan read %d files (%d bytes at most)"
                      % (path, MAX_FILES_READ, MAX_BYTES_TOTAL))
                continue
            seen.add(path)
            content, error = host_paths.read_text(path, min(per_file, budget[0]), timeout)
            scan["files_read"] += 1
            if content is None:
                continue  # too large, not text, not a regular file: not a fragment containerd would read
            budget[0] -= len(content)
            if looks_like_fragment(content):
                found.append({"path": path, "role": "unreferenced", "content": content, "error": error})
    return found, scan


def load_unreferenced(binary, config_path, config_text, imports, files, params):
    """Add ``load`` (_node_fragment_load.load_one) to each unreferenced file with a text (at most MAX_LOADS of
    them); return the summary {loaded, cap, left_out: [paths]}. The node's own imports are the main file's
    entries, resolved."""
    own = [entry["resolved"] for entry in imports if entry.get("declared_in") == config_path]
    summary = {"loaded": 0, "cap": MAX_LOADS, "left_out": []}
    for entry in files:
        if entry.get("role") != "unreferenced" or entry.get("content") is None:
            continue
        if summary["loaded"] >= MAX_LOADS:
            summary["left_out"].append(entry["path"])
            continue
        # here only: a node with no such fragment never compiles the loader
        from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_fragment_load as fragment_load
        entry["load"] = fragment_load.load_one(binary, config_text, own, entry["content"], params)
        summary["loaded"] += 1
    return summary
