# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node side of gathering: run containerd, follow imports, read the files a check needs.

Runs on target hosts: Python 3.8+, standard library only. The TOML is parsed on the controller.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import json
import os
import re
import resource
import signal
import subprocess
import time

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import containerd_config
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import host_paths

_VERSION_RE = re.compile(r"\s(v?(\d+)\.(\d+)[^\s]*)")
_DEFAULT_CDI_DIRS = ["/etc/cdi", "/var/run/cdi"]
_CDI_SPEC_SUFFIXES = (".yaml", ".yml", ".json")


class GatherError(Exception):
    pass


# The daemon runs from / under systemd; containerd 1.6 resolves relative imports
# against its working directory, so the dump runs from there too.
DAEMON_CWD = "/"


@contextlib.contextmanager
def _memory_limit_for_children(max_bytes):
    """Lower this process's soft RLIMIT_DATA while it starts a child, which inherits it: the data
    (writable memory) cap of a containerd that loads the node's config. Told to import /dev/zero,
    containerd allocates until the kernel's OOM killer picks a victim, which may be any process of
    the node. RLIMIT_DATA, not RLIMIT_AS: Go reserves far more address space than it writes
    (measured: 2.1.9 fails under a 1 GiB RLIMIT_AS with 16 MB in use). Not a preexec_fn: that makes
    subprocess fork instead of vfork (measured with the 2.1 dump: about 3 ms more CPU per start)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = max_bytes if hard == resource.RLIM_INFINITY else min(max_bytes, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


# `containerd --version` runs with no Go garbage collection until the heap nears 256 MiB: it
# allocates a few MiB and exits, so a collection is only CPU spent (measured on 1.7 and 2.1: about
# 5 ms less per run, the same output). Not for a process that loads a config: with GOGC=off, a
# dump that imports /dev/zero crashed with a register dump instead of "fatal error: out of memory"
# in 2 runs of 20 (0 of 20 without), and its cause line was lost.
GO_RUNTIME_ENV = {"GOGC": "off", "GOMEMLIMIT": "256MiB"}


def memory_limit(params):
    """RLIMIT_DATA in bytes for a containerd that loads the node's config (max_memory_mb, 1024 when
    unset); 0 for none."""
    return max(0, params.get("max_memory_mb", 1024) or 0) * 1024 * 1024


def start(argv, max_memory=None, env=None):
    try:
        with _memory_limit_for_children(max_memory) if max_memory else contextlib.nullcontext():
            # A session of its own, so a timeout kills whatever it started too (their open pipes
            # would otherwise keep communicate() waiting).
            return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=DAEMON_CWD,
                                    start_new_session=True, env=env)
    except OSError as exc:
        raise GatherError("cannot run %s: %s" % (argv[0], exc.strerror or exc))
    except MemoryError:
        within = " within max_memory_mb=%d" % (max_memory // (1024 * 1024)) if max_memory else ""
        raise GatherError("cannot start %s%s: out of memory" % (argv[0], within))


def kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass  # already gone
    proc.communicate()


def finish(proc, argv, timeout, max_bytes=None):
    """(rc, stdout_text, stderr_text); GatherError for a hang or output too large or not UTF-8."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill(proc)
        raise GatherError("'%s' did not finish within %d s (timeout option)" % (" ".join(argv), timeout))
    if max_bytes is not None and len(out) > max_bytes:
        raise GatherError("'%s' printed %d bytes, more than max_dump_bytes=%d" % (" ".join(argv), len(out), max_bytes))
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GatherError("'%s' printed bytes that are not UTF-8 (offset %d)" % (" ".join(argv), exc.start))
    return proc.returncode, text, err.decode("utf-8", "replace")


def start_version(binary):
    """`binary --version`, started under GO_RUNTIME_ENV."""
    env = dict(os.environ)
    env.update(GO_RUNTIME_ENV)
    return start([binary, "--version"], env=env)


def find_binary(name):
    if os.sep in name:
        if not os.path.isfile(name):
            raise GatherError("containerd binary not found: %s" % name)
        return name
    facts = host_paths.path_facts(name)
    if not facts["executable"]:
        raise GatherError("containerd binary '%s' not found in PATH (set containerd_bin)" % name)
    return facts["resolved"]


def containerd_version(binary, proc, timeout):
    rc, out, err = finish(proc, [binary, "--version"], timeout)
    return parse_version(binary, rc, out, err)


def parse_version(binary, rc, out, err=""):
    """(output, version, major, minor) from what `containerd --version` printed."""
    match = _VERSION_RE.search(" " + out)
    if rc != 0 or not match:
        raise GatherError("'%s --version' failed (rc=%d): %s" % (binary, rc, (err or out).strip()[-500:]))
    return out.strip(), match.group(1).lstrip("v"), int(match.group(2)), int(match.group(3))


_TIME_FIELD = re.compile(r'^time="[^"]*"\s*')


def loader_lines(stderr):
    """containerd's warning and error lines, without their timestamps (reports must diff cleanly)."""
    return [_TIME_FIELD.sub("", line) for line in stderr.splitlines() if "level=warning" in line or "level=error" in line]


def collect_files(config_path, config_text, dropin_dirs, max_bytes, relative_base=None, timeout=None):
    """Follow imports from the main file, then list the drop-in dirs for files nothing imports."""
    files = [{"path": config_path, "role": "main", "content": config_text, "error": None}]
    seen = {config_path}
    imports = []
    queue = [(config_path, config_text)]
    while queue:
        declared_in, text = queue.pop(0)
        for pattern in containerd_config.top_level_imports(text or ""):
            resolved, matches = host_paths.import_matches(pattern, declared_in, relative_base)
            imports.append({"pattern": pattern, "resolved": resolved, "declared_in": declared_in, "matches": matches})
            for path in matches:
                if path in seen:
                    continue
                seen.add(path)
                content, error = host_paths.read_text(path, max_bytes, timeout)
                files.append({"path": path, "role": "imported", "content": content, "error": error})
                queue.append((path, content))
    for directory in dropin_dirs:
        for path in host_paths.list_files(directory):
            if path not in seen:
                seen.add(path)
                content, error = host_paths.read_text(path, max_bytes, timeout)
                files.append({"path": path, "role": "unreferenced", "content": content, "error": error})
    return imports, files


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

# What containerd prints when it will not load a config, most telling first: a Go runtime
# crash names its cause once, above a goroutine dump that can be thousands of lines long.
_CAUSE_PATTERNS = (
    re.compile(r"^(fatal error: .*|panic: .*)$"),
    re.compile(r"^(containerd: .*)$"),
    re.compile(r"level=(?:fatal|error) .*"),
    re.compile(r"^(Error: .*|error: .*)$"),
)


def cause_line(stderr):
    """The one line of containerd's stderr that says why it failed, without its timestamp;
    the last non-empty line when no line looks like a cause."""
    lines = [_TIME_FIELD.sub("", line).strip() for line in (stderr or "").splitlines()]
    lines = [line for line in lines if line]
    for pattern in _CAUSE_PATTERNS:
        for line in lines:
            if pattern.search(line):
                return line[:1000]
    return lines[-1][:1000] if lines else ""


class ConfigRefused(GatherError):
    """containerd itself refuses the config: it will not start with it."""

    def __init__(self, message, refused, partial):
        GatherError.__init__(self, message)
        self.refused = refused
        self.partial = partial


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

_RUNC_TYPES = ("io.containerd.runc.v2", "io.containerd.runc.v1", "io.containerd.runtime.v1.linux")
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


# systemd's default PATH, which containerd.service runs with unless its unit says otherwise: the
# module itself may run with a shorter one (a non-login SSH shell).
SYSTEMD_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


def runtime_path_facts(texts, containerd_bin, shim_dirs=()):
    """({path: facts} for every runtime_path / ConfigPath / base_runtime_spec named in the texts,
    {runtime_type: facts of its shim} for every runtime type that is not runc's: containerd
    ships the runc shim; other shims (kata, runsc, ...) are installed apart and looked up in
    PATH, systemd's default PATH, shim_dirs and next to the containerd binary)."""
    paths = set()
    types = set()
    for text in texts:
        for key in RUNTIME_PATH_KEYS:
            paths.update(string_values(text, key))
        types.update(string_values(text, "runtime_type"))
    shims = {}
    for runtime_type in sorted(types):
        if runtime_type in _RUNC_TYPES:
            continue
        name = shim_binary_name(runtime_type)
        if name:
            extra = list(SYSTEMD_PATH + tuple(shim_dirs or ()) + (os.path.dirname(containerd_bin),))
            shims[runtime_type] = host_paths.path_facts(name, extra)
    return dict((p, host_paths.path_facts(p)) for p in sorted(paths)), shims


# --- the running view: what the daemon loaded at its start -----------------------------------

DEFAULT_ENDPOINT = "unix:///run/containerd/containerd.sock"
_GRPC_TABLE = re.compile(r"^[ \t]*\[[ \t]*grpc[ \t]*\][ \t]*$", re.MULTILINE)
_ANY_TABLE = re.compile(r"^[ \t]*\[", re.MULTILINE)
_ADDRESS = re.compile(r'^[ \t]*address[ \t]*=[ \t]*(?:"([^"\n]*)"|\'([^\'\n]*)\')', re.MULTILINE)


def grpc_address(text):
    """The `[grpc] address` of a config or dump text, or None."""
    match = _GRPC_TABLE.search(text or "")
    if not match:
        return None
    rest = text[match.end():]
    following = _ANY_TABLE.search(rest)
    body = rest[:following.start()] if following else rest
    address = _ADDRESS.search(body)
    if not address:
        return None
    return address.group(1) if address.group(1) is not None else address.group(2)


def endpoint_of(address):
    if not address:
        return DEFAULT_ENDPOINT
    return address if "://" in address else "unix://" + address


def _crictl_view(info):
    """The running view's fields from `crictl info` JSON."""
    config = info.get("config") if isinstance(info, dict) else None
    if not isinstance(config, dict):
        raise ValueError("crictl info printed no 'config' object")
    containerd = config.get("containerd") if isinstance(config.get("containerd"), dict) else {}
    runtimes = containerd.get("runtimes") if isinstance(containerd.get("runtimes"), dict) else {}
    details = {}
    for name, table in runtimes.items():
        table = table if isinstance(table, dict) else {}
        options = table.get("options") if isinstance(table.get("options"), dict) else {}
        details[name] = {"runtime_type": table.get("runtimeType") or "", "binary_name": options.get("BinaryName") or ""}
    cdi_dirs = config.get("cdiSpecDirs")
    return {
        "runtimes": sorted(details),
        "runtime_details": details,
        "default_runtime_name": containerd.get("defaultRuntimeName"),
        # containerd 1.6 has no CDI: its info carries no enableCDI.
        "enable_cdi": config.get("enableCDI") if isinstance(config.get("enableCDI"), bool) else None,
        "cdi_spec_dirs": list(cdi_dirs) if isinstance(cdi_dirs, list) else None,
    }


def crictl_info(crictl_bin, endpoint, timeout):
    """(view fields, None) or (None, why not) for `crictl --runtime-endpoint E info`."""
    if os.sep in crictl_bin:
        found = crictl_bin if os.access(crictl_bin, os.X_OK) and os.path.isfile(crictl_bin) else None
    else:
        facts = host_paths.path_facts(crictl_bin)
        found = facts["resolved"] if facts["executable"] else None
    if not found:
        return None, "crictl not found (crictl_bin=%s)" % crictl_bin
    argv = [found, "--runtime-endpoint", endpoint, "--timeout", "%ds" % max(1, min(timeout, 30)), "info"]
    try:
        rc, out, err = finish(start(argv), argv, timeout, 16 * 1024 * 1024)
    except GatherError as exc:
        return None, str(exc)
    if rc != 0:
        return None, "'crictl info' on %s exited %d: %s" % (endpoint, rc, cause_line(err) or "(no output)")
    try:
        return _crictl_view(json.loads(out)), None
    except ValueError as exc:
        return None, "'crictl info' on %s printed no usable JSON: %s" % (endpoint, exc)


_DAEMON_VALUE_FLAGS = ("--config", "-c", "--log-level", "-l", "--address", "-a", "--root", "--state")


def daemon_config(argv):
    """The config path a containerd daemon command line uses; None when the command line is
    not the daemon's (a subcommand such as `config dump`, or not containerd at all)."""
    if not argv or os.path.basename(argv[0]) != "containerd":
        return None
    config = "/etc/containerd/config.toml"
    index = 1
    while index < len(argv):
        arg = argv[index]
        if arg.startswith("--config="):
            config = arg.split("=", 1)[1]
        elif arg in ("--config", "-c") and index + 1 < len(argv):
            config = argv[index + 1]
            index += 1
        elif arg in _DAEMON_VALUE_FLAGS:
            index += 1
        elif not arg.startswith("-"):
            return None  # a subcommand: not the daemon
        index += 1
    return config


def _boot_time():
    with open("/proc/stat") as handle:
        for line in handle:
            if line.startswith("btime "):
                return int(line.split()[1])
    raise ValueError("no btime in /proc/stat")


def process_start_time(pid):
    """Epoch seconds at which a process started, from /proc/<pid>/stat."""
    with open("/proc/%d/stat" % pid) as handle:
        data = handle.read()
    # The command name (field 2) may hold spaces and parentheses: fields restart after the last ')'.
    fields = data[data.rindex(")") + 2:].split()
    return _boot_time() + int(fields[19]) / float(os.sysconf("SC_CLK_TCK"))


def find_daemon(config_path):
    """[(pid, argv)] of containerd daemons whose config is config_path."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                argv = [a.decode("utf-8", "replace") for a in handle.read().split(b"\0") if a]
        except (IOError, OSError):
            continue
        config = daemon_config(argv)
        if config is not None and os.path.abspath(config) == config_path:
            found.append((int(entry), argv))
    return sorted(found)


def systemd_start_time(timeout, unit="containerd.service"):
    """Epoch seconds of the unit's ActiveEnterTimestamp, or None."""
    argv = ["systemctl", "show", unit, "--property=ActiveEnterTimestampMonotonic"]
    try:
        rc, out, _err = finish(start(argv), argv, timeout)
    except GatherError:
        return None
    match = re.search(r"ActiveEnterTimestampMonotonic=(\d+)", out)
    if rc != 0 or not match or int(match.group(1)) == 0:
        return None
    # systemd counts CLOCK_MONOTONIC, as time.monotonic() does on Linux.
    return time.time() - (time.monotonic() - int(match.group(1)) / 1e6)


def newest_mtime(paths):
    times = []
    for path in paths:
        try:
            times.append(os.stat(path).st_mtime)
        except OSError:
            continue
    return max(times) if times else None


def running_view(params, config_path, config_text, dump, loaded_files, timeout):
    """What the running daemon loaded at its start: `crictl info` where crictl and the CRI
    socket answer, else the daemon's start time against the newest loaded file's mtime.

    Keys: source (crictl, process, none), runtimes, runtime_details, default_runtime_name,
    enable_cdi, cdi_spec_dirs, daemon_started, config_newest_mtime, error; and endpoint,
    crictl_error (why crictl gave no view), started_from (proc, systemd) and pid.
    """
    endpoint = params.get("cri_endpoint") or endpoint_of(grpc_address(dump) or grpc_address(config_text))
    view = {"source": "none", "runtimes": None, "runtime_details": None, "default_runtime_name": None,
            "enable_cdi": None, "cdi_spec_dirs": None, "daemon_started": None,
            "config_newest_mtime": newest_mtime(loaded_files), "error": None, "endpoint": endpoint,
            "crictl_error": None, "started_from": None, "pid": None}
    fields, crictl_error = crictl_info(params.get("crictl_bin") or "crictl", endpoint, timeout)
    if fields is not None:
        view.update(fields, source="crictl")
        return view
    view["crictl_error"] = crictl_error
    errors = [crictl_error]
    try:
        daemons = find_daemon(config_path)
    except OSError as exc:
        daemons = []
        errors.append("cannot list processes: %s" % (exc.strerror or exc))
    if len(daemons) == 1:
        pid = daemons[0][0]
        try:
            view.update(source="process", started_from="proc", pid=pid, daemon_started=process_start_time(pid))
        except (IOError, OSError, ValueError, IndexError) as exc:
            errors.append("cannot read the start time of containerd pid %d: %s" % (pid, exc))
    elif daemons:
        errors.append("%d containerd daemons use %s (pids %s)" % (
            len(daemons), config_path, ", ".join(str(pid) for pid, _argv in daemons)))
    else:
        errors.append("no running containerd daemon uses %s" % config_path)
        # /proc may hide other users' processes (hidepid); systemd still knows the unit's start.
        started = systemd_start_time(timeout) if config_path == "/etc/containerd/config.toml" else None
        if started is not None:
            view.update(source="process", started_from="systemd", daemon_started=started)
    view["error"] = "; ".join(errors)
    return view


# --- the gather ---------------------------------------------------------------------------

def gather(params, ran=None):
    """What the checks need from a node. ran: what the caller already ran, so that no containerd
    command runs twice: ``version_output`` (what `containerd --version` printed) and ``dump``
    ((argv, rc, stdout, stderr) of a dump), used only when its argv is the one this gather runs."""
    timeout = params["timeout"]
    ran = ran or {}
    binary = find_binary(params["containerd_bin"])
    config_path = os.path.abspath(params["config_path"])
    result = {"containerd_bin": binary, "config_path": config_path, "config_exists": os.path.isfile(config_path)}
    if result["config_exists"]:
        argv = [binary, "--config", config_path, "config", "dump"]
    else:
        argv = [binary, "config", "default"]
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
    if rc != 0:
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
    config_dir = os.path.dirname(config_path)
    dropin_dirs = params["dropin_dirs"]
    if dropin_dirs is None:
        dropin_dirs = [os.path.join(config_dir, "conf.d"), os.path.join(config_dir, "config.d")]
    relative_base = DAEMON_CWD if (major, minor) < (1, 7) else None
    imports, files = collect_files(config_path, config_text, dropin_dirs, params["max_file_bytes"], relative_base, timeout)
    files[0]["error"] = config_error
    result.update(imports=imports, files=files, dropin_dirs=dropin_dirs)

    texts = [dump or ""] + [item["content"] or "" for item in files]
    names = set()
    for text in texts:
        names.update(containerd_config.binary_names(text))
    result["paths"] = dict((name, host_paths.path_facts(name)) for name in sorted(names))
    runtime_paths, shims = runtime_path_facts(texts, binary, params.get("shim_dirs"))
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
        cdi_dirs = containerd_config.string_array(dump or "", "cdi_spec_dirs") or _DEFAULT_CDI_DIRS
    result["cdi_spec_dirs_read"] = cdi_dirs
    result["cdi_specs"] = collect_cdi_specs(cdi_dirs, params["max_file_bytes"], timeout)

    if params.get("gather_running", True):
        loaded_files = [f["path"] for f in files if f["role"] in ("main", "imported") and f["content"] is not None]
        result["running"] = running_view(params, config_path, config_text, dump, loaded_files, timeout)
    return result
