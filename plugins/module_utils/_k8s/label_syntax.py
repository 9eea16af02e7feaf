# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The apiserver's own syntax of label keys and values (apimachinery's IsQualifiedName and
IsValidLabelValue), which it applies to metadata.labels and to a RuntimeClass's
scheduling.nodeSelector: a map it would refuse is refused here with the same rule, so a manifest
holds only what the apiserver would store.

- key: an optional prefix, a DNS subdomain (lowercase a-z, 0-9, '-', '.'; at most 253 characters),
  and '/', then a name of 1-63 characters: letters, digits, '-', '_' and '.', beginning and ending
  with a letter or digit.
- value: a string of at most 63 characters of the name's characters, or empty.
"""

import re

from ansible_collections.gpurt.runtime_gate.plugins.module_utils._value_types import type_name

NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
# RFC 1123 names, as the apiserver checks object names and RuntimeClass handlers (a handler is a DNS label).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
MAX_NAME = 63
MAX_PREFIX = 253
MAX_VALUE = 63
NAME_RULE = ("1-63 characters of letters, digits, '-', '_' and '.', beginning and ending with a letter "
             "or digit")
VALUE_RULE = ("a string of at most 63 characters of letters, digits, '-', '_' and '.', beginning and "
              "ending with a letter or digit, or empty")


def key_error(key):
    """Why key is not a label key the apiserver accepts, or None."""
    if not isinstance(key, str):
        return "a label key must be a string, got %s" % type_name(key)
    parts = key.split("/")
    if len(parts) > 2:
        return "a label key holds at most one '/' (prefix/name)"
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return "the prefix before '/' is empty"
        if len(prefix) > MAX_PREFIX:
            return "its prefix is %d characters long (at most %d)" % (len(prefix), MAX_PREFIX)
        if not DNS_SUBDOMAIN.match(prefix):
            return ("its prefix '%s' is not a DNS subdomain (lowercase letters, digits, '-' and '.', "
                    "beginning and ending with a letter or digit)" % prefix)
    if not name:
        return "its name is empty (a name is %s)" % NAME_RULE
    if len(name) > MAX_NAME:
        return "its name is %d characters long (a name is %s)" % (len(name), NAME_RULE)
    if not NAME.match(name):
        return "its name '%s' is not a label name (a name is %s)" % (name, NAME_RULE)
    return None


def value_error(value):
    """Why value is not a label value the apiserver accepts, or None. A value of another type is
    never turned into a string here: YAML reads `on`, `010` or `1e3` as something else than the
    text, so only the label on the Nodes can tell what the author meant."""
    if value is None:
        return ("is null, which means two things: the apiserver stores it as \"\" when it creates the object, "
                "and kubectl apply's patch of an existing object removes the key; write \"\" or remove the key")
    if not isinstance(value, str):
        return ("is %s, which the apiserver rejects: a label value is %s; write it in quotes, "
                "as the Nodes' label reads" % (type_name(value), VALUE_RULE))
    if len(value) > MAX_VALUE:
        return "is %d characters long (a label value is %s)" % (len(value), VALUE_RULE)
    if value and not NAME.match(value):
        return "%r is not a label value (a label value is %s)" % (value, VALUE_RULE)
    return None


def map_error(mapping, field):
    """The first reason a label map (metadata.labels, scheduling.nodeSelector) is one the apiserver
    refuses, as one line naming field and key, or None. mapping must be a dict."""
    for key in mapping:
        why = key_error(key)
        if why:
            return "%s key %r is not a label key: %s" % (field, key, why)
    for key, value in mapping.items():
        why = value_error(value)
        if why:
            return "%s[%r] %s" % (field, key, why)
    return None
