# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lay a node bootstrap's files out in a sandbox directory on the controller, so a real
containerd binary can load them before any node boots."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import toml_document


class SandboxError(ValueError):
    pass


def sandbox_path(root, path):
    """Where an absolute node path lands in the sandbox."""
    if not path.startswith("/"):
        raise SandboxError("bootstrap file path %r is not absolute" % path)
    normalized = os.path.normpath(path)
    return os.path.join(root, normalized.lstrip("/"))


def rebase_imports(text, root, source):
    """The config text with absolute imports moved into the sandbox; relative ones stay,
    since containerd resolves them against the (sandboxed) file's dir. Nothing else changes
    in meaning."""
    try:
        doc = toml_document.loads(text, source)
    except toml_document.TomlError as exc:
        raise SandboxError(str(exc))
    imports = doc.get("imports")
    if not isinstance(imports, list) or not any(isinstance(p, str) and p.startswith("/") for p in imports):
        return text
    doc["imports"] = [sandbox_path(root, p) if isinstance(p, str) and p.startswith("/") else p for p in imports]
    return toml_document.dumps(doc)


def write_sandbox(files, root, containerd_dir="/etc/containerd"):
    """Write {path, content} files under root; TOML files below containerd_dir get their
    imports rebased. Returns the written entries (node path, sandbox path, rebased)."""
    written = []
    prefix = containerd_dir.rstrip("/") + "/"
    for entry in files:
        path = entry["path"]
        target = sandbox_path(root, path)
        content = entry.get("content") or ""
        rebased = False
        if path.startswith(prefix) and path.endswith(".toml"):
            new = rebase_imports(content, root, path)
            rebased = new != content
            content = new
        directory = os.path.dirname(target)
        if not os.path.isdir(directory):
            os.makedirs(directory)
        with open(target, "w") as handle:
            handle.write(content)
        written.append({"path": path, "sandbox_path": target, "imports_rebased": rebased,
                        "origin": entry.get("origin", "template")})
    return written
