# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node side of gathering: run containerd, follow imports, read the files a check needs. The TOML
is parsed on the controller.

Runs on target hosts: Python 3.8+, standard library only."""

from __future__ import annotations  # the return annotation below is for readers: never evaluated

import errno
import os
import re
import stat
from typing import TYPE_CHECKING

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_config_text as node_config_text
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_fragment_scan as fragment_scan
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _restart_marker as restart_marker
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._node_commands import (
    GatherError, cause_line, containerd_version, finish, find_binary, kill, loader_lines, memory_limit,
    parse_version, start, start_version)
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._node_running_view import Daemons, running_view

if TYPE_CHECKING:  # the declared shape, for readers and type checkers: the node never compiles it
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils._gathered import Gathered

_CDI_SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def _glob_dir(resolved):
    """The directory an imports entry reads, and whether it exists (a magic dir part: any match)."""
    directory = os.path.dirname(resolved.rstrip("/"))
    if host_paths.has_magic(directory):
        return directory, bool([d for d in host_paths.go_glob(directory) if os.path.isdir(d)])
    return directory, os.path.isdir(directory)


def collect_files(config_path, config_text, dropin_dirs, max_bytes, relative_base=None, timeout=None, runtime_files=()):
    """Follow imports from the main file, then look for config fragments nothing imports: in the
    config tree, the known drop-in dirs and the dirs imports name (_node_fragment_scan). Files a
    runtime names itself (runtime_files: ConfigPath, base_runtime_spec) are never candidates."""
    files = [{"path": config_path, "role": "main", "content": config_text, "error": None}]
    seen = {config_path}
    imports = []
    queue = [(config_path, config_text)]
    while queue:
        declared_in, text = queue.pop(0)
        for pattern in node_config_text.top_level_imports(text or ""):
            resolved, matches = host_paths.import_matches(pattern, declared_in, relative_base)
            directory, dir_exists = _glob_dir(resolved)
            imports.append({"pattern": pattern, "resolved": resolved, "declared_in": declared_in, "matches": matches,
                            "dir": directory, "dir_exists": dir_exists})
            for path in matches:
                if path in seen:
                    continue
                seen.add(path)
                content, error = host_paths.read_text(path, max_bytes, timeout)
                files.append({"path": path, "role": "imported", "content": content, "error": error})
                queue.append((path, content))
    import_dirs = [e["dir"] for e in imports if e["dir_exists"] and not host_paths.has_magic(e["dir"])]
    skip = set()
    for text in [f["content"] for f in files]:
        for key in RUNTIME_PATH_KEYS:
            skip.update(string_values(text, key))
    skip.update(runtime_files or ())
    found, scan = fragment_scan.find_fragments(config_path, dropin_dirs, import_dirs, seen, skip, max_bytes, timeout)
    files.extend(found)
    return imports, files, scan


def collect_cdi_specs(directories, max_bytes, timeout=None):
    specs = []
    for directory in directories:
        for path in host_paths.list_files(directory):
            if not path.endswith(_CDI_SPEC_SUFFIXES):
                continue
            content, error = host_paths.read_text(path, max_bytes, timeout)
            spec = {"path": path, "error": error, "host_paths": []}
            if content is not None:
                try:
                    names = host_paths.cdi_spec_host_paths(content, path)
                except ValueError as exc:
                    spec["error"] = "not valid JSON: %s" % exc
                    names = []
                spec["host_paths"] = [{"path": p, "exists": os.path.exists(p)} for p in names]
            specs.append(spec)
    return specs


# --- why containerd refused a config -------------------------------------------------------

class ConfigRefused(GatherError):
    """containerd itself refuses the config: it will not start with it."""

    def __init__(self, message, refused, partial):
        GatherError.__init__(self, message)
        self.refused = refused
        self.partial = partial


def config_state(path):
    """(exists, blocking_kind) of the main config path. Only a path that does not exist, or a
    symlink to nothing, is absent (containerd then runs on its defaults); a symlink loop, a
    directory or an unreadable file exists and containerd's own load says why it fails. A FIFO
    or a device exists too, but containerd would block on it: blocking_kind names it."""
    try:
        os.lstat(path)
    except OSError as exc:
        return exc.errno != errno.ENOENT, None
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return exc.errno != errno.ENOENT, None  # ENOENT: a dangling symlink; ELOOP and others exist
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
        return True, host_paths.kind_of(mode)
    return True, None


def refusal(argv, rc, stderr):
    """What the gather reports when `config dump` fails: containerd will not start either."""
    return {
        "command": " ".join(argv),
        "rc": rc,
        "cause": cause_line(stderr) or "(containerd printed nothing)",
        "stderr_tail": stderr.strip()[-2000:],
        "warnings": loader_lines(stderr)[:20],
    }


# --- files a runtime needs: its shim, runtime_path, ConfigPath, base_runtime_spec ------------

RUNTIME_PATH_KEYS = ("runtime_path", "ConfigPath", "base_runtime_spec")


def string_values(text, key):
    """Every non-empty string value of `key = "..."` (or '...') in a TOML text."""
    pattern = re.compile(r'^[ \t]*%s[ \t]*=[ \t]*("(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\')' % re.escape(key), re.MULTILINE)
    values = set()
    for literal in pattern.findall(text or ""):
        value = literal[1:-1]
        if literal.startswith('"'):
            value = value.replace('\\\\', '\\').replace('\\"', '"')
        if value:
            values.add(value)
    return sorted(values)


def shim_binary_name(runtime_type):
    """The shim containerd starts for a runtime_type: io.containerd.kata.v2 runs
    containerd-shim-kata-v2 (containerd's BinaryName rule); an absolute path is itself."""
    if runtime_type.startswith("/"):
        return runtime_type
    parts = runtime_type.split(".")
    if len(parts) < 2 or not parts[0]:
        return None
    return "containerd-shim-%s-%s" % (parts[-2], parts[-1])


# --- where containerd and its runc shim find a runtime's binary -----------------------------

CONTAINERD_UNIT = "containerd.service"
_MAX_UNIT_BYTES = 262144


def containerd_path(root):
    """([dirs], where they come from) of the PATH containerd runs with on the node under root: the PATH its
    systemd unit sets (Environment= or EnvironmentFile= in the unit and its drop-ins), else systemd's default
    PATH for services. The module itself may run with another one (a non-login SSH shell)."""
    # imported here: only a node with a bare name to look up reads its units
    from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _systemd_units as units

    def read(path):
        return host_paths.read_text(path, _MAX_UNIT_BYTES, timeout=5)

    entries, _sources, _errors = units.read_unit_under_root(root, CONTAINERD_UNIT, read)
    origins = {}
    env = units.environment(units.merge(entries), lambda p: read(host_paths.on_machine(root, p))[0], origins)
    return units.service_path(env, origins, units.unmerged_usr_under_root(root))


def daemon_path(config_path, daemons=None):
    """([dirs], where they come from) of the PATH in the environment of the one running containerd daemon whose
    config is config_path (a wrapper such as k3s' or a unit's Environment= set it: what its shims really get), or
    None when there is not exactly one such daemon or its environment cannot be read (another user's process,
    without root). Where they come from names no pid: the summary prints a finding once for all the nodes
    that have it, and a pid would make each node's line its own. daemons: the gather's Daemons."""
    try:
        found = (daemons or Daemons()).using(config_path)
    except OSError:
        return None
    if len(found) != 1:
        return None
    pid = found[0][0]
    try:
        with open("/proc/%d/environ" % pid, "rb") as handle:
            environ = handle.read()
    except (IOError, OSError):
        return None
    for item in environ.split(b"\0"):
        if item.startswith(b"PATH="):
            value = item[len(b"PATH="):].decode("utf-8", "replace")
            return value.split(os.pathsep), "PATH of the running containerd daemon"
    return [], "the running containerd daemon, which has no PATH"


def search_dirs(root, path_dirs, shim_dirs=()):
    """The directories, on this machine, where a bare BinaryName is looked up: containerd's PATH (the runc
    shim inherits containerd's environment and runs BinaryName with Go's exec.LookPath, which skips a relative
    entry), then the user's shim_dirs, each under the node root once."""
    dirs = []
    for directory in [d for d in path_dirs if os.path.isabs(d)] + list(shim_dirs or ()):
        directory = host_paths.on_machine(root, directory)
        if directory not in dirs:
            dirs.append(directory)
    return dirs


class RuntimeLookup(object):
    """How the node finds a runtime's binaries: a bare BinaryName in containerd's PATH and the shim_dirs, a
    non-runc runtime_type's shim there and next to the containerd binary; an absolute path as it is.
    containerd's PATH: the running daemon's own (config_path names it; only on this machine's /), else the
    one its unit sets."""

    def __init__(self, root, shim_dirs, containerd_bin, config_path=None, daemons=None):
        try:
            self.root = host_paths.host_root(root)
        except ValueError as exc:
            raise GatherError(str(exc))
        self.shim_dirs = shim_dirs
        self.containerd_dir = os.path.dirname(containerd_bin)
        self.config_path = config_path
        self.daemons = daemons
        self._dirs = None
        self.path_from = None

    @property
    def dirs(self):
        """The search directories, found when a bare name first needs them (a node whose runtimes all name
        absolute paths reads neither /proc nor a unit)."""
        if self._dirs is None:
            found = daemon_path(self.config_path, self.daemons) if self.config_path and self.root == "/" else None
            path_dirs, self.path_from = found or containerd_path(self.root)
            self._dirs = search_dirs(self.root, path_dirs, self.shim_dirs)
        return self._dirs

    def _facts(self, name, extra=()):
        if os.sep not in name:
            facts = host_paths.path_facts(name, extra, search=self.dirs)
            facts["path_from"] = self.path_from
            return facts
        return host_paths.path_facts(name, extra)

    def binary(self, name):
        return self._facts(name)

    def shim(self, name):
        return self._facts(name, [self.containerd_dir])


def runtime_path_facts(texts, lookup):
    """({path: facts} for every runtime_path / ConfigPath / base_runtime_spec named in the texts,
    {runtime_type: facts of its shim} for every runtime type that is not runc's: containerd
    ships the runc shim; other shims (kata, runsc, ...) are installed apart and looked up as
    lookup (a RuntimeLookup) says)."""
    paths = set()
    types = set()
    for text in texts:
        for key in RUNTIME_PATH_KEYS:
            paths.update(string_values(text, key))
        types.update(string_values(text, "runtime_type"))
    shims = {}
    for runtime_type in sorted(types):
        if runtime_type in containerd_facts.RUNC_TYPES:
            continue
        name = shim_binary_name(runtime_type)
        if name:
            shims[runtime_type] = lookup.shim(name)
    return dict((p, host_paths.path_facts(p)) for p in sorted(paths)), shims


# --- the gather ---------------------------------------------------------------------------

def gather(params, ran=None) -> Gathered:
    """What the checks need from a node (its keys: _gathered.Gathered). ran: what the caller already ran, so that no containerd
    command runs twice: ``version_output`` (what `containerd --version` printed) and ``dump``
    ((argv, rc, stdout, stderr) of a dump), used only when its argv is the one this gather runs."""
    timeout = params["timeout"]
    ran = ran or {}
    binary = find_binary(params["containerd_bin"])
    config_path = os.path.abspath(params["config_path"])
    exists, blocking_kind = config_state(config_path)
    result = {"containerd_bin": binary, "config_path": config_path, "config_exists": exists}
    if exists:
        argv = [binary, "--config", config_path, "config", "dump"]
    else:
        argv = [binary, "config", "default"]
    if blocking_kind is not None:
        # containerd would block on it (a FIFO) or read a device: it is not run on it at all.
        ran = dict(ran or {}, dump=(argv, None, "", "%s is %s, not a regular file: containerd cannot load it as its "
                                                    "config (it blocks or fails reading it)" % (config_path, blocking_kind)))
    max_memory = memory_limit(params)
    known_dump = ran.get("dump")
    if known_dump is not None and list(known_dump[0]) != argv:
        known_dump = None
    # Both commands run at once: each is a process start that waits on disk, not on the other.
    version_proc = start_version(binary) if ran.get("version_output") is None else None
    dump_proc = start(argv, max_memory) if known_dump is None else None
    try:
        if version_proc is None:
            version_output, version, major, minor = parse_version(binary, 0, ran["version_output"])
        else:
            version_output, version, major, minor = containerd_version(binary, version_proc, timeout)
    except GatherError:
        if dump_proc is not None:
            kill(dump_proc)
        raise
    result.update(version_output=version_output, version=version, version_major=major, version_minor=minor)
    if known_dump is not None:
        rc, dump, stderr = known_dump[1:]
    else:
        rc, dump, stderr = finish(dump_proc, argv, timeout, params["max_dump_bytes"])
    refused = None
    if rc is None:  # not run: the config is a FIFO or a device
        refused = {"command": " ".join(argv), "rc": None, "cause": stderr, "stderr_tail": "", "warnings": []}
        if params.get("on_refused", "fail") == "fail":
            raise ConfigRefused("containerd cannot use the config: %s" % stderr, refused, result)
        dump, stderr = None, ""
    elif rc != 0:
        refused = refusal(argv, rc, stderr)
        if params.get("on_refused", "fail") == "fail":
            raise ConfigRefused("containerd refuses the config: %s ('%s' exited %d)" % (refused["cause"], " ".join(argv), rc),
                                refused, result)
        dump = None
    elif not dump.strip():
        raise GatherError("'%s' printed nothing" % " ".join(argv))
    result.update(dump=dump, dump_warnings=loader_lines(stderr), refused=refused)

    config_text, config_error = (None, "file does not exist")
    if result["config_exists"]:
        config_text, config_error = host_paths.read_text(config_path, params["max_file_bytes"], timeout)
    dropin_dirs = params["dropin_dirs"]
    if dropin_dirs is None:
        dropin_dirs = containerd_facts.dropin_dirs(config_path)
        dropin_dirs += [d for d in containerd_facts.KNOWN_DROPIN_DIRS if d not in dropin_dirs and os.path.isdir(d)]
    relative_base = host_paths.relative_import_base(major, minor)
    runtime_files = set()
    for key in RUNTIME_PATH_KEYS:
        runtime_files.update(string_values(dump or "", key))
    imports, files, scan = collect_files(config_path, config_text, dropin_dirs, params["max_file_bytes"], relative_base,
                                         timeout, runtime_files)
    files[0]["error"] = config_error
    result.update(imports=imports, files=files, dropin_dirs=dropin_dirs, fragment_scan=scan, fragment_loads=None)
    if dump is not None and config_text is not None:
        # each fragment nothing imports, loaded as an import by this containerd: what it would change
        result["fragment_loads"] = fragment_scan.load_unreferenced(binary, config_path, config_text, imports, files,
                                                                   params)

    texts = [dump or ""] + [item["content"] or "" for item in files]
    names = set()
    for text in texts:
        names.update(node_config_text.binary_names(text))
    daemons = Daemons()
    lookup = RuntimeLookup(params.get("host_root"), params.get("shim_dirs"), binary, config_path, daemons)
    result["paths"] = dict((name, lookup.binary(name)) for name in sorted(names))
    runtime_paths, shims = runtime_path_facts(texts, lookup)
    for path, facts in runtime_paths.items():
        result["paths"].setdefault(path, facts)
    result["shims"] = shims

    kubelet_path = params["kubelet_config_path"]
    kubelet_text, kubelet_error = host_paths.read_text(kubelet_path, params["max_file_bytes"], timeout)
    result["kubelet_config"] = {
        "path": kubelet_path,
        "exists": os.path.lexists(kubelet_path),
        "content": kubelet_text,
        "error": kubelet_error if os.path.lexists(kubelet_path) else None,
    }

    cdi_dirs = params["cdi_spec_dirs"]
    if cdi_dirs is None:
        cdi_dirs = node_config_text.string_array(dump or "", "cdi_spec_dirs") or list(containerd_facts.CDI_SPEC_DIRS)
    result["cdi_spec_dirs_read"] = cdi_dirs
    result["cdi_specs"] = collect_cdi_specs(cdi_dirs, params["max_file_bytes"], timeout)

    # A restart the role's marker says is pending (the staged gather of check mode reads the node's own marker
    # itself: its config path is the staged copy's).
    result["restart_marker"] = restart_marker.read(params, config_path) if params.get("read_marker", True) else None
    if params.get("gather_running", True):
        loaded_files = [f["path"] for f in files if f["role"] in ("main", "imported") and f["content"] is not None]
        result["running"] = running_view(params, config_path, config_text, dump, loaded_files, timeout, daemons)
    return result
