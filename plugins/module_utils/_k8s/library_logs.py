# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubernetes client's and urllib3's log lines never reach a stream. The client logs a failed
exec credential plugin with `logging.error(str(exc))`, and that text ends with the plugin's stderr,
which may print the token it failed to refresh; with no handler configured, Python's last-resort
handler writes it to stderr, where Ansible shows it at any verbosity. Here those records are kept
in memory instead (bounded), and the client's exec plugin runs as non-interactive (its stderr
piped, never the worker's stderr), so the caller decides what of them may be shown."""

import logging
import os
import re
import sys

_LIBRARY_LOGGERS = ("kubernetes", "urllib3")
_MAX_KEPT = 50
# The client's own texts that carry nothing from the plugin; anything else is withheld.
_EXEC_RETURNED = re.compile(r"^exec: process returned (-?\d+)")
_EXEC_SAFE = ("exec: missing clientKeyData field", "exec: missing token or clientCertificateData",
              "exec: failed to decode process output", "exec: malformed response", "exec: plugin api version")


class _Keep(logging.Handler):
    """Keeps the last records' texts; writes nothing anywhere."""

    def __init__(self):
        logging.Handler.__init__(self, logging.DEBUG)
        self.records = []
        self.total = 0

    def emit(self, record):
        try:
            text = record.getMessage()
        except Exception:  # a record whose arguments do not format: keep its template
            text = str(record.msg)
        self.records.append(text)
        self.total += 1
        del self.records[:-_MAX_KEPT]

    def filter(self, record):  # as a root-logger filter: take the library's records off the root
        if _from_library(record):
            self.emit(record)
            return False
        return True


def _from_library(record):
    path = os.path.normcase(record.pathname or "")
    return (record.name.split(".")[0] in _LIBRARY_LOGGERS
            or os.sep + "kubernetes" + os.sep in path or os.sep + "urllib3" + os.sep in path)


_KEEPER = _Keep()


class _NotATerminal(object):
    """What the exec provider sees as sys.stdout: never a terminal, so it pipes the plugin's
    stderr and gives it no stdin (an interactive plugin would write to the worker's stderr)."""

    def isatty(self):
        return False


class _SysView(object):
    def __init__(self, real):
        self._real = real
        self.stdout = _NotATerminal()

    def __getattr__(self, name):
        return getattr(self._real, name)


def install():
    """Route the libraries' records into memory (idempotent)."""
    root = logging.getLogger()
    if _KEEPER not in root.filters:
        root.addFilter(_KEEPER)  # the client logs on the root logger itself (logging.error)
    for name in _LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        if _KEEPER not in logger.handlers:
            logger.addHandler(_KEEPER)
        logger.propagate = False
    try:
        from kubernetes.config import exec_provider
    except ImportError:
        return
    if not isinstance(exec_provider.sys, _SysView):
        exec_provider.sys = _SysView(sys)


def mark():
    """A position to read the records after."""
    return _KEEPER.total


def since(position):
    """The texts kept since position (at most the last _MAX_KEPT)."""
    count = min(_KEEPER.total - position, len(_KEEPER.records))
    return list(_KEEPER.records[len(_KEEPER.records) - count:]) if count > 0 else []


def exec_failure(texts):
    """A message saying the kubeconfig's exec credential plugin failed, without its output (it
    may carry a credential), or None when no kept text is an exec failure."""
    for text in texts:
        text = str(text)
        if not text.startswith("exec: "):
            continue
        for safe in _EXEC_SAFE:
            if text.startswith(safe):
                return "the kubeconfig's exec credential plugin failed: %s" % text.splitlines()[0][:300]
        returned = _EXEC_RETURNED.match(text)
        code = " with exit code %s" % returned.group(1) if returned else ""
        return ("the kubeconfig's exec credential plugin failed%s (its output is not shown: it may carry a "
                "credential; run the plugin's command by hand to see it)" % code)
    return None
