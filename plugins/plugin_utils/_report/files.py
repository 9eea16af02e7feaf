# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Report files: each written whole or not at all, in the formats a run asks for."""

import os
import tempfile

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.json_writer import to_json
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.junit_writer import to_junit
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._report.prometheus_writer import to_prometheus


def write(path, text):
    """Write a report file whole or not at all (a temporary file renamed into place): a reader
    (node_exporter, CI) never sees half a file. Raises IOError/OSError."""
    directory = os.path.dirname(path)
    if directory and not os.path.isdir(directory):
        os.makedirs(directory)
    handle = tempfile.NamedTemporaryFile("w", dir=directory or ".", prefix=".%s." % os.path.basename(path), delete=False)
    try:
        with handle:
            handle.write(text)
        os.chmod(handle.name, 0o644)
        os.rename(handle.name, path)
    except BaseException:
        os.unlink(handle.name)
        raise


RENDERERS = {"json": to_json, "junit": to_junit, "metrics": to_prometheus}


class WriteError(IOError):
    pass


def write_all(built, paths):
    """Write the report in each format paths names ({"json": PATH, "junit": PATH, "metrics": PATH};
    empty ones skipped). Returns the paths written; WriteError names the one that failed."""
    written = []
    for kind in RENDERERS:
        path = (paths or {}).get(kind)
        if path:
            try:
                write(path, RENDERERS[kind](built))
            except (IOError, OSError) as exc:
                raise WriteError("cannot write report %s: %s" % (path, exc.strerror or exc))
            written.append(path)
    return written
