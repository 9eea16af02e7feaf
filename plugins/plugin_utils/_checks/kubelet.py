# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubelet's cgroupDriver as the node's kubelet config says it (the audit's cgroup_driver check
and the remediation's SystemdCgroup read it alike)."""

from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils import _safe_yaml as safe_yaml
from ansible_collections.gpurt.runtime_gate.plugins.plugin_utils._checks.model import NotRun, one_line


def kubelet_cgroup_driver(kubelet_config, override=None):
    """(driver, source); NotRun when neither the variable nor a readable kubelet config says."""
    if override:
        return override, "variable"
    if not kubelet_config:
        raise NotRun("the node reported no kubelet config")
    path = kubelet_config.get("path")
    if kubelet_config.get("content") is None:
        if kubelet_config.get("error"):
            error = kubelet_config["error"]
            raise NotRun("kubelet config not read: %s" % (error if path and path in error else "%s: %s" % (path, error)))
        raise NotRun("no kubelet config at %s (set gpurt_kubelet_config_path or gpurt_kubelet_cgroup_driver)" % path)
    import yaml  # controller only: ansible-core ships PyYAML
    try:
        doc = safe_yaml.safe_load(kubelet_config["content"])
    except yaml.YAMLError as exc:
        raise NotRun("kubelet config %s is not YAML: %s" % (path, one_line(str(exc)).split("\\n")[0]))
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise NotRun("kubelet config %s is not a mapping but %s" % (path, type(doc).__name__))
    driver = doc.get("cgroupDriver", "cgroupfs")  # the kubelet's own default when the field is absent
    if driver not in ("systemd", "cgroupfs"):
        raise NotRun("kubelet config %s has cgroupDriver %r, neither systemd nor cgroupfs" % (path, driver))
    return driver, path
