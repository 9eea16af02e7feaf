# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files a node bootstrap (user-data) writes, read offline on the controller.

Understands what launch templates of managed node groups carry: MIME multipart user-data (and
gzip-compressed user-data), #cloud-config ``write_files`` (plain, base64, gzip), and shell
scripts that write files with heredocs (``cat > PATH <<'EOF'``, ``cat <<EOF > PATH``,
``tee [-a] PATH <<EOF``). Nothing is run.

Everything else that could change what containerd or the kubelet loads is *unevaluated*: an EKS
nodeadm ``NodeConfig`` (nodeadm renders config.toml at boot from its own template), commands
that generate or edit the files (``containerd config default >``, ``sed -i``, ``nvidia-ctk
runtime configure``, ``cp``, ``echo >>``, package installs of containerd), cloud-init Jinja
templates, unexpanded shell variables in a written file, and user-data parts of other kinds. A
bootstrap with unevaluated parts gets no verdict: its result is NOT VALIDATED, with these
reasons. The watched paths are the containerd config directory and the kubelet config.
"""

import base64
import email
import gzip
import io
import re
import shlex

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import _containerd_facts as containerd_facts

# The largest user-data this reads (decompressed): EC2 caps user-data at 16 KiB before gzip,
# Azure custom data at 64 KiB, GCE metadata values at 256 KiB.
MAX_BYTES = 1024 * 1024

_HEREDOC = re.compile(
    r"^[ \t]*(?P<cmd>[^\n]*?)<<(?P<dash>-?)[ \t]*(?P<q>['\"]?)(?P<tag>[A-Za-z_][A-Za-z0-9_]*)(?P=q)(?P<rest>[^\n]*)\n",
    re.MULTILINE)
_REDIRECT = re.compile(r"(?P<op>>>?|>\|)[ \t]*(?P<path>[^\s;|&<>]+)")
_TEE = re.compile(r"\btee\b(?P<flags>(?:[ \t]+-[a-zA-Z]+)*)[ \t]+(?P<path>[^\s;|&<>]+)")
# Shell expansions the sandbox does not apply: $VAR, ${VAR}, $(cmd), `cmd`.
_EXPANSION = re.compile(r"(?<!\\)(?:\$[A-Za-z_{(]|`)")
# Commands that write containerd's config whatever their arguments say.
_GENERATORS = (
    (re.compile(r"\bcontainerd\s+config\s+(?:default|migrate)\b"), "containerd config default/migrate"),
    (re.compile(r"\bnvidia-ctk\s+runtime\s+configure\b"), "nvidia-ctk runtime configure"),
    (re.compile(r"/etc/eks/bootstrap\.sh\b"), "the EKS AL2 bootstrap.sh, which writes /etc/containerd/config.toml"),
    (re.compile(r"\bnodeadm\s+init\b"), "nodeadm init, which renders /etc/containerd/config.toml"),
)
_PACKAGE_MANAGERS = ("apt", "apt-get", "yum", "dnf", "zypper", "apk", "tdnf", "microdnf")
# Commands that may name a watched path without changing what it holds.
_READ_ONLY = ("mkdir", "chmod", "chown", "chgrp", "ls", "stat", "test", "[", "[[", "cat", "echo", "printf",
              "grep", "head", "tail", "diff", "cmp", "sha256sum", "md5sum", "file", "readlink", "realpath",
              "systemctl", "containerd")
# Words before the command proper: wrappers and the shell keywords that open a compound command.
_PREFIX_WORDS = ("sudo", "env", "exec", "command", "nohup", "time", "builtin",
                 "if", "then", "else", "elif", "while", "until", "do", "!", "{", "(")
_TEMPLATE_HEADER = re.compile(r"^##\s*template:\s*jinja\b", re.IGNORECASE)


class UserDataError(ValueError):
    pass


class Result(object):
    """What a user-data writes (files by path, in order) and the reasons it cannot be evaluated
    (empty: everything that shapes containerd's and the kubelet's config was reproduced)."""

    def __init__(self, watched):
        self.files = {}
        self.unevaluated = []
        self.watched = watched

    def add(self, path, content, append, origin):
        if append and path in self.files:
            self.files[path]["content"] += content
        else:
            self.files[path] = {"path": path, "content": content, "origin": origin}

    def cannot(self, reason):
        if reason not in self.unevaluated:
            self.unevaluated.append(reason)

    def is_watched(self, path):
        return any(path == w.rstrip("/") or (w.endswith("/") and path.startswith(w)) for w in self.watched)

    def names_watched(self, text):
        return any(w.rstrip("/") in text for w in self.watched)


def _b64(data):
    # Folded YAML puts newlines in base64; anything else outside the alphabet is an error.
    return base64.b64decode(b"".join(data.split()), validate=True)


def _gunzip(data, what):
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
            out = handle.read(MAX_BYTES + 1)
    except (OSError, EOFError, ValueError) as exc:
        raise UserDataError("%s: cannot decompress gzip: %s" % (what, exc))
    if len(out) > MAX_BYTES:
        raise UserDataError("%s: more than %d bytes once decompressed" % (what, MAX_BYTES))
    return out


def _decode(content, encoding, path):
    encoding = (encoding or "").lower()
    try:
        data = content.encode("utf-8") if isinstance(content, str) else content
        if encoding in ("b64", "base64"):
            data = _b64(data)
        elif encoding in ("gz+b64", "gzip+base64", "gz+base64", "gzip+b64"):
            data = _gunzip(_b64(data), "write_files entry %s" % path)
        elif encoding in ("gz", "gzip"):
            data = _gunzip(data, "write_files entry %s" % path)
        elif encoding not in ("", "text/plain"):
            raise UserDataError("write_files entry %s: unknown encoding %r" % (path, encoding))
        return data.decode("utf-8")
    except (ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, UserDataError):
            raise
        raise UserDataError("write_files entry %s: cannot decode (%s): %s" % (path, encoding, exc))


def _cloud_config(text, result):
    import yaml  # controller only: ansible-core ships PyYAML
    if _TEMPLATE_HEADER.match(text):
        result.cannot("a #cloud-config part is a cloud-init Jinja template (## template: jinja), rendered "
                      "with instance data at boot")
        return
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise UserDataError("#cloud-config is not valid YAML: %s" % exc)
    if not isinstance(doc, dict):
        raise UserDataError("#cloud-config must be a mapping")
    for index, entry in enumerate(doc.get("write_files") or []):
        if not isinstance(entry, dict) or not entry.get("path"):
            raise UserDataError("write_files entry #%d has no path" % (index + 1))
        path = str(entry["path"])
        if entry.get("source"):
            if result.is_watched(path):
                result.cannot("write_files entry %s takes its content from a source URI at boot" % path)
            continue
        content = _decode(entry.get("content", ""), entry.get("encoding"), path)
        result.add(path, content, bool(entry.get("append")), "cloud-config write_files")
    for key in ("bootcmd", "runcmd"):
        for command in doc.get(key) or []:
            if isinstance(command, (list, tuple)):
                line = " ".join(shlex.quote(str(c)) for c in command)
            else:
                line = str(command)
            _shell(line + "\n", result, "%s entry" % key)
    packages = doc.get("packages") or []
    for package in packages if isinstance(packages, list) else []:
        name = package[0] if isinstance(package, (list, tuple)) and package else package
        if isinstance(name, str) and name.startswith("containerd"):
            result.cannot("cloud-config installs the package %s at boot; the config.toml it ships is not "
                          "known here" % name)


def _logical_lines(text):
    """Lines with backslash continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n", " ", text)
    for line in joined.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yield stripped


def _simple_commands(line):
    """A line split at ;, &&, || and | outside quotes (one pass: lines can be long)."""
    parts = []
    current = []
    quote = None
    index = 0
    while index < len(line):
        char = line[index]
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == ";" or char == "|" or line.startswith("&&", index):
            parts.append("".join(current))
            current = []
            if line.startswith(("&&", "||"), index):
                index += 1
            index += 1
            continue
        current.append(char)
        index += 1
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _words(command):
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    while words and ("=" in words[0] and not words[0].startswith("=") and "/" not in words[0].split("=")[0]
                     or words[0] in _PREFIX_WORDS):
        words = words[1:]
    return words


def _command(command, result, where, line=None):
    """Judge one simple command that is not a heredoc this module reproduces; reasons quote
    its whole line. True when it is not evaluated."""
    shown = line or command
    for pattern, what in _GENERATORS:
        if pattern.search(command):
            result.cannot("%s not run: %s (%s)" % (where, shown, what))
            return True
    words = _words(command)
    if not words:
        return False
    name = words[0].rsplit("/", 1)[-1]
    if name in _PACKAGE_MANAGERS and "install" in words and any(w.startswith("containerd") for w in words[1:]):
        result.cannot("%s not run: %s (the config.toml the package ships is not known here)" % (where, shown))
        return True
    for match in _REDIRECT.finditer(command):
        target = match.group("path")
        if result.is_watched(target) or (_EXPANSION.search(target) and _looks_watched(target)):
            result.cannot("%s not run: %s (writes %s)" % (where, shown, target))
            return True
    if not result.names_watched(command):
        return False
    if name in ("cp", "install", "ln", "rsync", "dd", "curl", "wget"):
        destination = [w for w in words[1:] if not w.startswith("-")]
        if name in ("dd", "curl", "wget") or (destination and result.names_watched(destination[-1])):
            result.cannot("%s not run: %s" % (where, shown))
            return True
        return False
    if name in _READ_ONLY:
        return False
    result.cannot("%s not run: %s" % (where, shown))
    return True


def _looks_watched(target):
    return any(word in target for word in ("containerd", "kubelet", ".toml"))


def _shell(text, result, where="command"):
    """Reproduce a script's heredoc writes and judge its other commands, in script order."""
    position = 0
    while True:
        match = _HEREDOC.search(text, position)
        _plain(text[position:match.start() if match else len(text)], result, where)
        if not match:
            break
        tag = match.group("tag")
        body_start = match.end()
        end = re.compile(r"^%s%s[ \t]*$" % (r"\t*" if match.group("dash") else "", re.escape(tag)), re.MULTILINE)
        close = end.search(text, body_start)
        if not close:
            raise UserDataError("heredoc <<%s is never closed" % tag)
        body = text[body_start:close.start()]
        if match.group("dash"):
            body = re.sub(r"(?m)^\t+", "", body)
        command = " ".join((match.group("cmd") + " " + match.group("rest")).split())
        _heredoc(command, body, not match.group("q"), result, where)
        position = close.end()


def _plain(text, result, where):
    for line in _logical_lines(text):
        for command in _simple_commands(line):
            if _command(command, result, where, line):
                break  # one reason per line


def _heredoc(command, body, expands, result, where):
    target = _TEE.search(command)
    append = False
    if target:
        append = "a" in (target.group("flags") or "")
    else:
        target = _REDIRECT.search(command)
        append = bool(target) and target.group("op") == ">>"
    programs = [_words(segment)[:1] for segment in command.split("|")[1:]]
    filters = [p[0].rsplit("/", 1)[-1] for p in programs if p and p[0].rsplit("/", 1)[-1] not in ("tee", "cat")]
    if target and filters:
        result.cannot("%s not run: %s <<heredoc, piped through %s before it is written"
                      % (where, command, ", ".join(filters)))
        return
    if not target:
        # The body goes to a program (an interpreter, kubectl, ...) that is not run here.
        named = [w.rstrip("/") for w in result.watched if w.rstrip("/") in body + command]
        if named:
            result.cannot("%s not run: %s <<heredoc, whose text names %s" % (where, command, ", ".join(named)))
        return
    path = target.group("path")
    if _EXPANSION.search(path):
        if _looks_watched(path) or "[plugins" in body:
            result.cannot("heredoc written to %s: the path has shell expansions, not applied here" % path)
        return
    if expands and _EXPANSION.search(body) and result.is_watched(path):
        result.cannot("%s: the heredoc is unquoted and its text has shell expansions ($VAR, $(...), `...`), "
                      "not applied here" % path)
    result.add(path, body, append, "shell heredoc")


def _node_config(text):
    """True for an EKS nodeadm NodeConfig document (YAML), MIME type or not."""
    return bool(re.search(r"(?m)^kind:\s*['\"]?NodeConfig['\"]?\s*$", text)) and "node.eks.aws/" in text


_NODEADM = ("an EKS nodeadm NodeConfig: nodeadm renders /etc/containerd/config.toml at boot from its own "
            "template (merging spec.containerd.config), which is not reproduced here")


def _part(text, content_type, result):
    stripped = text.lstrip()
    content_type = (content_type or "").lower()
    if not stripped:
        return
    if content_type == "application/node.eks.aws" or _node_config(stripped):
        result.cannot(_NODEADM)
    elif ((stripped.startswith("#cloud-config") or content_type == "text/cloud-config")
          and not stripped.startswith("#cloud-config-archive")):
        _cloud_config(stripped, result)
    elif (stripped.startswith("#!") or stripped.startswith("#cloud-boothook")
          or content_type in ("text/x-shellscript", "text/cloud-boothook")):
        _shell(stripped, result)
    elif _TEMPLATE_HEADER.match(stripped):
        result.cannot("a user-data part is a cloud-init Jinja template (## template: jinja), rendered at boot")
    else:
        first = stripped.splitlines()[0][:60]
        result.cannot("a user-data part%s that is neither #cloud-config nor a shell script (it starts %r)"
                      % (" of type %s" % content_type if content_type else "", first))


def _text(data, what):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserDataError("%s is not UTF-8 text (bad byte at offset %d)" % (what, exc.start))


def read(userdata, watched=("/etc/containerd/", containerd_facts.KUBELET_CONFIG_PATH)):
    """A Result for a user-data (bytes or text). watched: path prefixes (ending in /) and paths
    whose changes decide the verdict."""
    result = Result(tuple(watched))
    if isinstance(userdata, bytes):
        if len(userdata) > MAX_BYTES:
            raise UserDataError("user-data is larger than %d bytes" % MAX_BYTES)
        if userdata[:2] == b"\x1f\x8b":
            userdata = _gunzip(userdata, "user-data")
        userdata = _text(userdata, "user-data")
    head = userdata.lstrip()[:512].lower()
    if head.startswith("mime-version:") or head.startswith("content-type: multipart"):
        message = email.message_from_string(userdata.lstrip())
        if not message.is_multipart():
            raise UserDataError("user-data says MIME but has no parts")
        for part in message.walk():
            if part.is_multipart():
                continue
            payload = part.get_payload(decode=True)
            if payload is None:
                continue
            if payload[:2] == b"\x1f\x8b":
                payload = _gunzip(payload, "a MIME part of the user-data")
            try:
                text = payload.decode(part.get_content_charset() or "utf-8")
            except (UnicodeDecodeError, LookupError):
                raise UserDataError("a MIME part of the user-data is not text")
            _part(text, part.get_content_type(), result)
    else:
        _part(userdata, None, result)
    return result
