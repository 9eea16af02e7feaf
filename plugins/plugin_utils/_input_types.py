# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Strict types of the playbooks' variables, checked at play start on every host's value.

ansible.builtin.validate_argument_spec converts what it can ('pool=gpu' into a dict, 'a,b' into a
list) and reports success, while the playbook then reads the variable as it is set: a string where
a mapping is read ends in "'str' object has no attribute 'get'" far from the variable. Here a
value must already be of its type; a message names the variable, the host, the expected type and
the value's type. Strings are also checked for what no path, name or label can hold."""

from collections.abc import Mapping

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._value_types import type_name as value_type_name

# What a mapping's values must be, for the variables whose values the checks compare as text.
MAPPING_VALUES = {
    "gpurt_node_labels": ("str",),  # Kubernetes label values are strings; nodeSelector compares strings
    "gpurt_node_allocatable": ("str", "int", "float"),  # quantities: "8", 8, "500m"
    "gpurt_pod_requests": ("str", "int", "float"),
}
# Read by the actions as the host sets them (not through a module option that converts them): a
# string where a mapping is read is an error here, not converted. Elsewhere 'a,b' for a list is what
# the module option converts, as documented for -e name=value.
READ_AS_SET = frozenset(("gpurt_node_labels", "gpurt_node_allocatable", "gpurt_node_name", "gpurt_kubelet_cgroup_driver"))
MAX_STRING = 65536
MAX_PATH = 4096
_SHOWN = 60


def type_name(value):
    """The value's type in the words of a YAML/JSON user; an empty string is named as one."""
    return "an empty string" if isinstance(value, str) and not value else value_type_name(value)


def shown(value):
    text = repr(value) if not isinstance(value, str) else repr(str(value))
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "...(%d characters)" % len(text)


def _is(value, kind):
    if kind in ("str", "path", "raw_str"):
        return isinstance(value, str)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "dict":
        return isinstance(value, Mapping)
    if kind == "list":
        return isinstance(value, (list, tuple))
    return True  # raw and anything unknown: no strict type


EXPECTED = {"str": "a string", "path": "a path (a string)", "int": "an integer", "float": "a number",
            "bool": "a boolean (true or false)", "dict": "a mapping", "list": "a list"}


def _string_problem(value, kind):
    limit = MAX_PATH if kind == "path" else MAX_STRING
    if len(value) > limit:
        return "is %d characters long (at most %d)" % (len(value), limit)
    bad = [c for c in value if (ord(c) < 32 and c != "\t") or ord(c) == 127]
    if bad:
        return "holds a control character (%r)" % bad[0]
    if kind == "path" and not value.strip():
        return "is empty"
    return None


def value_errors(name, value, option, where=""):
    """Messages for one variable's value against its option spec (type, elements)."""
    kind = option.get("type", "str")
    label = "%s%s" % (name, where)
    if value is None:
        return []  # null: unset, the default applies
    if kind in ("bool", "int", "float"):
        return []  # ansible's own conversion ('true', '8') is what the playbooks read back as well
    secret = option.get("no_log")
    converted = isinstance(value, str) or (kind in ("str", "path") and isinstance(value, (int, float)))
    if not _is(value, kind) and (name in READ_AS_SET or not converted):
        hint = ""
        if isinstance(value, str) and kind in ("dict", "list"):
            hint = ("; -e name=value always sets a string: pass JSON, -e '{\"%s\": %s}'"
                    % (name, "{...}" if kind == "dict" else "[...]"))
        return ["%s must be %s, got %s: %s%s" % (label, EXPECTED.get(kind, kind), type_name(value),
                                                 "(not shown)" if secret else shown(value), hint)]
    errors = []
    if isinstance(value, str) and not secret:  # a token's own newline is stripped where it is used
        problem = _string_problem(value, kind)
        if problem:
            errors.append("%s %s: %s" % (label, problem, shown(value)))
    if not _is(value, kind):
        return errors  # a string the module option converts (checked there)
    if kind == "list" and option.get("elements"):
        element = dict(type=option["elements"])
        for index, item in enumerate(value):
            if item is None:
                errors.append("%s[%d] must be %s, got null" % (label, index, EXPECTED.get(option["elements"], option["elements"])))
            else:
                errors.extend(value_errors(name, item, element, "%s[%d]" % (where, index)))
    if kind == "dict":
        allowed = MAPPING_VALUES.get(name)
        for key, item in value.items():
            if not isinstance(key, str):
                errors.append("%s: key %s must be a string, got %s" % (label, shown(key), type_name(key)))
            if allowed and not any(_is(item, k) for k in allowed):
                errors.append("%s[%s] must be %s, got %s: %s" % (
                    label, shown(key), " or ".join(EXPECTED[k] for k in allowed), type_name(item), shown(item)))
            elif allowed and isinstance(item, str):
                problem = _string_problem(item, "str")
                if problem:
                    errors.append("%s[%s] %s" % (label, shown(key), problem))
    return errors


def type_errors(spec, values, host=None):
    """Messages for every variable in values (name -> value, as the host sees it) that spec
    (validate_argument_spec's options) declares."""
    where = " (host %s)" % host if host else ""
    errors = []
    for name in sorted(values):
        if name in spec:
            errors.extend(message + where for message in value_errors(name, values[name], spec[name]))
    return errors
