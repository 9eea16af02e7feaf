# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""TOML in and out, on the controller.

Reading uses the standard library's tomllib (Python 3.11+), else the ``tomli``
package it was taken from (``requirements.txt`` installs it on Python 3.10, the
oldest controller ansible-core 2.16 runs on). Writing needs no library: containerd
configs use tables, strings, integers, floats, booleans and arrays, which is what
``dumps`` emits.
"""

import datetime
import math
import re

try:
    import tomllib
except ImportError:  # Python 3.10: the same parser, from PyPI
    try:
        import tomli as tomllib
    except ImportError:
        tomllib = None

# What a controller without a TOML reader is told, at play start and wherever TOML is parsed.
MISSING_READER = ("gpurt.runtime_gate needs Python 3.11+ on the controller, or Python 3.10 with the tomli package "
                  "(pip install 'tomli>=1.1', listed in the collection's requirements.txt)")


def reader_name():
    """'tomllib', 'tomli X.Y.Z', or None when neither can be imported."""
    if tomllib is None:
        return None
    if tomllib.__name__ == "tomllib":
        return "tomllib"
    return ("tomli %s" % getattr(tomllib, "__version__", "")).strip()


class TomlError(ValueError):
    """A text that is not TOML, with a message fit for a task result."""


def loads(text, source="config"):
    """Parse TOML text; raise TomlError naming the source and position on bad input."""
    if tomllib is None:
        raise TomlError(MISSING_READER)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TomlError("%s is not UTF-8 text (bad byte at offset %d)" % (source, exc.start))
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TomlError("%s is not valid TOML: %s" % (source, exc))
    except RecursionError:
        raise TomlError("%s is not valid TOML: nested too deeply" % source)


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _string(value):
    out = []
    for char in value:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append("\\u%04x" % ord(char))
        else:
            out.append(char)
    return '"%s"' % "".join(out)


def key(name):
    """A key as TOML spells it: bare when it can be, else a quoted string."""
    return name if _BARE_KEY.fullmatch(name) else _string(name)


def literal(value):
    """A value as a TOML literal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return "[%s]" % ", ".join(literal(item) for item in value)
    if isinstance(value, dict):
        return "{%s}" % ", ".join("%s = %s" % (key(k), literal(v)) for k, v in value.items())
    raise TomlError("cannot write a %s as TOML" % type(value).__name__)


def _is_table_array(value):
    return isinstance(value, list) and value != [] and all(isinstance(item, dict) for item in value)


def _emit(lines, path, table, depth):
    """Write table's keys, then its sub-tables. depth counts the headers written above, so a
    table reached only through header-less parents is not indented for them."""
    scalars = [(k, v) for k, v in table.items() if not isinstance(v, dict) and not _is_table_array(v)]
    tables = [(k, v) for k, v in table.items() if isinstance(v, dict)]
    arrays = [(k, v) for k, v in table.items() if _is_table_array(v)]
    indent = "  " * depth
    for name, value in scalars:
        lines.append("%s%s = %s" % (indent, key(name), literal(value)))
    for name, value in tables:
        sub = path + [name]
        has_scalars = any(not isinstance(v, dict) and not _is_table_array(v) for v in value.values())
        if has_scalars or not value:
            if lines and lines[-1] != "":
                lines.append("")
            lines.append("%s[%s]" % (indent, ".".join(key(k) for k in sub)))
            _emit(lines, sub, value, depth + 1)
        else:
            _emit(lines, sub, value, depth)
    for name, items in arrays:
        sub = path + [name]
        for item in items:
            if lines and lines[-1] != "":
                lines.append("")
            lines.append("%s[[%s]]" % (indent, ".".join(key(k) for k in sub)))
            _emit(lines, sub, item, depth + 1)


def dumps(doc):
    """TOML text for a dict; ``loads(dumps(doc)) == doc`` for what containerd uses."""
    if not isinstance(doc, dict):
        raise TomlError("a TOML document must be a table")
    lines = []
    _emit(lines, [], doc, 0)
    return "\n".join(lines).strip("\n") + "\n"
