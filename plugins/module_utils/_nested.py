# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The value at a key path in nested dicts (a parsed TOML document, a Kubernetes object), for the node
and the controller alike."""


def get_in(doc, *keys, missing=None):
    """doc[keys[0]][keys[1]]...; missing where a key is absent or a step is not a dict (pass a sentinel of
    your own to tell an absent key from a null value)."""
    node = doc
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return missing
        node = node[key]
    return node
