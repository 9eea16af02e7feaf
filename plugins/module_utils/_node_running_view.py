# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node side: the running view, what the containerd daemon loaded when it started - from
`crictl info`, else the daemon's start time (/proc, or systemd) against the config files' mtimes.

Runs on target hosts: Python 3.8+, standard library only."""

import json
import os
import re
import time

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths
from ansible_collections.gpurt.runtime_gate.plugins.module_utils._node_commands import GatherError, cause_line, finish, start

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
        return containerd_facts.CRI_ENDPOINT
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
    config = containerd_facts.CONFIG_PATH
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


def same_config(daemon_path, daemon_cwd, config_path):
    """Whether a daemon's --config (relative to its working directory daemon_cwd, when relative) names the file
    config_path: as written, or once symlinks are resolved (microk8s starts containerd with the snap revision's
    directory, /var/snap/microk8s/<revision>/args/containerd.toml, which .../current/... links to)."""
    if not os.path.isabs(daemon_path):
        if daemon_cwd is None:
            return False
        daemon_path = os.path.join(daemon_cwd, daemon_path)
    if os.path.normpath(daemon_path) == os.path.normpath(config_path):
        return True
    return os.path.realpath(daemon_path) == os.path.realpath(config_path)


def _cwd(pid):
    try:
        return os.readlink("/proc/%s/cwd" % pid)
    except (IOError, OSError):
        return None


def find_daemon(config_path):
    """[(pid, argv)] of containerd daemons whose config is the file config_path (same_config)."""
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
        if config is None:
            continue
        if same_config(config, None if os.path.isabs(config) else _cwd(entry), config_path):
            found.append((int(entry), argv))
    return sorted(found)


class Daemons(object):
    """find_daemon() once per config file within one gather: the runtime lookup (the daemon's PATH) and the
    running view read the same daemons milliseconds apart, and each search reads every process's cmdline."""

    def __init__(self):
        self._found = {}

    def using(self, config_path):
        """find_daemon(config_path), searched on the first call; an OSError is raised and not kept."""
        key = os.path.abspath(config_path)
        if key not in self._found:
            self._found[key] = find_daemon(key)
        return self._found[key]


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


def running_view(params, config_path, config_text, dump, loaded_files, timeout, daemons=None):
    """What the running daemon loaded at its start: `crictl info` where crictl and the CRI
    socket answer, else the daemon's start time against the newest loaded file's mtime.

    Keys: source (crictl, process, none), runtimes, runtime_details, default_runtime_name,
    enable_cdi, cdi_spec_dirs, daemon_started, config_newest_mtime, error; and endpoint,
    crictl_error (why crictl gave no view), started_from (proc, systemd) and pid. daemons: the gather's
    Daemons, when it searched them already.
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
        found = (daemons or Daemons()).using(config_path)
    except OSError as exc:
        found = []
        errors.append("cannot list processes: %s" % (exc.strerror or exc))
    if len(found) == 1:
        pid = found[0][0]
        try:
            view.update(source="process", started_from="proc", pid=pid, daemon_started=process_start_time(pid))
        except (IOError, OSError, ValueError, IndexError) as exc:
            errors.append("cannot read the start time of containerd pid %d: %s" % (pid, exc))
    elif found:
        errors.append("%d containerd daemons use %s (pids %s)" % (
            len(found), config_path, ", ".join(str(pid) for pid, _argv in found)))
    else:
        errors.append("no running containerd daemon uses %s" % config_path)
        # /proc may hide other users' processes (hidepid); systemd still knows the unit's start.
        started = systemd_start_time(timeout) if config_path == containerd_facts.CONFIG_PATH else None
        if started is not None:
            view.update(source="process", started_from="systemd", daemon_started=started)
    view["error"] = "; ".join(errors)
    return view
