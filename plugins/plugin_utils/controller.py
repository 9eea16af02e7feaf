# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the controller needs to run this collection, said once at play start instead of as a
NOT CHECKED reason on every node. No imports beyond the standard library and toml_document, so
this loads on any Python an ansible-core can run on."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import toml_document

# meta/runtime.yml's requires_ansible; ansible-core 2.16 itself runs on Python 3.10+.
MIN_ANSIBLE = (2, 16)
MIN_PYTHON = (3, 10)


def _dotted(version):
    return ".".join(str(part) for part in version)


def _numbers(version_text):
    """(2, 19, 0) of '2.19.0b1': the leading numbers of a version string."""
    numbers = []
    for part in str(version_text).split("."):
        match = re.match(r"\d+", part)
        if not match:
            break
        numbers.append(int(match.group()))
        if match.end() != len(part):
            break
    return tuple(numbers)


def problems(python_version, python_path, ansible_version, toml_reader):
    """Why this controller cannot run the collection ([] when it can).

    python_version: a version tuple; ansible_version: ansible-core's version string;
    toml_reader: the name of the TOML parser found, or None."""
    found = "this controller runs Python %s (%s) with ansible-core %s" % (
        _dotted(python_version[:3]), python_path, ansible_version)
    out = []
    if tuple(python_version[:2]) < MIN_PYTHON:
        out.append("gpurt.runtime_gate needs Python %s+ on the controller (ansible-core %s needs it too); %s"
                   % (_dotted(MIN_PYTHON), _dotted(MIN_ANSIBLE), found))
    if _numbers(ansible_version)[:2] < MIN_ANSIBLE:
        out.append("gpurt.runtime_gate needs ansible-core %s+ (meta/runtime.yml); %s"
                   % (_dotted(MIN_ANSIBLE), found))
    if toml_reader is None and tuple(python_version[:2]) >= MIN_PYTHON:
        out.append("%s; %s, without tomli" % (toml_document.MISSING_READER, found))
    return out


def facts(python_version, python_path, ansible_version):
    """What the check reports about the controller, and its problems."""
    reader = toml_document.reader_name()
    return {
        "python_version": _dotted(python_version[:3]),
        "python": python_path,
        "ansible_version": ansible_version,
        "toml_reader": reader,
        "problems": problems(python_version, python_path, ansible_version, reader),
    }
