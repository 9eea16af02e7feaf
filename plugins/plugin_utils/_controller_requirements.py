# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the controller needs to run this collection, said once at play start instead of as a
NOT CHECKED reason on every node. No imports beyond the standard library and toml_document, so
this loads on any Python an ansible-core can run on."""

import re

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _toml_codec as toml_codec

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
        out.append("%s; %s, without tomli" % (toml_codec.MISSING_READER, found))
    return out


def facts(python_version, python_path, ansible_version):
    """What the check reports about the controller, and its problems."""
    reader = toml_codec.reader_name()
    return {
        "python_version": _dotted(python_version[:3]),
        "python": python_path,
        "ansible_version": ansible_version,
        "toml_reader": reader,
        "problems": problems(python_version, python_path, ansible_version, reader),
    }


# --- packages a playbook will import on the controller ------------------------------------------

# import name -> pip name. PyYAML comes with ansible-core, but an ansible-core installed without its
# dependencies (a distribution package, --no-deps) can lack it.
PIP_NAMES = {"tomlkit": "tomlkit", "kubernetes": "kubernetes", "yaml": "PyYAML"}
# What each playbook imports whatever its variables: remediation edits the main config with tomlkit;
# every playbook reads RuntimeClass manifests or the argument specs with PyYAML.
ALWAYS = {
    "audit": ("yaml",), "cluster_audit": ("yaml", "kubernetes"), "crosscheck": ("yaml",),
    "validate_bootstrap": ("yaml",), "remediate": ("yaml", "tomlkit"),
}
# Variables whose value sends the run to the cluster (the kubernetes client) even with manifests.
_CLUSTER_SWITCHES = ("gpurt_list_nodes", "gpurt_manage_runtimeclasses", "gpurt_drain")
_MANIFEST_SOURCES = ("gpurt_runtimeclasses_src", "runtimeclasses")
PACKAGE_SWITCHES = _CLUSTER_SWITCHES + _MANIFEST_SOURCES


def _truthy(value):
    return str(value).strip().lower() in ("1", "true", "yes", "on", "y", "t")


def needed_packages(playbook, values):
    """The import names a run of `playbook` will need on the controller. values: the run's variables
    that decide it ({name: value} of gpurt_runtimeclasses_src, gpurt_list_nodes, ...; absent when
    unset): without a manifest source, or when asked for Nodes or RuntimeClass writes, the run
    talks to the cluster with the kubernetes client."""
    needed = list(ALWAYS.get(playbook, ()))
    if playbook in ALWAYS and "kubernetes" not in needed:
        from_manifests = any(values.get(name) not in (None, "") for name in _MANIFEST_SOURCES)
        if not from_manifests or any(_truthy(values.get(name)) for name in _CLUSTER_SWITCHES if name in values):
            needed.append("kubernetes")
    return needed


def missing_packages(needed, importable, python_path):
    """One problem naming every needed package `importable(name)` says is absent, with the command
    that installs them into the controller's Python; [] when none is missing."""
    missing = [name for name in needed if not importable(name)]
    if not missing:
        return []
    pip = sorted(set(PIP_NAMES.get(name, name) for name in missing))
    return ["this controller's Python (%s) lacks %s, which this playbook needs; install with: %s -m pip install %s"
            % (python_path, ", ".join(pip), python_path, " ".join(pip))]


# Found without importing it: the kubernetes client's import costs about 0.3 s of CPU in the process that
# makes it, and this check runs in a worker of its own; the task that talks to the cluster imports it and
# reports an install it cannot import with the cause ("the kubernetes Python client is not installed: ...").
FOUND_WITHOUT_IMPORT = ("kubernetes",)


def present(name):
    """Whether the controller has `name`: importable(name), or for FOUND_WITHOUT_IMPORT, whether
    Python finds the package."""
    if name not in FOUND_WITHOUT_IMPORT:
        return importable(name)
    import importlib.util
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def importable(name):
    """Whether `import name` works (a broken install counts as absent)."""
    import importlib
    try:
        importlib.import_module(name)
    except Exception:  # pylint: disable=broad-except  # any failure to import means: not usable
        return False
    return True
