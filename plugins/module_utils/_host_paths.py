# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""File-system facts a node must report itself: what an imports pattern matches,
which files sit in drop-in dirs, whether binaries and CDI host paths exist.

Runs on target hosts: Python 3.8+, standard library only.
"""

import fnmatch
import json
import os
import re
import stat
import time

_MAGIC = re.compile(r"[*?\[]")


def _segment_matches(name, segment):
    # Go's filepath.Match spells a negated class [^...]; fnmatch spells it [!...].
    return fnmatch.fnmatchcase(name, segment.replace("[^", "[!"))


def has_magic(pattern):
    """Whether a path holds a glob character."""
    return bool(_MAGIC.search(pattern))


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


def relative_import_base(major, minor):
    """The base_dir of resolve_import for a containerd release: before 1.7 a relative imports entry
    resolves against the daemon's working directory (/, where systemd starts it); from 1.7 against
    the declaring file's dir (None)."""
    return "/" if (major, minor) < (1, 7) else None


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


def _normal(path):
    """posixpath.normpath, with POSIX's leading '//' folded to '/' ('..' above / stays at /)."""
    path = os.path.normpath(path)
    return "/" + path.lstrip("/") if path.startswith("//") else path


def host_root(root):
    """The node root in one spelling: '/' for '' and '/'; ValueError for a relative one or one with glob
    characters (an imports glob under it would match by the root's characters too)."""
    root = root or "/"
    if not os.path.isabs(root) or has_magic(root):
        raise ValueError("host_root must be an absolute path without glob characters (* ? [), not %r" % root)
    return _normal(root)


def on_machine(root, path, base=None):
    """The path this machine opens for PATH, read from the node whose / is ROOT (its config, its imports,
    its units): ROOT prefixed exactly once. A relative PATH is taken against BASE (a directory, as the
    node or this machine names it), else against the node's /. A PATH already under ROOT (a test node's
    config that names its own root) stays as it is; glob characters in PATH are kept."""
    root = host_root(root)
    if not os.path.isabs(path):
        path = os.path.join(on_node(root, base) if base else "/", path)
    node = _normal(path)
    if root == "/" or node == root or node.startswith(root + "/"):
        return node
    return root if node == "/" else root + node


def on_node(root, path):
    """PATH as the node whose / is ROOT names it (the inverse of on_machine); a path outside ROOT, such
    as a private staging directory, stays as it is."""
    root = host_root(root)
    node = _normal(path)
    if root == "/" or not (node == root or node.startswith(root + "/")):
        return node
    return node[len(root):] or "/"


def glob_matches_path(pattern, path):
    """Whether an imports entry would load path, as containerd reads entries: only an entry
    containing '*' is a glob (Go's filepath.Match per path segment), any other is one path."""
    if "*" not in pattern:
        return os.path.normpath(pattern) == os.path.normpath(path)
    want = pattern.split("/")
    have = path.split("/")
    return len(want) == len(have) and all(_segment_matches(name, seg) for name, seg in zip(have, want))


_CHUNK = 65536


def kind_of(mode):
    """'a FIFO', 'a directory', ... for a file mode that is not a regular file's."""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path, max_bytes, timeout=None):
    """(data, error) for a regular file of at most max_bytes, read within timeout seconds;
    never raises, never blocks on a FIFO and never reads a device such as /dev/zero. error is a
    cause ("/dev/zero is a character device, not a regular file"): callers say what was not read.

    The file is opened without blocking and judged by fstat of what was opened (a symlink
    to /dev/zero is a device too); at most max_bytes + 1 bytes are read, in chunks, so a file
    that grows while it is read is still cut off.
    """
    deadline = None if timeout is None else time.time() + timeout
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except (IOError, OSError) as exc:
        return None, "cannot read: %s" % (exc.strerror or exc)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, "%s is %s, not a regular file" % (path, kind_of(info.st_mode))
        if info.st_size > max_bytes:
            return None, "file is %d bytes, more than the %d read" % (info.st_size, max_bytes)
        chunks = []
        total = 0
        while total <= max_bytes:
            if deadline is not None and time.time() > deadline:
                return None, "reading took longer than %s s" % timeout
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            return None, "file is more than the %d bytes read" % max_bytes
        return b"".join(chunks), None
    except (IOError, OSError) as exc:
        return None, "cannot read: %s" % (exc.strerror or exc)
    finally:
        os.close(fd)


def read_text(path, max_bytes, timeout=None):
    """(text, error) for a small UTF-8 text file, bounded like read_bytes; never raises."""
    data, error = read_bytes(path, max_bytes, timeout)
    if error is not None:
        return None, error
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, "not UTF-8 text (bad byte at offset %d)" % exc.start


def path_facts(path, extra_dirs=(), search=None):
    """exists / is_file / executable for a path. A bare name is looked up as Go's exec.LookPath does: in
    search (the directories of the PATH it runs with; default: this module's PATH), then in extra_dirs
    (containerd also looks for a shim next to its own binary); an empty or relative entry is never searched
    (LookPath refuses what it finds there). Its facts name the directories searched and, when no directory
    holds an executable, the first plain file of that name found (resolved) or nothing."""
    bare = os.sep not in path
    resolved = path
    searched = []
    if bare:
        dirs = os.environ.get("PATH", os.defpath).split(os.pathsep) if search is None else list(search)
        for directory in dirs + list(extra_dirs):
            if os.path.isabs(directory) and directory not in searched:
                searched.append(directory)
        found = None
        for directory in searched:
            candidate = os.path.join(directory, path)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                found = candidate
                break
            if found is None and os.path.isfile(candidate):
                found = candidate  # not executable: kept unless an executable one comes later
        resolved = found or path
        exists = found is not None  # never the working directory's file of that name
    else:
        exists = os.path.exists(path)
    facts = {
        "path": path,
        "resolved": resolved,
        "exists": exists,
        "is_file": exists and os.path.isfile(resolved),
        "executable": exists and os.path.isfile(resolved) and os.access(resolved, os.X_OK),
    }
    if bare:
        facts["searched"] = searched
    return facts


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
