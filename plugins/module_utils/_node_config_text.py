# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the node reads straight from a containerd config's text: a node may have no TOML
parser (Python 3.8, stdlib only), so these read the few top-level values it must act on.
The parsed shapes are judged on the controller: plugin_utils/_config_shapes.
"""

import re

_STRING = r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\''
_STRING_RE = re.compile(_STRING)
_TABLE_HEADER_RE = re.compile(r"^[ \t]*\[", re.MULTILINE)
_BINARY_NAME_RE = re.compile(r'^[ \t]*BinaryName[ \t]*=[ \t]*(' + _STRING + r')', re.MULTILINE)
_VERSION_RE = re.compile(r"^[ \t]*version[ \t]*=[ \t]*(\d+)", re.MULTILINE)


def _unquote(literal):
    if literal.startswith("'"):
        return literal[1:-1]
    body = literal[1:-1]
    return re.sub(r'\\(["\\/bfnrt])', lambda m: {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}.get(m.group(1), m.group(1)), body)


def _top_level(text):
    """The part of a TOML text before its first table header."""
    match = _TABLE_HEADER_RE.search(text)
    return text[:match.start()] if match else text


def _array_span(text, start):
    """(string literals, end index after ']') of a TOML array whose '[' is at text[start],
    skipping comments; None when the array is not closed."""
    items = []
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "]":
            return items, index + 1
        if char == "#":
            newline = text.find("\n", index)
            index = len(text) if newline < 0 else newline + 1
            continue
        if char in "\"'":
            match = _STRING_RE.match(text, index)
            if not match:
                return None
            items.append(_unquote(match.group(0)))
            index = match.end()
            continue
        index += 1
    return None


_ARRAY_START = r'^[ \t]*%s[ \t]*=[ \t]*\['


def string_array(text, key):
    """The first ``key = [ "...", ... ]`` array of strings in a TOML text, or None."""
    match = re.search(_ARRAY_START % re.escape(key), text, re.MULTILINE)
    if not match:
        return None
    span = _array_span(text, match.end() - 1)
    return span[0] if span else None


def without_top_level_array(text, key):
    """The text with its top-level ``key = [...]`` assignment removed (the rest byte for byte);
    the text unchanged when there is none; None when the array is not closed."""
    top = _top_level(text)
    match = re.search(_ARRAY_START % re.escape(key), top, re.MULTILINE)
    if not match:
        return text
    span = _array_span(text, match.end() - 1)
    if span is None:
        return None
    end = span[1]
    newline = text.find("\n", end)
    rest = text[end:] if newline < 0 else text[end:newline]
    if rest.strip() and not rest.strip().startswith("#"):
        return None  # something follows the array on its line: not a shape to cut safely
    end = len(text) if newline < 0 else newline + 1
    return text[:match.start()] + text[end:]


def top_level_imports(text):
    """The top-level ``imports`` list of a TOML text, read without a TOML parser."""
    return string_array(_top_level(text), "imports") or []


def top_level_version(text):
    match = _VERSION_RE.search(_top_level(text))
    return int(match.group(1)) if match else None


def binary_names(text):
    """Every non-empty ``BinaryName`` value in a TOML text."""
    return sorted(set(v for v in (_unquote(m) for m in _BINARY_NAME_RE.findall(text)) if v))
