# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpurt.runtime_gate developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's checks: pure functions from what a node reported (and the cluster's
RuntimeClasses) to findings, each with node, check id, severity, evidence and a fix.

Every check judges the *loaded* config (the dump); the files on disk only explain
why something is missing from it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import os

from ansible_collections.gpurt.runtime_gate.plugins.module_utils import containerd_config
from ansible_collections.gpurt.runtime_gate.plugins.module_utils import quantity

SEVERITIES = ("error", "warning", "info")
FAIL_ON_CHOICES = SEVERITIES + ("none",)

CHECKS = {
    "missing_handler": "a RuntimeClass handler that can land on the node is not a loaded runtime",
    "default_runtime_not_loaded": "default_runtime_name names no loaded runtime",
    "default_runtime_blast_radius": "default_runtime_name is not runc: every pod of the node uses it",
    "dead_imports_glob": "an imports entry matches no file on the node",
    "orphan_dropin": "a file in a drop-in dir that no imports entry matches",
    "ignored_plugin_section": "a plugin section containerd ignores for the file's config version",
    "file_loaded_drift": "a runtime written in a loaded file but absent from the loaded config",
    "runtime_binary": "a runtime's options.BinaryName does not exist or is not executable",
    "cgroup_driver": "SystemdCgroup disagrees with the kubelet's cgroupDriver",
    "cdi_disabled": "a CDI handler on a node where CDI is not enabled",
    "cdi_stale_spec": "a CDI spec names host paths that no longer exist",
    "overhead_unschedulable": "RuntimeClass overhead makes the pod request exceed node allocatable",
    "node_drift": "nodes of one group load different runtime sets",
    "handlers_not_reported": "the Node object does not report status.runtimeHandlers",
    "config_unreadable": "a config file the node reported could not be read or parsed",
}

_RUNC_TYPES = ("io.containerd.runc.v2", "io.containerd.runc.v1", "io.containerd.runtime.v1.linux")


def finding(node, check, severity, subject, message, fix, evidence=None):
    return {
        "node": node,
        "check": check,
        "severity": severity,
        "subject": subject,
        "message": message,
        "fix": fix,
        "evidence": evidence or {},
    }


def sort_findings(items):
    rank = dict((s, i) for i, s in enumerate(SEVERITIES))
    return sorted(items, key=lambda f: (f["node"], rank[f["severity"]], f["check"], f["subject"], f["message"]))


def reaches(severity, fail_on):
    """Whether a finding of severity fails a run whose threshold is fail_on."""
    if fail_on == "none":
        return False
    return SEVERITIES.index(severity) <= SEVERITIES.index(fail_on)


def validate_skip(skip):
    unknown = sorted(set(skip or []) - set(CHECKS))
    if unknown:
        raise ValueError("unknown check id(s) in skip_checks: %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(CHECKS))))


def closest(name, candidates):
    """The loaded runtime name a typo most likely meant, or None."""
    matches = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def _label_text(value):
    """Label values are strings; YAML inventories turn `true` and `1` into bool and int."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return None if value is None else str(value)


def selector_matches(node_selector, labels):
    """(applies, why) for a RuntimeClass scheduling.nodeSelector against node labels.

    Unknown labels (None) count as a match: a handler that might land on the node
    is checked rather than silently passed.
    """
    if not node_selector:
        return True, "no nodeSelector"
    if labels is None:
        return True, "node labels unknown; assumed the RuntimeClass can land here"
    for key, value in sorted(node_selector.items()):
        have = _label_text(labels.get(key))
        if have != _label_text(value):
            return False, "nodeSelector %s=%s does not match (node has %r)" % (key, value, have)
    return True, "nodeSelector matches"


def applicable_runtimeclasses(runtimeclasses, labels):
    """[(runtimeclass, why)] for RuntimeClasses whose pods can be scheduled on the node."""
    out = []
    for runtimeclass in runtimeclasses:
        applies, why = selector_matches(runtimeclass.get("node_selector"), labels)
        if applies:
            out.append((runtimeclass, why))
    return out


def check_missing_handlers(node, handlers, runtimeclasses, labels, source):
    """missing_handler findings of a node whose loaded (or reported) handler set is known."""
    out = []
    handlers = set(handlers)
    for runtimeclass, why in applicable_runtimeclasses(runtimeclasses, labels):
        handler = runtimeclass["handler"]
        if handler in handlers:
            continue
        guess = closest(handler, handlers - {""})
        hint = "; did you mean '%s'?" % guess if guess else ""
        out.append(finding(
            node, "missing_handler", "error", handler,
            "RuntimeClass %s asks for handler '%s', which %s does not have%s"
            % (runtimeclass["name"], handler, source, hint),
            ("fix the RuntimeClass handler to '%s' or register a runtime named '%s'" % (guess, handler)) if guess
            else "register runtime '%s' in containerd (role gpurt.runtime_gate.containerd_runtime)" % handler,
            {"runtimeclass": runtimeclass["name"], "handler": handler, "loaded_runtimes": sorted(handlers),
             "scheduling": why, "suggestion": guess},
        ))
    return out


def missing_lines(findings):
    """The seed lab's contract: one MISSING=<handler> line per missing handler."""
    return sorted(set("MISSING=%s" % f["subject"] for f in findings if f["check"] == "missing_handler"))


def check_default_runtime(node, loaded):
    out = []
    default = loaded.get("default_runtime_name") or ""
    names = set(loaded.get("runtime_names", []))
    if default and default not in names:
        out.append(finding(
            node, "default_runtime_not_loaded", "error", default,
            "default_runtime_name is '%s' but no runtime of that name is loaded: the CRI plugin "
            "refuses the config at start, and every pod of the node fails" % default,
            "register runtime '%s' next to the others, or set default_runtime_name to a loaded one" % default,
            {"default_runtime_name": default, "loaded_runtimes": sorted(names)},
        ))
    if default not in ("", "runc"):
        out.append(finding(
            node, "default_runtime_blast_radius", "warning", default,
            "default_runtime_name is '%s': every pod on this node, GPU or not, runs through it, so a "
            "broken '%s' stops all pods of the node" % (default, default),
            "keep default_runtime_name = \"runc\" and select '%s' per pod with a RuntimeClass" % default,
            {"default_runtime_name": default},
        ))
    return out


def _dir_of(path):
    return os.path.dirname(path.rstrip("/"))


def check_imports(node, gathered):
    """dead_imports_glob and orphan_dropin, from what the node's file system matched."""
    out = []
    patterns = gathered.get("imports", [])
    files = gathered.get("files", [])
    for entry in patterns:
        if entry["matches"]:
            continue
        nearby = sorted(f["path"] for f in files if _dir_of(f["path"]) == _dir_of(entry["resolved"]) and f["role"] != "main")
        out.append(finding(
            node, "dead_imports_glob", "warning", entry["pattern"],
            "imports entry '%s' in %s matches no file; containerd skips it without a log line"
            % (entry["pattern"], entry["declared_in"]),
            ("make the pattern match the drop-ins, e.g. '%s'" % os.path.join(_dir_of(entry["resolved"]), "*" + os.path.splitext(nearby[0])[1]))
            if nearby else "remove the entry or write the drop-ins it is meant to load",
            {"pattern": entry["pattern"], "resolved": entry["resolved"], "declared_in": entry["declared_in"],
             "files_in_dir": nearby},
        ))
    resolved = [e["resolved"] for e in patterns]
    loaded_names = set(gathered.get("loaded", {}).get("runtime_names", []))
    for entry in files:
        if entry["role"] != "unreferenced":
            continue
        parsed = entry.get("parsed") or {}
        declared = sorted(set(n for names in (parsed.get("runtimes_by_plugin") or {}).values() for n in names))
        lost = [n for n in declared if n not in loaded_names]
        same_dir = [p for p in resolved if _dir_of(p) == _dir_of(entry["path"])]
        if same_dir:
            why = "no imports entry matches it (entries for its dir: %s)" % ", ".join(same_dir)
        elif resolved:
            why = "imports read other dirs only (%s)" % ", ".join(resolved)
        else:
            why = "the config has no imports"
        dir_pattern = os.path.join(_dir_of(entry["path"]), "*" + os.path.splitext(entry["path"])[1])
        fix = ("rename it to match %s" % same_dir[0]) if same_dir else (
            "move it into a dir an imports entry reads, or add '%s' to imports" % dir_pattern)
        out.append(finding(
            node, "orphan_dropin", "error" if lost else "warning", entry["path"],
            "%s is never loaded: %s%s" % (entry["path"], why,
                                          "; runtimes it declares are not loaded: %s" % ", ".join(lost) if lost else ""),
            fix,
            {"file": entry["path"], "imports": resolved, "declares_runtimes": declared, "not_loaded": lost},
        ))
    return out


def _merged_files(gathered):
    return [f for f in gathered.get("files", []) if f["role"] in ("main", "imported")]


def check_file_sections(node, gathered):
    """ignored_plugin_section and file_loaded_drift: runtimes written in a loaded file
    that the loaded config lacks, explained by the file's version and plugin name."""
    out = []
    major = gathered.get("version_major", 2)
    loaded_names = set(gathered.get("loaded", {}).get("runtime_names", []))
    merged = _merged_files(gathered)
    main_version = None
    for entry in merged:
        parsed = entry.get("parsed") or {}
        if parsed.get("error"):
            out.append(finding(
                node, "config_unreadable", "error", entry["path"],
                "%s could not be checked: %s" % (entry["path"], parsed["error"]),
                "fix the file so containerd and this audit can read it",
                {"file": entry["path"], "error": parsed["error"]},
            ))
            continue
        if entry["role"] == "main":
            main_version = parsed.get("version")
    for entry in merged:
        parsed = entry.get("parsed") or {}
        if parsed.get("error") or "version" not in parsed:
            continue
        version = parsed["version"]
        if entry["role"] == "imported" and not parsed.get("version_written") and main_version:
            version = main_version  # measured on 1.7 and 2.1: a drop-in without one takes the root's
        if major < 2 and version >= 3:
            out.append(finding(
                node, "ignored_plugin_section", "error", entry["path"],
                "%s is a version %d file on containerd %s, which reads version 2 only "
                "(1.6 ignores plugins.\"%s\"; 1.7 refuses to start)"
                % (entry["path"], version, gathered.get("version", "1.x"), containerd_config.CRI_PLUGIN_V3),
                "write version = 2 with plugins.\"%s\" for containerd 1.x" % containerd_config.CRI_PLUGIN_V2,
                {"file": entry["path"], "file_version": version, "containerd": gathered.get("version")},
            ))
        for plugin, names in sorted((parsed.get("runtimes_by_plugin") or {}).items()):
            absent = [n for n in names if n not in loaded_names]
            reason = containerd_config.ignored_plugin_reason(major, version, plugin)
            if reason:
                if major < 2 and version >= 3 and not absent:
                    continue  # already reported above; its runtimes load on 1.6 regardless
                out.append(finding(
                    node, "ignored_plugin_section", "error" if absent else "warning",
                    "%s:%s" % (entry["path"], plugin),
                    "%s: %s, so its runtimes %s" % (
                        entry["path"], reason,
                        "are absent from the loaded config: %s" % ", ".join(absent) if absent
                        else "are loaded only because another file also declares them"),
                    "move the runtimes under plugins.\"%s\"" % containerd_config.plugins_read(major, version)[0]
                    if version >= 2 or major < 2 else "set version = 2 (1.x) or 3 (2.x) with the matching plugin name",
                    {"file": entry["path"], "file_version": version, "plugin": plugin, "runtimes": names,
                     "not_loaded": absent, "loader_warnings": gathered.get("dump_warnings", [])[:10]},
                ))
            elif absent:
                out.append(finding(
                    node, "file_loaded_drift", "error", "%s:%s" % (entry["path"], ",".join(absent)),
                    "%s declares runtime(s) %s, absent from the loaded config%s" % (
                        entry["path"], ", ".join(absent),
                        "; containerd 1.x lets each imported file replace a plugin's whole section "
                        "(containerd#5837), so only the last file's runtimes survive" if major < 2 and len(merged) > 1 else ""),
                    "on containerd 1.x put every runtime in one drop-in that carries the whole CRI plugin section"
                    if major < 2 else "compare the file with 'containerd config dump' and fix what overrides it",
                    {"file": entry["path"], "plugin": plugin, "declared": names, "not_loaded": absent,
                     "merged_files": [f["path"] for f in merged]},
                ))
    return out


def check_binaries(node, gathered):
    out = []
    paths = gathered.get("paths", {})
    for name, runtime in sorted(gathered.get("loaded", {}).get("runtimes", {}).items()):
        binary = runtime.get("binary_name")
        if not binary:
            continue
        facts = paths.get(binary)
        if facts is None:
            continue  # the node did not report on it (older gather result)
        if facts.get("executable"):
            continue
        state = "does not exist" if not facts.get("exists") else "is not an executable file"
        out.append(finding(
            node, "runtime_binary", "error", name,
            "runtime '%s' uses BinaryName %s, which %s on the node" % (name, binary, state),
            "install the runtime (e.g. nvidia-container-toolkit) or fix options.BinaryName",
            {"runtime": name, "binary_name": binary, "facts": facts},
        ))
    return out


def kubelet_cgroup_driver(kubelet_config, override=None):
    """(driver, source) from the kubelet config text, parsed with PyYAML on the controller."""
    if override:
        return override, "variable"
    if not kubelet_config or not kubelet_config.get("content"):
        return None, None
    import yaml  # controller only: ansible-core ships PyYAML
    try:
        doc = yaml.safe_load(kubelet_config["content"]) or {}
    except yaml.YAMLError:
        return None, None
    if not isinstance(doc, dict):
        return None, None
    # The kubelet's own default when the field is absent.
    return doc.get("cgroupDriver", "cgroupfs"), kubelet_config["path"]


def check_cgroup_driver(node, gathered, override=None):
    driver, source = kubelet_cgroup_driver(gathered.get("kubelet_config"), override)
    if driver is None:
        return []
    want = driver == "systemd"
    out = []
    for name, runtime in sorted(gathered.get("loaded", {}).get("runtimes", {}).items()):
        if runtime.get("runtime_type") not in _RUNC_TYPES:
            continue
        have = bool(runtime.get("systemd_cgroup"))
        if have == want:
            continue
        out.append(finding(
            node, "cgroup_driver", "error", name,
            "runtime '%s' has SystemdCgroup = %s but the kubelet uses cgroupDriver %s (%s)"
            % (name, str(have).lower(), driver, source),
            "set SystemdCgroup = %s for '%s'" % (str(want).lower(), name),
            {"runtime": name, "systemd_cgroup": have, "kubelet_cgroup_driver": driver, "kubelet_config": source},
        ))
    return out


def _is_cdi_handler(name):
    return "cdi" in name.split("-") or name.endswith("cdi")


def check_cdi(node, gathered, runtimeclasses, labels):
    out = []
    loaded = gathered.get("loaded", {})
    if not loaded.get("enable_cdi"):
        handlers = set(rc["handler"] for rc, _why in applicable_runtimeclasses(runtimeclasses, labels))
        handlers.update(loaded.get("runtime_names", []))
        for name in sorted(h for h in handlers if _is_cdi_handler(h)):
            out.append(finding(
                node, "cdi_disabled", "error", name,
                "'%s' expects CDI device injection but enable_cdi is false in the loaded config" % name,
                "set enable_cdi = true in the CRI plugin section (default in containerd 2.x, not in 1.7)",
                {"handler": name, "enable_cdi": False, "cdi_spec_dirs": loaded.get("cdi_spec_dirs", [])},
            ))
    for spec in gathered.get("cdi_specs", []):
        missing = [p["path"] for p in spec.get("host_paths", []) if not p["exists"]]
        if spec.get("error"):
            out.append(finding(
                node, "cdi_stale_spec", "warning", spec["path"],
                "CDI spec %s could not be read: %s" % (spec["path"], spec["error"]),
                "regenerate it (nvidia-ctk cdi generate) or remove it",
                {"spec": spec["path"], "error": spec["error"]},
            ))
        elif missing:
            out.append(finding(
                node, "cdi_stale_spec", "error", spec["path"],
                "CDI spec %s names %d host path(s) that no longer exist, e.g. %s (driver updated, spec not regenerated?)"
                % (spec["path"], len(missing), missing[0]),
                "regenerate the spec: nvidia-ctk cdi generate --output=%s" % spec["path"],
                {"spec": spec["path"], "missing_host_paths": missing[:20], "missing_count": len(missing)},
            ))
    return out


def check_overhead(node, runtimeclasses, labels, allocatable, pod_requests=None):
    """overhead_unschedulable: pod request + RuntimeClass podFixed against node allocatable."""
    if not allocatable:
        return []
    out = []
    requests = pod_requests or {}
    for runtimeclass, _why in applicable_runtimeclasses(runtimeclasses, labels):
        pod_fixed = ((runtimeclass.get("overhead") or {}).get("podFixed") or {})
        for resource in sorted(pod_fixed):
            if resource not in allocatable:
                continue
            try:
                extra = quantity.parse(pod_fixed[resource])
                request = quantity.parse(requests.get(resource, 0))
                capacity = quantity.parse(allocatable[resource])
                arithmetic = "%s + %s > %s" % (quantity.show(resource, request), quantity.show(resource, extra),
                                               quantity.show(resource, capacity))
            except ValueError as exc:
                out.append(finding(
                    node, "overhead_unschedulable", "warning", "%s:%s" % (runtimeclass["name"], resource),
                    "cannot compare %s of RuntimeClass %s: %s" % (resource, runtimeclass["name"], exc),
                    "fix the quantity", {"runtimeclass": runtimeclass["name"], "resource": resource},
                ))
                continue
            if request + extra <= capacity:
                continue
            out.append(finding(
                node, "overhead_unschedulable", "error", "%s:%s" % (runtimeclass["name"], resource),
                "pods of RuntimeClass %s cannot be scheduled here: %s request + overhead %s "
                "(%s allocatable)" % (runtimeclass["name"], resource, arithmetic, resource),
                "lower overhead.podFixed.%s of RuntimeClass %s or the pod request, or keep the "
                "RuntimeClass off this node with scheduling.nodeSelector" % (resource, runtimeclass["name"]),
                {"runtimeclass": runtimeclass["name"], "resource": resource, "arithmetic": arithmetic,
                 "pod_request": str(requests.get(resource, 0)), "overhead": str(pod_fixed[resource]),
                 "allocatable": str(allocatable[resource])},
            ))
    return out


def check_node(node, gathered, runtimeclasses, labels=None, allocatable=None, options=None):
    """Every per-node check against what containerd_config_info gathered; sorted findings."""
    options = options or {}
    skip = set(options.get("skip_checks") or [])
    loaded = gathered["loaded"]
    found = []
    found += check_missing_handlers(node, loaded.get("runtime_names", []), runtimeclasses, labels,
                                    "the loaded containerd config of %s" % node)
    found += check_default_runtime(node, loaded)
    found += check_imports(node, gathered)
    found += check_file_sections(node, gathered)
    found += check_binaries(node, gathered)
    found += check_cgroup_driver(node, gathered, options.get("kubelet_cgroup_driver"))
    found += check_cdi(node, gathered, runtimeclasses, labels)
    found += check_overhead(node, runtimeclasses, labels, allocatable, options.get("pod_requests"))
    return sort_findings([f for f in found if f["check"] not in skip])


def check_reported_node(node, runtimeclasses, pod_requests=None, skip=None):
    """Cluster-only mode: judge a Node object by its status.runtimeHandlers.

    Returns (checked, findings). A Node that reports no handlers cannot be judged.
    """
    skip = set(skip or [])
    name = node["name"]
    if node.get("runtime_handlers") is None:
        found = [finding(
            name, "handlers_not_reported", "warning", name,
            "Node %s does not report status.runtimeHandlers (Kubernetes 1.30+ with containerd 2.x "
            "report them); its handlers cannot be checked from the cluster" % name,
            "audit it with host access (playbooks/audit.yml) or upgrade kubelet/containerd",
            {"kubelet_version": node.get("kubelet_version"), "container_runtime_version": node.get("container_runtime_version")},
        )]
        return False, [f for f in found if f["check"] not in skip]
    found = check_missing_handlers(name, node["runtime_handlers"], runtimeclasses, node.get("labels") or {},
                                   "Node %s status.runtimeHandlers" % name)
    found += check_overhead(name, runtimeclasses, node.get("labels") or {}, node.get("allocatable"), pod_requests)
    return True, sort_findings([f for f in found if f["check"] not in skip])


def check_drift(groups, runtime_sets):
    """node_drift: within each group, nodes lacking a runtime that another member loads.

    Judged against the union rather than the majority: after a half-failed rollout the
    broken nodes can be the majority, and the node that has the runtime is the right one.
    groups: {group: [node, ...]}; runtime_sets: {node: [runtime names]} for checked nodes.
    """
    out = []
    for group in sorted(groups):
        members = sorted(n for n in groups[group] if n in runtime_sets)
        if len(members) < 2:
            continue
        union = set()
        for member in members:
            union.update(runtime_sets[member])
        for member in members:
            have = set(runtime_sets[member])
            lacks = sorted(union - have)
            if not lacks:
                continue
            loaded_by = dict((name, [m for m in members if name in runtime_sets[m]]) for name in lacks)
            out.append(finding(
                member, "node_drift", "warning", group,
                "lacks runtime(s) %s that other nodes of group %s load (%s)" % (
                    ", ".join(lacks), group,
                    "; ".join("%s on %s" % (name, ", ".join(nodes)) for name, nodes in sorted(loaded_by.items()))),
                "converge the group with the gpurt.runtime_gate.containerd_runtime role",
                {"group": group, "runtimes": sorted(have), "lacks": lacks, "loaded_by": loaded_by},
            ))
    return sort_findings(out)
