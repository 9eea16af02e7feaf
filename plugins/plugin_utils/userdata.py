# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files a node bootstrap (user-data) writes, read offline on the controller.

Understands what launch templates of managed node groups carry: MIME multipart user-data,
#cloud-config ``write_files`` (plain, base64, gzip), and shell scripts that write files with
heredocs (``cat > PATH <<'EOF'``, ``cat <<EOF > PATH``, ``tee [-a] PATH <<EOF``). Commands that
generate or edit a file (``containerd config default > ...``, ``sed -i``) are not run: they
are reported, so nobody mistakes the validation for a boot.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import email
import gzip
import re

_HEREDOC = re.compile(
    r"^[ \t]*(?P<cmd>[^\n]*?)<<(?P<dash>-?)[ \t]*(?P<q>['\"]?)(?P<tag>[A-Za-z_][A-Za-z0-9_]*)(?P=q)(?P<rest>[^\n]*)\n",
    re.MULTILINE)
_REDIRECT = re.compile(r"(?P<op>>>?)[ \t]*(?P<path>/[^\s;|&]+)")
_TEE = re.compile(r"\btee\b(?P<flags>(?:[ \t]+-[a-zA-Z]+)*)[ \t]+(?P<path>/[^\s;|&>]+)")
_GENERATED = re.compile(r"^[^\n#]*(?:containerd[ \t]+config[ \t]+default|sed[ \t]+-i|nvidia-ctk[ \t]+runtime)[^\n]*$",
                        re.MULTILINE)


class UserDataError(ValueError):
    pass


def _b64(data):
    # Folded YAML puts newlines in base64; anything else outside the alphabet is an error.
    return base64.b64decode(b"".join(data.split()), validate=True)


def _decode(content, encoding, path):
    encoding = (encoding or "").lower()
    try:
        data = content.encode("utf-8") if isinstance(content, str) else content
        if encoding in ("b64", "base64"):
            data = _b64(data)
        elif encoding in ("gz+b64", "gzip+base64", "gz+base64", "gzip+b64"):
            data = gzip.decompress(_b64(data))
        elif encoding in ("gz", "gzip"):
            data = gzip.decompress(data)
        elif encoding not in ("", "text/plain"):
            raise UserDataError("write_files entry %s: unknown encoding %r" % (path, encoding))
        return data.decode("utf-8")
    except (ValueError, OSError, EOFError) as exc:
        if isinstance(exc, UserDataError):
            raise
        raise UserDataError("write_files entry %s: cannot decode (%s): %s" % (path, encoding, exc))


def _cloud_config(text, files, notes):
    import yaml  # controller only: ansible-core ships PyYAML
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise UserDataError("#cloud-config is not valid YAML: %s" % exc)
    if not isinstance(doc, dict):
        raise UserDataError("#cloud-config must be a mapping")
    for index, entry in enumerate(doc.get("write_files") or []):
        if not isinstance(entry, dict) or not entry.get("path"):
            raise UserDataError("write_files entry #%d has no path" % (index + 1))
        content = _decode(entry.get("content", ""), entry.get("encoding"), entry["path"])
        _add(files, entry["path"], content, bool(entry.get("append")), "cloud-config write_files")
    for command in doc.get("runcmd") or []:
        line = command if isinstance(command, str) else " ".join(str(c) for c in command)
        if _GENERATED.search(line):
            notes.append("runcmd not run: %s" % line.strip())


def _shell(text, files, notes):
    position = 0
    while True:
        match = _HEREDOC.search(text, position)
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
        command = match.group("cmd") + " " + match.group("rest")
        target = _TEE.search(command)
        append = False
        if target:
            append = "a" in (target.group("flags") or "")
        else:
            target = _REDIRECT.search(command)
            append = bool(target) and target.group("op") == ">>"
        if target:
            if not match.group("q") and "$" in body:
                notes.append("%s: heredoc is unquoted and contains '$'; shell expansion is not applied here"
                             % target.group("path"))
            _add(files, target.group("path"), body, append, "shell heredoc")
        position = close.end()
    for line in _GENERATED.findall(text):
        notes.append("command not run: %s" % line.strip())


def _add(files, path, content, append, origin):
    if append and path in files:
        files[path]["content"] += content
    else:
        files[path] = {"path": path, "content": content, "origin": origin}


def _part(text, files, notes):
    stripped = text.lstrip()
    if stripped.startswith("#cloud-config"):
        _cloud_config(stripped, files, notes)
    elif stripped.startswith("#!") or _HEREDOC.search(stripped):
        _shell(stripped, files, notes)
    else:
        notes.append("a user-data part that is neither #cloud-config nor a shell script was skipped")


def files_written(userdata):
    """({path: {path, content, origin}}, notes) of the files a user-data writes, in order."""
    if isinstance(userdata, bytes):
        try:
            userdata = userdata.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserDataError("user-data is not UTF-8 text (bad byte at offset %d)" % exc.start)
    files = {}
    notes = []
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
            try:
                _part(payload.decode(part.get_content_charset() or "utf-8"), files, notes)
            except UnicodeDecodeError:
                raise UserDataError("a MIME part of the user-data is not text")
    else:
        _part(userdata, files, notes)
    return files, notes
