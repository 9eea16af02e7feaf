# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node side of gathering: run containerd, follow imports, read the files a check needs.

Runs on target hosts: Python 3.8+, standard library only. The TOML is parsed on the controller.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import signal
import subprocess

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


def start(argv):
    try:
        # A session of its own, so a timeout kills whatever it started too (their open pipes
        # would otherwise keep communicate() waiting).
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=DAEMON_CWD,
                                start_new_session=True)
    except OSError as exc:
        raise GatherError("cannot run %s: %s" % (argv[0], exc.strerror or exc))


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
    match = _VERSION_RE.search(" " + out)
    if rc != 0 or not match:
        raise GatherError("'%s --version' failed (rc=%d): %s" % (binary, rc, (err or out).strip()[-500:]))
    return out.strip(), match.group(1).lstrip("v"), int(match.group(2)), int(match.group(3))


_TIME_FIELD = re.compile(r'^time="[^"]*"\s*')


def loader_lines(stderr):
    """containerd's warning and error lines, without their timestamps (reports must diff cleanly)."""
    return [_TIME_FIELD.sub("", line) for line in stderr.splitlines() if "level=warning" in line or "level=error" in line]


def collect_files(config_path, config_text, dropin_dirs, max_bytes, relative_base=None):
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
                content, error = host_paths.read_text(path, max_bytes)
                files.append({"path": path, "role": "imported", "content": content, "error": error})
                queue.append((path, content))
    for directory in dropin_dirs:
        for path in host_paths.list_files(directory):
            if path not in seen:
                seen.add(path)
                content, error = host_paths.read_text(path, max_bytes)
                files.append({"path": path, "role": "unreferenced", "content": content, "error": error})
    return imports, files


def collect_cdi_specs(directories, max_bytes):
    specs = []
    for directory in directories:
        for path in host_paths.list_files(directory):
            if not path.endswith(_CDI_SPEC_SUFFIXES):
                continue
            content, error = host_paths.read_text(path, max_bytes)
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


def gather(params):
    timeout = params["timeout"]
    binary = find_binary(params["containerd_bin"])
    config_path = os.path.abspath(params["config_path"])
    result = {"containerd_bin": binary, "config_path": config_path, "config_exists": os.path.isfile(config_path)}
    if result["config_exists"]:
        argv = [binary, "--config", config_path, "config", "dump"]
    else:
        argv = [binary, "config", "default"]
    # Both commands run at once: each is a process start that waits on disk, not on the other.
    version_proc = start([binary, "--version"])
    dump_proc = start(argv)
    try:
        version_output, version, major, minor = containerd_version(binary, version_proc, timeout)
    except GatherError:
        kill(dump_proc)
        raise
    result.update(version_output=version_output, version=version, version_major=major, version_minor=minor)
    rc, dump, stderr = finish(dump_proc, argv, timeout, params["max_dump_bytes"])
    if rc != 0:
        raise GatherError("'%s' exited %d: %s" % (" ".join(argv), rc, stderr.strip()[-2000:] or "(no output)"))
    if not dump.strip():
        raise GatherError("'%s' printed nothing" % " ".join(argv))
    result.update(dump=dump, dump_warnings=loader_lines(stderr))

    config_text, config_error = (None, "file does not exist")
    if result["config_exists"]:
        config_text, config_error = host_paths.read_text(config_path, params["max_file_bytes"])
    config_dir = os.path.dirname(config_path)
    dropin_dirs = params["dropin_dirs"]
    if dropin_dirs is None:
        dropin_dirs = [os.path.join(config_dir, "conf.d"), os.path.join(config_dir, "config.d")]
    relative_base = DAEMON_CWD if (major, minor) < (1, 7) else None
    imports, files = collect_files(config_path, config_text, dropin_dirs, params["max_file_bytes"], relative_base)
    files[0]["error"] = config_error
    result.update(imports=imports, files=files, dropin_dirs=dropin_dirs)

    names = set(containerd_config.binary_names(dump))
    for item in files:
        names.update(containerd_config.binary_names(item["content"] or ""))
    result["paths"] = dict((name, host_paths.path_facts(name)) for name in sorted(names))

    kubelet_path = params["kubelet_config_path"]
    kubelet_text, kubelet_error = host_paths.read_text(kubelet_path, params["max_file_bytes"])
    result["kubelet_config"] = {
        "path": kubelet_path,
        "exists": os.path.exists(kubelet_path),
        "content": kubelet_text,
        "error": kubelet_error if os.path.exists(kubelet_path) else None,
    }

    cdi_dirs = params["cdi_spec_dirs"]
    if cdi_dirs is None:
        cdi_dirs = containerd_config.string_array(dump, "cdi_spec_dirs") or _DEFAULT_CDI_DIRS
    result["cdi_spec_dirs_read"] = cdi_dirs
    result["cdi_specs"] = collect_cdi_specs(cdi_dirs, params["max_file_bytes"])
    return result
