# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node side: run containerd (and crictl) with bounds - a timeout, a size limit on what it prints, a
memory limit on a dump - and read what it prints: its version, its loader lines, its cause line.

Runs on target hosts: Python 3.8+, standard library only."""

import contextlib
import os
import re
import resource
import signal
import subprocess

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _host_paths as host_paths

_VERSION_RE = re.compile(r"\s(v?(\d+)\.(\d+)[^\s]*)")


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
