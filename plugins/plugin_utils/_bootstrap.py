# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lay a node bootstrap's files out in a sandbox directory on the controller, so a real
containerd binary of the node group's release can load them before any node boots."""

import os
import re

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _node_commands as node_commands
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _user_words as user_words

BINS_VARIABLE = "gpurt_bootstrap_containerd_bins"
VERSION_TIMEOUT = 20


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
    in meaning. A text that is not TOML is kept as it is: containerd refuses it with its own
    cause line, a config_refused finding on the template, as the audit reports such a file."""
    try:
        doc = toml_codec.loads(text, source)
    except toml_codec.TomlError:
        return text
    imports = doc.get("imports")
    if not isinstance(imports, list) or not any(isinstance(p, str) and p.startswith("/") for p in imports):
        return text
    doc["imports"] = [sandbox_path(root, p) if isinstance(p, str) and p.startswith("/") else p for p in imports]
    return toml_codec.dumps(doc)


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
        # Byte for byte: a file that is not UTF-8 reaches containerd as the node would have it.
        with open(target, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(content)
        written.append({"path": path, "sandbox_path": target, "imports_rebased": rebased,
                        "origin": entry.get("origin", "template")})
    return written


def parse_release(value):
    """(major, minor or None) of a node group's containerd: 2, '2', '2.3', 'v2.3.4'."""
    match = re.match(r"^v?(\d+)(?:\.(\d+))?(?:\.\d+)?$", str(value).strip())
    if not match or int(match.group(1)) not in (1, 2):
        raise SandboxError("the node group's containerd must be 1 or 2, or a release such as 1.7 or 2.3; got %r"
                           % (value,))
    return int(match.group(1)), (int(match.group(2)) if match.group(2) is not None else None)


def pick_containerd(release, bins=None, timeout=VERSION_TIMEOUT):
    """The containerd binary to load a node group's files with, and what it is.

    release: the node group's (major, minor-or-None). bins maps "1", "2" or "M.m" to a binary:
    the "M.m" entry wins, then the "M" entry, then `containerd` in the controller's PATH. The
    binary's own --version must be of that major (and minor, when one is given): a 2.1 binary
    would load a 2.3 node group's files by rules that node does not follow."""
    major, minor = release
    wanted = "%d.%d" % (major, minor) if minor is not None else "%d" % major
    bins = dict((str(k), v) for k, v in (bins or {}).items())
    for key in bins:
        parse_release(key)
    if minor is not None and wanted in bins:
        source, name = "%s[%r]" % (BINS_VARIABLE, wanted), bins[wanted]
    elif str(major) in bins:
        source, name = "%s[%r]" % (BINS_VARIABLE, str(major)), bins[str(major)]
    else:
        source, name = "PATH", "containerd"
    if not name or not isinstance(name, str):
        raise SandboxError("%s is empty" % source)
    try:
        binary = node_commands.find_binary(os.path.expanduser(name))
        if not os.access(binary, os.X_OK):
            raise node_commands.GatherError("%s is not executable" % binary)
        proc = node_commands.start_version(binary)
        version_output, version, got_major, got_minor = node_commands.containerd_version(binary, proc, timeout)
    except node_commands.GatherError as exc:
        raise SandboxError("no containerd %s binary to load the bootstrap with (%s: %s): set %s, e.g. "
                           "{\"1\": \"/opt/containerd-1.7/bin/containerd\", \"2\": \"/opt/containerd-2.1/bin/containerd\"}"
                           % (wanted, source, user_words.in_user_words(str(exc), {"containerd_bin": BINS_VARIABLE}),
                              BINS_VARIABLE))
    if version_output.split()[:1] != ["containerd"]:
        raise SandboxError("%s (%s) is not containerd: its --version says %r" % (source, binary, version_output[:200]))
    if got_major != major or (minor is not None and got_minor != minor):
        raise SandboxError("the node group runs containerd %s, but %s is containerd %s (%s): set %s[%r] to a "
                           "containerd %s binary" % (wanted, source, version, binary, BINS_VARIABLE, wanted, wanted))
    return {"path": binary, "version": version, "major": got_major, "minor": got_minor,
            "version_output": version_output, "source": source}
