# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""File-system facts a node must report itself: what an imports pattern matches,
which files sit in drop-in dirs, whether binaries and CDI host paths exist.

Runs on target hosts: Python 3.8+, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import json
import os
import re

_MAGIC = re.compile(r"[*?\[]")


def _segment_matches(name, segment):
    # Go's filepath.Match spells a negated class [^...]; fnmatch spells it [!...].
    return fnmatch.fnmatchcase(name, segment.replace("[^", "[!"))


def go_glob(pattern):
    """Go's filepath.Glob: sorted matches, '*' never crosses '/', dot-files match."""
    if not _MAGIC.search(pattern):
        return [pattern] if os.path.lexists(pattern) else []
    head, tail = os.path.split(pattern)
    if head and head != pattern and _MAGIC.search(head):
        dirs = go_glob(head)
    else:
        dirs = [head or "."]
    matches = []
    for directory in dirs:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            if _segment_matches(name, tail):
                matches.append(os.path.join(directory, name) if head else name)
    return matches


def resolve_import(pattern, config_path, base_dir=None):
    """The path containerd reads for an imports entry. 1.7+ resolves a relative entry
    against the declaring file's dir; 1.6 against its working directory (base_dir)."""
    if os.path.isabs(pattern):
        return pattern
    return os.path.join(base_dir or os.path.dirname(config_path) or ".", pattern)


def import_matches(pattern, config_path, base_dir=None):
    """Files an imports entry loads. containerd globs only entries containing '*';
    any other entry is one literal path (1.x fails on a missing one, 2.x skips it)."""
    resolved = resolve_import(pattern, config_path, base_dir)
    if "*" in resolved:
        return resolved, [path for path in go_glob(resolved) if os.path.isfile(path)]
    return resolved, [resolved] if os.path.isfile(resolved) else []


def glob_matches_path(pattern, path):
    """Whether an imports entry would load path, as containerd reads entries: only an entry
    containing '*' is a glob (Go's filepath.Match per path segment), any other is one path."""
    if "*" not in pattern:
        return os.path.normpath(pattern) == os.path.normpath(path)
    want = pattern.split("/")
    have = path.split("/")
    return len(want) == len(have) and all(_segment_matches(name, seg) for name, seg in zip(have, want))


def read_text(path, max_bytes):
    """(text, error) for a small text file; never raises."""
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            return None, "file is %d bytes, more than the %d read" % (size, max_bytes)
        with open(path, "rb") as handle:
            data = handle.read()
    except (IOError, OSError) as exc:
        return None, "cannot read: %s" % (exc.strerror or exc)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, "not UTF-8 text (bad byte at offset %d)" % exc.start


def path_facts(path):
    """exists / is_file / executable for a path, resolving PATH lookups for bare names."""
    resolved = path
    if os.sep not in path:
        for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
            candidate = os.path.join(directory, path)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                resolved = candidate
                break
    exists = os.path.exists(resolved)
    return {
        "path": path,
        "resolved": resolved,
        "exists": exists,
        "is_file": os.path.isfile(resolved),
        "executable": exists and os.path.isfile(resolved) and os.access(resolved, os.X_OK),
    }


def list_files(directory):
    """Regular files directly inside directory, sorted; [] when it does not exist."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names if os.path.isfile(os.path.join(directory, n))]


# CDI specs are JSON or YAML; targets have no YAML parser, and the keys that name
# host paths are simple scalars, so YAML specs are read line by line.
_CDI_YAML_PATH = re.compile(r"^[ \t-]*(hostPath|path)[ \t]*:[ \t]*[\"']?([^\"'#\s]+)", re.MULTILINE)
_CDI_KEYS = ("hostPath", "path")


def _json_paths(node, found):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _CDI_KEYS and isinstance(value, str):
                found.append((key, value))
            else:
                _json_paths(value, found)
    elif isinstance(node, list):
        for item in node:
            _json_paths(item, found)


def cdi_spec_host_paths(text, path):
    """[(key, host_path)] named by a CDI spec: device nodes, mounts and hooks.

    A deviceNode's ``path`` is its container path, used on the host too when it
    has no ``hostPath``; both count, as the CDI runtime resolves them that way.
    """
    found = []
    if path.endswith(".json"):
        _json_paths(json.loads(text), found)
    else:
        found = _CDI_YAML_PATH.findall(text)
    paths = []
    for _key, value in found:
        if value.startswith("/") and value not in paths:
            paths.append(value)
    return paths
